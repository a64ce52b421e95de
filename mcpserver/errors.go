package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/memory"
)

// toolError maps any error from a handler to a tool result with isError set, never a JSON-RPC
// error: the model must be able to read what went wrong and what to do. memory's *Error values
// already say both; anything else is an internal failure.
func toolError(tool string, err error) *mcp.CallToolResult {
	return mcp.NewToolResultError(sanitize(errorText(tool, err)))
}

func errorText(tool string, err error) string {
	var me *memory.Error
	switch {
	case errors.As(err, &me):
		return tool + ": " + me.Error()
	case errors.As(err, new(*argError)):
		return tool + ": " + err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%s: timed out (%v); retry, or for session_compact choose summarizer \"agent\" or \"extractive\"", tool, err)
	case errors.Is(err, context.Canceled):
		return fmt.Sprintf("%s: cancelled before it finished; nothing was reported as done, retry if still needed", tool)
	default:
		return fmt.Sprintf("%s: internal error: %v; retry, and report it if it persists", tool, err)
	}
}

// redactResults passes the text of every result through the store's redaction: an error
// quotes the argument it refuses (a session id, a path, a name) and a summary line may quote
// the query, and those may hold a secret. Structured content is built from stored data,
// which went through the gate, and from ids.
func redactResults(svc *memory.Service) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := next(ctx, req)
			if res != nil {
				for i, c := range res.Content {
					if t, ok := c.(mcp.TextContent); ok {
						t.Text = svc.RedactText(t.Text)
						res.Content[i] = t
					}
				}
			}
			if err != nil {
				err = errors.New(svc.RedactText(err.Error()))
			}
			return res, err
		}
	}
}

// argError is a bad tool argument found before memory is called.
type argError struct {
	msg, hint string
}

// Unwrap makes a bad argument a memory.ErrInvalid, like memory's own refusals.
func (e *argError) Unwrap() error { return memory.ErrInvalid }

func (e *argError) Error() string {
	if e.hint == "" {
		return e.msg
	}
	return e.msg + "; " + e.hint
}
