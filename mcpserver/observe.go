package mcpserver

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/memory"
)

// Observer is told about every tool call when it ends, whichever transport it came from
// (stdio, streamable HTTP, SSE): Options.Observer. It is how an operator's metrics see the
// server; ToolCall runs on the call's goroutine, concurrently with others, and must be quick.
type Observer interface {
	ToolCall(c ToolCall)
}

// ToolCall is what one tool call did.
type ToolCall struct {
	// Tool is the tool's name as called.
	Tool string
	// Elapsed is the time from the tool middleware to the answer (the transport's reading
	// and writing not included).
	Elapsed time.Duration
	// Failed is true when the call answered a tool error, a JSON-RPC error or panicked.
	Failed, Panicked bool
	// InputRequired is true when the call asked the client for input first (a sampling
	// request to a 2026-07-28 client); the client then calls again.
	InputRequired bool
	// Err is the error a failed call reported when it had one: memory's *Error (whose chain
	// reaches the store's error: storage.ErrUnavailable, ErrCorrupt, ErrNewerFormat…), a bad
	// argument (wrapping memory.ErrInvalid), a context error. Nil for a success and for
	// refusals made without one (a server shutting down).
	Err error
	// Saved and SavedBytes describe a session_save that succeeded: the messages it stored
	// (replayed ids not counted) and the bytes of its messages argument (JSON, as received).
	Saved, SavedBytes int
	// Search is the time a session_search spent in the search itself (0 for other tools).
	Search time.Duration
}

// callNote collects what the handlers of one call tell the observer.
type callNote struct {
	err               error
	saved, savedBytes int
	search            time.Duration
}

type callNoteKey struct{}

func noteOf(ctx context.Context) *callNote {
	n, _ := ctx.Value(callNoteKey{}).(*callNote)
	return n
}

// noteSaveBytes records the size of a session_save's messages argument, noteSaved how many
// messages it stored (reported only when the call succeeds).
func noteSaveBytes(ctx context.Context, bytes int) {
	if n := noteOf(ctx); n != nil {
		n.savedBytes = bytes
	}
}

func noteSaved(ctx context.Context, saved int) {
	if n := noteOf(ctx); n != nil {
		n.saved = saved
	}
}

// noteSearch adds the time one search of a session_search took (it searches again with a
// smaller page when a page is too large).
func noteSearch(ctx context.Context, d time.Duration) {
	if n := noteOf(ctx); n != nil {
		n.search += d
	}
}

// observe is the outermost tool middleware (inside mcp-go's panic recovery) when an Observer
// is set: it times every call, refusals at shutdown included, and reports it.
func observe(o Observer) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
			n := &callNote{}
			start := time.Now()
			panicked := true
			// Deferred so that a panic is reported too; it is not recovered here, the
			// recovery middleware outside answers it.
			defer func() {
				c := ToolCall{Tool: req.Params.Name, Elapsed: time.Since(start), Err: n.err, Search: n.search}
				switch {
				case panicked:
					c.Failed, c.Panicked = true, true
				case err != nil:
					c.Failed = true
					if c.Err == nil {
						c.Err = err
					}
				case res == nil || res.IsError:
					c.Failed = true
				case res.NeedsInput():
					c.InputRequired = true
				default:
					c.Saved, c.SavedBytes = n.saved, n.savedBytes
				}
				o.ToolCall(c)
			}()
			res, err = next(context.WithValue(ctx, callNoteKey{}, n), req)
			panicked = false
			return res, err
		}
	}
}

// ToolNames returns the names of the tools New registers, so that an observer can set up
// its series before the first call (and bound a label to them).
func ToolNames() []string {
	ts := tools(memory.New(nil, memory.Options{}), &Options{})
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Tool.Name
	}
	return names
}
