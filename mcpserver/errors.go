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

// redactErrors passes a failed call's text through the store's redaction: an error message
// quotes the argument it refuses (a session id, a path, a name), and that argument may hold
// a secret. Successful results are built from stored data, which went through the gate.
func redactErrors(svc *memory.Service) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := next(ctx, req)
			if res != nil && res.IsError {
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

func (e *argError) Error() string {
	if e.hint == "" {
		return e.msg
	}
	return e.msg + "; " + e.hint
}
