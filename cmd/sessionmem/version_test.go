package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/internal/buildinfo"
)

// TestVersionCommand: `sessionmem version` and `--version` print the same report.
func TestVersionCommand(t *testing.T) {
	want := buildinfo.Read().String()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		r := runCLI(t, "", args...).must(t)
		if r.stdout != want || !strings.HasPrefix(r.stdout, "sessionmem "+buildinfo.Version()+"\n") {
			t.Fatalf("%v printed %q, want %q", args, r.stdout, want)
		}
	}
	if r := runCLI(t, "", "version", "extra"); r.code != 2 || !strings.Contains(r.stderr, `unexpected argument "extra"`) {
		t.Fatalf("version extra: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestReleaseVersionEverywhere builds the binary as a release build does (the version set
// with -ldflags -X) and checks that the version command, the MCP serverInfo, the startup log
// line and verify all name that version.
func TestReleaseVersionEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	const version = "v9.8.7-test"
	bin := filepath.Join(t.TempDir(), "sessionmem")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/sessionmem/sessionmem/internal/buildinfo.version="+version, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "sessionmem "+version+"\n") || !strings.Contains(string(out), "\ngo:      go") {
		t.Fatalf("--version: %v\n%s", err, out)
	}

	store := t.TempDir()
	cmd := exec.Command(bin, "serve", "--store", store)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("no answer to initialize; stderr:\n%s", stderr.String())
	}
	var resp struct {
		Result struct {
			ServerInfo struct{ Name, Version string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(sc.Bytes(), &resp); err != nil || resp.Result.ServerInfo.Version != version {
		t.Fatalf("serverInfo %+v (%v) in %s, want version %s", resp.Result.ServerInfo, err, sc.Bytes(), version)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), `msg="sessionmem serving"`) || !strings.Contains(stderr.String(), "version="+version) {
		t.Fatalf("the startup log line does not name the version:\n%s", stderr.String())
	}

	out, err = exec.Command(bin, "verify", "--store", store).Output()
	if err != nil || !strings.HasPrefix(string(out), "Verifying with sessionmem "+version+" (") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
}
