package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// signalled returns a context already ended by sig, as main's is once the signal arrives.
func signalled(t *testing.T, sig os.Signal) context.Context {
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(signalCause{sig})
	return ctx
}

func TestCLIInterrupted(t *testing.T) {
	store := seedStore(t)
	cc := copyFixture(t, "claude-code.jsonl", t.TempDir(), "p/11111111-2222-3333-4444-555555555555.jsonl")
	out := filepath.Join(t.TempDir(), "alpha.jsonl")
	tests := []struct {
		name string
		args []string
		sig  os.Signal
		code int
		want string // the report, in stderr
	}{
		{"import", []string{"import", "--claude-code", cc}, os.Interrupt, 130,
			"sessionmem: import interrupted after 0 of 1 files: nothing was stored yet. Run the same command again to continue; what is already imported is skipped.\n"},
		{"import on SIGTERM", []string{"import", "--file", cc}, syscall.SIGTERM, 143, "import interrupted after 0 of 1 files"},
		{"stats", []string{"stats"}, os.Interrupt, 130, "stats interrupted before reading any session; it only reads, so nothing changed."},
		{"verify", []string{"verify"}, os.Interrupt, 130,
			"verify interrupted after 0 of 2 sessions (0 ok, 0 torn, 0 damaged so far); nothing was changed. Run it again to check every session."},
		{"reindex", []string{"reindex"}, os.Interrupt, 130, "reindex interrupted before it indexed any session; the sessions are untouched"},
		{"export to stdout", []string{"export", seedAlpha}, os.Interrupt, 130, "export interrupted: the output is incomplete."},
		{"export to a file", []string{"export", seedAlpha, "-o", out}, os.Interrupt, 130,
			"export interrupted: " + out + " was not written (an export replaces it only once complete)."},
		{"prune", []string{"prune", "--max-sessions", "1", "--yes"}, os.Interrupt, 130, "prune interrupted before deleting anything."},
		{"redact", []string{"redact"}, os.Interrupt, 130, "redact interrupted after checking 0 sessions (0 sessions rewritten, each one whole)."},
		{"compact", []string{"compact", seedAlpha, "--summarizer", "extractive"}, os.Interrupt, 130,
			"compact interrupted: sess-alpha is unchanged (a compaction is stored whole or not at all)."},
		{"a short command", []string{"list"}, os.Interrupt, 130, "list interrupted before it finished; run it again\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLIContext(signalled(t, tt.sig), t, "", append(tt.args, "--store", store)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, want %d\nstderr: %q\nwant in it: %q", r.code, tt.code, r.stderr, tt.want)
			}
			if strings.Contains(r.stderr, "context canceled") {
				t.Fatalf("stderr has the bare cancellation: %q", r.stderr)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an interrupted export left %s (%v)", out, err)
	}
	if got := listJSON(t, store); len(got) != 2 || got[0].Compactions+got[1].Compactions != 0 {
		t.Fatalf("the interrupted commands changed the store: %+v", got)
	}
}

// cancelOnWrite is a stderr that cancels a context once what was written holds mark (a
// prompt), as Ctrl-C typed at that prompt would.
type cancelOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	mark   string
	cancel context.CancelCauseFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.mark) {
		w.cancel(signalCause{os.Interrupt})
	}
	return len(p), nil
}

func (w *cancelOnWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestCLIInterruptedAtPrompt(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"delete", []string{"delete", seedAlpha}},
		{"prune", []string{"prune", "--max-sessions", "1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fakeTerminal(t)
			store := seedStore(t)
			// Nobody answers: stdin stays open and empty, as a terminal whose user types Ctrl-C.
			stdin, w := io.Pipe()
			t.Cleanup(func() { w.Close() })
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			stderr := &cancelOnWrite{mark: "[y/N] ", cancel: cancel}
			var stdout bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- run(ctx, append(tt.args, "--store", store), stdin, &stdout, stderr) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("Ctrl-C at the prompt did not end the command")
			}
			if code := exitCode(err); code != 130 || !strings.Contains(err.Error(), tt.name+" interrupted at the question: nothing was deleted") {
				t.Fatalf("exit %d, error %v\nstderr: %q", code, err, stderr.String())
			}
			if got := listJSON(t, store); len(got) != 2 {
				t.Fatalf("sessions after the interrupted question = %d, want 2", len(got))
			}
		})
	}
}

// TestCLIImportSIGINT sends a real SIGINT to the built binary in the middle of an import of
// many transcripts: it must say how far it got and exit 130, and the same command run again
// must import exactly the rest.
func TestCLIImportSIGINT(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT to send to another process on Windows")
	}
	src := t.TempDir()
	fixture, err := os.ReadFile(filepath.Join("testdata", "claude-code.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const files = 300
	for i := range files {
		id := fmt.Sprintf("%08d-2222-3333-4444-555555555555", i)
		b := bytes.ReplaceAll(fixture, []byte("11111111-2222-3333-4444-555555555555"), []byte(id))
		if err := os.WriteFile(filepath.Join(src, id+".jsonl"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	store := t.TempDir()
	cmd := exec.Command(binary(t), "import", "--claude-code", src, "--store", store)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() { // the first file is imported: the import is under way
		cmd.Wait()
		t.Fatalf("no output from the import; stderr: %s", stderr.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v), want 130; stderr: %s", code, err, stderr.String())
	}
	m := regexp.MustCompile(`^sessionmem: import interrupted after (\d+) of 300 files: [\d,]+ items in (\d+) sessions? \(\d+ new\) were imported, ` +
		`and what is stored is complete\. Run the same command again to continue; what is already imported is skipped\.\n$`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stderr: %q", stderr.String())
	}
	first, _ := strconv.Atoi(m[2])
	r := runCLI(t, "", "import", "--claude-code", src, "--store", store).must(t)
	// The rerun imports the files the first run did not finish; the one it was in when the
	// signal came may have been stored whole before it stopped (then the rerun finds it
	// unchanged).
	rest := regexp.MustCompile(`from (\d+) of 300 files`).FindStringSubmatch(r.stdout)
	if n := atoiOr(rest, 1); n > files-first || n < files-first-1 {
		t.Fatalf("the rerun after %d of %d files imported:\n%s", first, files, r.stdout)
	}
	if got := listJSON(t, store); len(got) != files {
		t.Fatalf("sessions after the rerun = %d, want %d", len(got), files)
	}
}

// atoiOr returns the number in m[i], -1 if there is none.
func atoiOr(m []string, i int) int {
	if len(m) <= i {
		return -1
	}
	n, err := strconv.Atoi(m[i])
	if err != nil {
		return -1
	}
	return n
}

// TestCLIDeclined: any answer but y or yes at the delete and prune questions deletes nothing,
// says so and exits 1, so a script can tell a declined deletion from a done one.
func TestCLIDeclined(t *testing.T) {
	questions := []struct {
		name, want string
		args       []string
	}{
		{"delete", "sessionmem: " + seedAlpha + " not deleted (answer y to delete)\n", []string{"delete", seedAlpha}},
		{"prune", "sessionmem: nothing deleted (answer y to delete)\n", []string{"prune", "--max-sessions", "1"}},
	}
	for _, q := range questions {
		for _, answer := range []string{"n\n", "N\n", "no\n", "\n", "", "nope\n", "y es\n"} {
			t.Run(fmt.Sprintf("%s %q", q.name, answer), func(t *testing.T) {
				fakeTerminal(t)
				store := seedStore(t)
				r := runCLI(t, answer, append(q.args, "--store", store)...)
				if r.code != 1 || !strings.Contains(r.stderr, "? [y/N] ") || !strings.HasSuffix(r.stderr, q.want) {
					t.Fatalf("exit %d, want 1\nstderr: %q\nwant it to end with: %q", r.code, r.stderr, q.want)
				}
				if got := listJSON(t, store); len(got) != 2 {
					t.Fatalf("sessions after declining = %d, want 2", len(got))
				}
			})
		}
	}
	t.Run("yes confirms", func(t *testing.T) {
		fakeTerminal(t)
		store := seedStore(t)
		runCLI(t, " YES \n", "delete", seedAlpha, "--store", store).must(t)
		if got := listJSON(t, store); len(got) != 1 {
			t.Fatalf("sessions after confirming = %d, want 1", len(got))
		}
	})
}
