package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// The HTTP transport end to end: the real binary serving streamable HTTP and SSE on a
// loopback port, its token and Origin checks, its shutdown, and its refusal to listen
// beyond the loopback without --allow-remote.

// httpServer starts `sessionmem serve --http 127.0.0.1:0` and returns its base URL.
func httpServer(t testing.TB, store string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	return startAnnounced(t, `serving MCP on (http://\S+)/mcp`, env, "serve", "--store", store, "--http", "127.0.0.1:0")
}

// startAnnounced starts the binary with args (its environment plus env, HOME a fresh
// directory), kills it at the test's end if still running, and returns the first submatch
// of pattern in a line it writes to stderr: the address it announces.
func startAnnounced(t testing.TB, pattern string, env []string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(pattern)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-found:
		return u, cmd
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not announce its address", strings.Join(args[:1], " "))
	}
	return "", nil
}

func TestHTTPEndToEnd(t *testing.T) {
	const token = "e2e-token"
	base, cmd := httpServer(t, t.TempDir(), envToken+"="+token)
	auth := map[string]string{"Authorization": "Bearer " + token}

	t.Run("streamable HTTP", func(t *testing.T) {
		c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(auth))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		initClient(t, c)
		exerciseAllTools(t, c)
	})
	t.Run("legacy SSE", func(t *testing.T) {
		c, err := client.NewSSEMCPClient(base+"/sse", transport.WithHeaders(auth))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		initClient(t, c)
		call(t, c, "session_list", obj{}, nil)
	})
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"no token", map[string]string{}, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	t.Run("localhost origin allowed", func(t *testing.T) {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Origin", "http://localhost:5173")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("status = %d, want 200", resp.StatusCode)
		}
	})
	t.Run("graceful shutdown on SIGTERM", func(t *testing.T) {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("exit: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("server did not stop within 15s of SIGTERM")
		}
	})
}

func TestRefusesRemoteBind(t *testing.T) {
	out, err := exec.Command(binary(t), "serve", "--store", t.TempDir(), "--http", "0.0.0.0:0").CombinedOutput()
	if err == nil {
		t.Fatal("server started on 0.0.0.0 without --allow-remote")
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("exit = %v, want code 2", err)
	}
	if !strings.Contains(string(out), "--allow-remote") {
		t.Errorf("message %q does not name the fix", out)
	}
}
