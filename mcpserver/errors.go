package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

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
