package ops

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/internal/buildinfo"
	"github.com/sessionmem/sessionmem/mcpserver"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/ops/opstest"
	"github.com/sessionmem/sessionmem/storage"
)

// get requests url and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestMetrics: the families a scrape holds from the start, and what calls add to them.
func TestMetrics(t *testing.T) {
	var lag atomic.Pointer[storage.IndexLag]
	lag.Store(&storage.IndexLag{Queued: 3, Behind: 7, BehindSessions: 2, Rebuilding: true})
	m := NewMetrics(MetricsOptions{Tools: []string{"session_save", "session_search"}, Backend: "local",
		IndexLag: func() storage.IndexLag { return *lag.Load() }})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	f := opstest.Scrape(t, srv.URL, "")
	for _, name := range []string{"sessionmem_tool_calls_total", "sessionmem_tool_call_duration_seconds",
		"sessionmem_messages_saved_total", "sessionmem_saved_bytes_total", "sessionmem_search_duration_seconds",
		"sessionmem_store_errors_total", "sessionmem_build_info", "sessionmem_search_index_queued_records",
		"sessionmem_search_index_behind_records", "sessionmem_search_index_behind_sessions",
		"sessionmem_search_index_rebuilding", "sessionmem_search_index_unavailable", "go_goroutines"} {
		if !f.Has(name) {
			t.Errorf("no family %s before any call", name)
		}
	}
	if f.Has("sessionmem_pg_pool_total_conns") {
		t.Error("pool figures without a pool")
	}
	if v := f.Value(t, "sessionmem_tool_calls_total", "tool", "session_save", "outcome", OutcomeOK); v != 0 {
		t.Fatalf("calls before any call: %v", v)
	}
	if v := f.Value(t, "sessionmem_build_info", "version", buildinfo.Version(), "backend", "local"); v != 1 {
		t.Fatalf("build_info %v", v)
	}
	for name, want := range map[string]float64{"sessionmem_search_index_queued_records": 3, "sessionmem_search_index_behind_records": 7,
		"sessionmem_search_index_behind_sessions": 2, "sessionmem_search_index_rebuilding": 1, "sessionmem_search_index_unavailable": 0} {
		if v := f.Value(t, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}

	m.ToolCall(mcpserver.ToolCall{Tool: "session_save", Elapsed: 2 * time.Millisecond, Saved: 3, SavedBytes: 120})
	m.ToolCall(mcpserver.ToolCall{Tool: "session_save", Elapsed: time.Millisecond, Failed: true, Saved: 9, SavedBytes: 999,
		Err: &memory.Error{Kind: memory.ErrUnavailable, Cause: storage.ErrUnavailable}})
	m.ToolCall(mcpserver.ToolCall{Tool: "session_search", Elapsed: 5 * time.Millisecond, Search: 4 * time.Millisecond})
	m.ToolCall(mcpserver.ToolCall{Tool: "made_up_tool", Failed: true, Err: &memory.Error{Kind: memory.ErrInvalid}})
	lag.Store(&storage.IndexLag{})

	f = opstest.Scrape(t, srv.URL, "")
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sessionmem_tool_calls_total", []string{"tool", "session_save", "outcome", OutcomeOK}, 1},
		{"sessionmem_tool_calls_total", []string{"tool", "session_save", "outcome", OutcomeStoreError}, 1},
		{"sessionmem_tool_calls_total", []string{"tool", "session_search", "outcome", OutcomeOK}, 1},
		{"sessionmem_tool_calls_total", []string{"tool", "other", "outcome", OutcomeInvalid}, 1},
		{"sessionmem_tool_call_duration_seconds", []string{"tool", "session_save"}, 2},
		{"sessionmem_messages_saved_total", nil, 3}, // the failed save's figures are not counted
		{"sessionmem_saved_bytes_total", nil, 120},
		{"sessionmem_search_duration_seconds", nil, 1},
		{"sessionmem_store_errors_total", []string{"kind", StoreUnavailable}, 1},
		{"sessionmem_store_errors_total", []string{"kind", StoreCorrupt}, 0},
		{"sessionmem_search_index_behind_records", nil, 0},
		{"sessionmem_search_index_rebuilding", nil, 0},
	}
	for _, c := range checks {
		if v := f.Value(t, c.name, c.labels...); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if s := f.Sum(t, "sessionmem_search_duration_seconds"); s < 0.0039 || s > 0.0041 {
		t.Errorf("search duration sum %v, want 0.004", s)
	}
	if f.Has("sessionmem_tool_calls_total") && strings.Contains(f.String("sessionmem_tool_calls_total"), "made_up_tool") {
		t.Error("an unknown tool name became a label value")
	}
}

func TestHealthz(t *testing.T) {
	srv := httptest.NewServer(Healthz())
	defer srv.Close()
	if code, body := get(t, srv.URL); code != 200 || body != "ok\n" {
		t.Fatalf("healthz: %d %q", code, body)
	}
}

// TestReadyz: 200 while the checks pass, 503 with a body that says nothing when one fails or
// takes too long, the reason logged once per change.
func TestReadyz(t *testing.T) {
	var mu sync.Mutex
	var failWith error
	var hang chan struct{}
	check := func(ctx context.Context) error {
		mu.Lock()
		err, h := failWith, hang
		mu.Unlock()
		if h != nil {
			<-h
		}
		return err
	}
	var logs strings.Builder
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	srv := httptest.NewServer(Readyz(200*time.Millisecond, logger, func(context.Context) error { return nil }, check))
	defer srv.Close()
	set := func(err error, h chan struct{}) {
		mu.Lock()
		failWith, hang = err, h
		mu.Unlock()
	}

	if code, body := get(t, srv.URL); code != 200 || body != "ready\n" {
		t.Fatalf("ready: %d %q", code, body)
	}
	set(errors.New("secret detail: password=hunter2 at db.internal"), nil)
	for range 3 {
		if code, body := get(t, srv.URL); code != 503 || body != "not ready\n" {
			t.Fatalf("failing check: %d %q", code, body)
		}
	}
	h := make(chan struct{})
	set(nil, h)
	start := time.Now()
	if code, _ := get(t, srv.URL); code != 503 || time.Since(start) > 5*time.Second {
		t.Fatalf("hanging check: %d after %v", code, time.Since(start))
	}
	close(h)
	set(nil, nil)
	deadline := time.Now().Add(5 * time.Second)
	for code, _ := get(t, srv.URL); code != 200; code, _ = get(t, srv.URL) {
		if time.Now().After(deadline) {
			t.Fatal("not ready again after the check passed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	logMu.Lock()
	l := logs.String()
	logMu.Unlock()
	if n := strings.Count(l, "msg=\"not ready\""); n != 1 || !strings.Contains(l, "hunter2") {
		t.Errorf("want one 'not ready' record with the reason (%d):\n%s", n, l)
	}
	if n := strings.Count(l, "msg=ready"); n != 2 {
		t.Errorf("want 'ready' at start and once recovered (%d):\n%s", n, l)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestDirsWritable(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sessions")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := DirsWritable(dir, sub)(t.Context()); err != nil {
		t.Fatalf("writable dirs: %v", err)
	}
	if ents, _ := os.ReadDir(sub); len(ents) != 0 {
		t.Fatalf("the check left %v", ents)
	}
	if err := DirsWritable(dir, filepath.Join(dir, "missing"))(t.Context()); err == nil {
		t.Fatal("a missing directory passed")
	}
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	// A file where the directory should be (root ignores permissions, not this).
	if err := os.WriteFile(sub, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := DirsWritable(dir, sub)(t.Context()); err == nil {
		t.Fatal("a file passed for a directory")
	}
}
