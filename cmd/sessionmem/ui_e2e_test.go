package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// uiServer starts `sessionmem ui` and returns the link it printed.
func uiServer(t *testing.T, store string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	return startAnnounced(t, `session viewer at (http://\S+)`, env, "ui", "--store", store)
}

func get(t *testing.T, c *http.Client, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestUICommand: `sessionmem ui` serves the viewer over the store on loopback, with the token
// a link sets as a cookie, and stops on SIGINT.
func TestUICommand(t *testing.T) {
	store := t.TempDir()
	runCLI(t, "", "import", "--store", store, "--file", "testdata/claude-code.jsonl").must(t)
	link, cmd := uiServer(t, store, envToken+"=ui-token")
	m := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+)/\?login=[0-9a-f]{32}$`).FindStringSubmatch(link)
	if m == nil || strings.Contains(link, "ui-token") {
		t.Fatalf("link %q", link)
	}
	base := m[1]
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, _ := get(t, noRedirect, base+"/", nil); resp.StatusCode != 401 {
		t.Fatalf("page without the token: %d", resp.StatusCode)
	}
	resp, _ := get(t, noRedirect, link, nil)
	if resp.StatusCode != 303 || len(resp.Cookies()) != 1 {
		t.Fatalf("link: %d %v", resp.StatusCode, resp.Cookies())
	}
	cookie := map[string]string{"Cookie": resp.Cookies()[0].Name + "=" + resp.Cookies()[0].Value}
	if again, _ := get(t, noRedirect, link, nil); again.StatusCode != 401 {
		t.Fatalf("the login link worked twice: %d", again.StatusCode)
	}
	resp, body := get(t, noRedirect, base+"/", cookie)
	if resp.StatusCode != 200 || !strings.Contains(body, `<script src="/assets/ui.js"`) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("page: %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, noRedirect, base+"/api/sessions", cookie)
	var list struct {
		Sessions []struct {
			ID string `json:"session_id"`
		} `json:"sessions"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Sessions) != 1 || !strings.HasPrefix(list.Sessions[0].ID, "cc-") {
		t.Fatalf("sessions: %d %s", resp.StatusCode, body)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ui exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ui did not stop on SIGINT")
	}
}

func TestUICommandRefusesARemoteAddress(t *testing.T) {
	r := runCLI(t, "", "ui", "--store", t.TempDir(), "--addr", "0.0.0.0:0")
	if r.code != 2 || !strings.Contains(r.stderr, "--allow-remote") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

// TestServeHTTPServesTheViewer: serve --http serves the viewer at / beside /mcp; the MCP
// endpoint still wants its bearer token, the viewer its cookie, and a live stream ends when
// the server stops.
func TestServeHTTPServesTheViewer(t *testing.T) {
	store := t.TempDir()
	runCLI(t, "", "import", "--store", store, "--file", "testdata/claude-code.jsonl").must(t)
	base, cmd := httpServer(t, store, envToken+"=v-token")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	bearer := map[string]string{"Authorization": "Bearer v-token"}
	for _, tc := range []struct {
		path string
		hdr  map[string]string
		want int
	}{
		{"/", nil, 401},
		{"/api/sessions", nil, 401},
		{"/api/sessions", bearer, 200},
		{"/assets/style.css", bearer, 200},
		{"/?token=v-token", nil, 303},
		{"/mcp", nil, 401},
		{"/api/sessions", map[string]string{"Authorization": "Bearer v-token", "Origin": "http://evil.example"}, 403},
		{"/", map[string]string{"Authorization": "Bearer v-token", "Host": "evil.example"}, 403},
	} {
		if resp, body := get(t, c, base+tc.path, tc.hdr); resp.StatusCode != tc.want {
			t.Errorf("GET %s %v: %d, want %d (%s)", tc.path, tc.hdr, resp.StatusCode, tc.want, body)
		}
	}
	// An open live stream must not hold the shutdown.
	var list struct {
		Sessions []struct {
			ID string `json:"session_id"`
		} `json:"sessions"`
	}
	_, body := get(t, c, base+"/api/sessions", bearer)
	if json.Unmarshal([]byte(body), &list) != nil || len(list.Sessions) != 1 {
		t.Fatalf("sessions %s", body)
	}
	req, _ := http.NewRequest("GET", base+"/api/sessions/"+list.Sessions[0].ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer v-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", err, resp)
	}
	defer resp.Body.Close()
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exit: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %v with a live stream open", d)
	}
}
