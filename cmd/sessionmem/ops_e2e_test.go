package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/ops/opstest"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// These tests run the real binary and probe /healthz, /readyz and /metrics with real HTTP
// requests, as a load balancer and Prometheus would.

// getURL requests url with the headers and returns the status and body.
func getURL(t *testing.T, url string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// httpClient connects an MCP client to the server's streamable HTTP endpoint.
func httpClient(t *testing.T, base, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	initClient(t, c)
	return c
}

// waitStatus polls url until it answers want, for at most d, and returns the last body.
func waitStatus(t *testing.T, url string, want int, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		code, body := getURL(t, url, nil)
		if code == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still answers %d %q after %v, want %d", url, code, body, d, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOpsEndpoints: on a local store, /healthz and /readyz answer without the token,
// /metrics only with it, and the metrics count the calls of both HTTP transports.
func TestOpsEndpoints(t *testing.T) {
	const token = "ops-token"
	base, _ := httpServer(t, t.TempDir(), envToken+"="+token)
	auth := map[string]string{"Authorization": "Bearer " + token}

	for _, p := range []struct{ path, body string }{{"/healthz", "ok\n"}, {"/readyz", "ready\n"}} {
		if code, body := getURL(t, base+p.path, nil); code != http.StatusOK || body != p.body {
			t.Errorf("%s without a token: %d %q", p.path, code, body)
		}
	}
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer nope"}} {
		if code, body := getURL(t, base+"/metrics", h); code != http.StatusUnauthorized || strings.Contains(body, "sessionmem_") {
			t.Errorf("/metrics with %v: %d %.80q", h, code, body)
		}
	}
	if code, _ := getURL(t, base+"/mcp", nil); code != http.StatusUnauthorized {
		t.Errorf("/mcp without the token: %d", code)
	}

	c := httpClient(t, base, token)
	messages := `[{"id":"u1","role":"user","content":"how do we alert on the index lag?"},{"id":"a1","role":"assistant","content":"on behind_records"}]`
	var saved struct {
		SessionID string `json:"session_id"`
	}
	call(t, c, "session_save", obj{"working_dir": "/ops", "messages": json.RawMessage(messages)}, &saved)
	call(t, c, "session_save", obj{"session_id": saved.SessionID, "messages": json.RawMessage(messages)}, nil) // replayed
	for _, bad := range []obj{{"working_dir": "/ops", "messages": "not a list"}, {"session_id": "no-such-session"}} {
		name := "session_save"
		if bad["messages"] == nil {
			name = "session_resume"
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, bad
		if res, err := c.CallTool(t.Context(), req); err != nil || !res.IsError {
			t.Fatalf("%s(%v): %v, %v; want a tool error", name, bad, res, err)
		}
	}
	call(t, c, "session_search", obj{"query": "alert index lag"}, nil)

	// Legacy SSE: every transport counts.
	sse, err := client.NewSSEMCPClient(base+"/sse", transport.WithHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Close()
	if err := sse.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	initClient(t, sse)
	call(t, sse, "session_list", obj{}, nil)

	f := opstest.Scrape(t, base+"/metrics", token)
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sessionmem_tool_calls_total", []string{"tool", "session_save", "outcome", "ok"}, 2},
		{"sessionmem_tool_calls_total", []string{"tool", "session_save", "outcome", "invalid"}, 1},
		{"sessionmem_tool_calls_total", []string{"tool", "session_resume", "outcome", "not_found"}, 1},
		{"sessionmem_tool_calls_total", []string{"tool", "session_search", "outcome", "ok"}, 1},
		{"sessionmem_tool_calls_total", []string{"tool", "session_list", "outcome", "ok"}, 1},
		{"sessionmem_tool_call_duration_seconds", []string{"tool", "session_save"}, 3},
		{"sessionmem_messages_saved_total", nil, 2}, // the replayed save stored nothing
		{"sessionmem_saved_bytes_total", nil, float64(2 * len(messages))},
		{"sessionmem_search_duration_seconds", nil, 1},
		{"sessionmem_store_errors_total", []string{"kind", "unavailable"}, 0},
		{"sessionmem_build_info", []string{"backend", "local"}, 1},
		{"sessionmem_search_index_unavailable", nil, 0},
	}
	for _, ck := range checks {
		if v := f.Value(t, ck.name, ck.labels...); v != ck.want {
			t.Errorf("%s%v = %v, want %v", ck.name, ck.labels, v, ck.want)
		}
	}
	for _, name := range []string{"sessionmem_search_index_queued_records", "sessionmem_search_index_behind_records",
		"sessionmem_search_index_behind_sessions", "sessionmem_search_index_rebuilding", "go_goroutines", "process_resident_memory_bytes"} {
		if !f.Has(name) {
			t.Errorf("no family %s", name)
		}
	}
	if f.Has("sessionmem_pg_pool_total_conns") {
		t.Error("PostgreSQL pool figures on a local store")
	}
}

// TestOpsMetricsAddrStdio: --metrics-addr serves the metrics of a stdio server on loopback,
// without a token; a non-loopback address is refused.
func TestOpsMetricsAddrStdio(t *testing.T) {
	stderr := &syncBuffer{}
	tr := transport.NewStdioWithOptions(binary(t), []string{"HOME=" + t.TempDir()},
		[]string{"serve", "--store", t.TempDir(), "--metrics-addr", "127.0.0.1:0"},
		transport.WithCommandStderrWriter(stderr))
	c := client.NewClient(tr)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initClient(t, c)
	re := regexp.MustCompile(`serving metrics on (http://\S+)/metrics`)
	var base string
	deadline := time.Now().Add(10 * time.Second)
	for base == "" {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no metrics address announced:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	call(t, c, "session_save", obj{"working_dir": "/p", "messages": msgs("s", 1, "stdio")}, nil)
	call(t, c, "session_list", obj{}, nil)
	f := opstest.Scrape(t, base+"/metrics", "")
	if v := f.Value(t, "sessionmem_tool_calls_total", "tool", "session_save", "outcome", "ok"); v != 1 {
		t.Errorf("stdio saves counted %v, want 1", v)
	}
	if v := f.Value(t, "sessionmem_messages_saved_total"); v != 3 {
		t.Errorf("messages saved %v, want 3", v)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _ := getURL(t, base+p, nil); code != http.StatusOK {
			t.Errorf("%s on the metrics address: %d", p, code)
		}
	}

	out, err := exec.Command(binary(t), "serve", "--store", t.TempDir(), "--metrics-addr", "0.0.0.0:9100").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "want a loopback host:port") {
		t.Fatalf("non-loopback --metrics-addr: %v\n%s", err, out)
	}
}

// TestOpsReadyzPostgres: /readyz follows the database: 200 while it answers, 503 (saying
// nothing more) while it is stopped, 200 again once it is back; /healthz stays 200, and the
// metrics count the store errors meanwhile and report the pool.
func TestOpsReadyzPostgres(t *testing.T) {
	cluster := pgtest.Own(t, pgtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, url, err := cluster.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const token = "pg-ops-token"
	base, _ := httpServer(t, url, envToken+"="+token)
	c := httpClient(t, base, token)
	call(t, c, "session_save", obj{"working_dir": "/pg", "messages": msgs("p", 2, "pool")}, nil)
	if body := waitStatus(t, base+"/readyz", http.StatusOK, 10*time.Second); body != "ready\n" {
		t.Fatalf("readyz body %q", body)
	}
	f := opstest.Scrape(t, base+"/metrics", token)
	if v := f.Value(t, "sessionmem_build_info", "backend", "postgres"); v != 1 {
		t.Errorf("build_info %v", v)
	}
	if v := f.Value(t, "sessionmem_pg_pool_total_conns"); v < 1 {
		t.Errorf("pool total_conns %v, want at least 1", v)
	}
	for _, name := range []string{"sessionmem_pg_pool_acquired_conns", "sessionmem_pg_pool_idle_conns", "sessionmem_pg_pool_max_conns",
		"sessionmem_pg_pool_acquires_total", "sessionmem_pg_pool_empty_acquires_total", "sessionmem_pg_pool_acquire_seconds_total",
		"sessionmem_search_index_queued_records", "sessionmem_search_index_behind_records"} {
		if !f.Has(name) {
			t.Errorf("no family %s", name)
		}
	}

	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	body := waitStatus(t, base+"/readyz", http.StatusServiceUnavailable, 10*time.Second)
	t.Logf("/readyz answered 503 %v after the database stopped", time.Since(stopped).Round(time.Millisecond))
	if body != "not ready\n" {
		t.Errorf("503 body %q reveals more than 'not ready'", body)
	}
	if code, _ := getURL(t, base+"/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz %d while the database is down", code)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "session_list", obj{}
	if res, err := c.CallTool(t.Context(), req); err != nil || !res.IsError {
		t.Fatalf("session_list with the database down: %v, %v; want a tool error", res, err)
	}
	f = opstest.Scrape(t, base+"/metrics", token)
	if v := f.Value(t, "sessionmem_store_errors_total", "kind", "unavailable"); v < 1 {
		t.Errorf("store_errors{kind=unavailable} %v while the database is down", v)
	}
	if v := f.Value(t, "sessionmem_tool_calls_total", "tool", "session_list", "outcome", "store_error"); v != 1 {
		t.Errorf("session_list store_error %v, want 1", v)
	}

	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	waitStatus(t, base+"/readyz", http.StatusOK, 30*time.Second)
	t.Logf("/readyz answered 200 %v after the database started", time.Since(started).Round(time.Millisecond))
	call(t, c, "session_list", obj{}, nil)
}
