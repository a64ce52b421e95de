package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
)

// recorder is an Observer that keeps every report.
type recorder struct {
	mu    sync.Mutex
	calls []ToolCall
}

func (r *recorder) ToolCall(c ToolCall) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recorder) last(t *testing.T) ToolCall {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		t.Fatal("no call reported")
	}
	return r.calls[len(r.calls)-1]
}

// TestObserver: every tool call is reported once, with what it did: success with what a
// save stored, a bad argument as memory.ErrInvalid, a missing session as memory.ErrNotFound,
// a store failure reaching the store's sentinel, a search's own time, a panic.
func TestObserver(t *testing.T) {
	rec := &recorder{}
	boom := func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Name == "session_fork" {
				panic("boom")
			}
			return next(ctx, req)
		}
	}
	f := newFixture(t, fixtureOpts{index: true, server: Options{Observer: rec, Middleware: []server.ToolHandlerMiddleware{boom}}})
	msgs := `[{"id":"u1","role":"user","content":"observe the metrics"},{"id":"a1","role":"assistant","content":"yes"}]`
	var saved struct {
		SessionID string `json:"session_id"`
	}
	f.ok("session_save", map[string]any{"working_dir": "/p", "messages": json.RawMessage(msgs)}, &saved)
	c := rec.last(t)
	if c.Tool != "session_save" || c.Failed || c.Err != nil || c.Saved != 2 || c.SavedBytes != len(msgs) || c.Elapsed <= 0 {
		t.Fatalf("save reported %+v, want 2 messages of %d bytes", c, len(msgs))
	}
	f.ok("session_save", map[string]any{"session_id": saved.SessionID, "messages": json.RawMessage(msgs)}, nil)
	if c := rec.last(t); c.Failed || c.Saved != 0 || c.SavedBytes != len(msgs) {
		t.Fatalf("replayed save reported %+v, want 0 messages stored", c)
	}

	tests := []struct {
		name string
		tool string
		args map[string]any
		is   error
	}{
		{"bad argument", "session_save", map[string]any{"working_dir": "/p", "messages": "no"}, memory.ErrInvalid},
		{"memory refusal", "session_resume", map[string]any{"session_id": "../x"}, memory.ErrInvalid},
		{"missing session", "session_resume", map[string]any{"session_id": "nope"}, memory.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.at(t).fails(tt.tool, tt.args)
			c := rec.last(t)
			if c.Tool != tt.tool || !c.Failed || !errors.Is(c.Err, tt.is) || c.Saved != 0 || c.SavedBytes != 0 {
				t.Fatalf("reported %+v, want a failure wrapping %v", c, tt.is)
			}
		})
	}

	f.ok("session_search", map[string]any{"query": "metrics"}, nil)
	if c := rec.last(t); c.Tool != "session_search" || c.Failed || c.Search <= 0 || c.Search > c.Elapsed {
		t.Fatalf("search reported %+v, want its search time within its elapsed time", c)
	}

	req := mcp.CallToolRequest{}
	req.Params.Name = "session_fork"
	req.Params.Arguments = map[string]any{"session_id": saved.SessionID}
	if _, err := f.c.CallTool(t.Context(), req); err == nil {
		t.Fatal("a panicking tool answered without an error")
	}
	if c := rec.last(t); c.Tool != "session_fork" || !c.Failed || !c.Panicked {
		t.Fatalf("panic reported %+v", c)
	}

	// A store that fails: its error reaches the observer through memory's *Error.
	f.svc.Store().Close()
	f.fails("session_resume", map[string]any{"session_id": saved.SessionID})
	if c := rec.last(t); !c.Failed || !errors.Is(c.Err, storage.ErrClosed) && !errors.Is(c.Err, storage.ErrUnavailable) {
		t.Fatalf("closed store reported %+v (%v)", c, c.Err)
	}
	rec.mu.Lock()
	n := len(rec.calls)
	rec.mu.Unlock()
	if n != 8 {
		t.Fatalf("%d calls reported, want 8 (one per call)", n)
	}
}

// TestToolNames: ToolNames lists exactly the tools a client sees.
func TestToolNames(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	res, err := f.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tl := range res.Tools {
		listed = append(listed, tl.Name)
	}
	names := ToolNames()
	slices.Sort(listed)
	slices.Sort(names)
	if !slices.Equal(listed, names) {
		t.Fatalf("ToolNames %v, tools/list %v", names, listed)
	}
}
