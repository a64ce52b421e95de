package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
)

// toolError maps any error from a handler to a tool result with isError set, never a JSON-RPC
// error: the model must be able to read what went wrong and what to do. memory's *Error values
// already say both; a condition of the store's environment (a full disk, a store that may not
// be written) is said as plainly; anything else is an internal failure. No text names the
// server's files (over HTTP every client would learn its layout): the details go to the log,
// at warn level for a condition the operator must fix, at error level for a failure.
//
// It also tells the call's observer (observe) what failed.
func toolError(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	if n := noteOf(ctx); n != nil {
		n.err = err
	}
	return mcp.NewToolResultError(sanitize(errorText(ctx, tool, err)))
}

func errorText(ctx context.Context, tool string, err error) string {
	var me *memory.Error
	switch {
	case errors.As(err, &me):
		if me.Cause != nil {
			toolLogger(ctx).Warn("tool call failed", "tool", tool, "err", me.Cause)
		}
		return tool + ": " + me.Error()
	case errors.As(err, new(*argError)):
		return tool + ": " + err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%s: timed out (%s); retry, or for session_compact choose summarizer \"agent\" or \"extractive\"", tool, scrubPaths(err.Error()))
	case errors.Is(err, context.Canceled):
		return fmt.Sprintf("%s: cancelled before it finished; nothing was reported as done, retry if still needed", tool)
	}
	if ce := memory.StoreCondition(err); ce != nil {
		toolLogger(ctx).Warn("tool call failed", "tool", tool, "err", err)
		return tool + ": " + ce.Error()
	}
	toolLogger(ctx).Error("tool call failed: internal error", "tool", tool, "err", err)
	return fmt.Sprintf("%s: internal error: %s; retry, and report it if it persists (the server's log has the details)", tool, scrubPaths(err.Error()))
}

// loggerKey carries the server's logger to tool handlers (withLogger).
type loggerKey struct{}

// withLogger gives tool handlers the logger their errors' details go to.
func withLogger(l *slog.Logger) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return next(context.WithValue(ctx, loggerKey{}, l), req)
		}
	}
}

// toolLogger returns the logger withLogger put in ctx; none discards.
func toolLogger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return discard
}

var discard = slog.New(slog.DiscardHandler)

// scrubPaths replaces each absolute file path in an error's text with "…": a path starts
// with / (or a drive letter and \ or /, or \\) at the start of the text or after white space, a
// quote, a parenthesis, a bracket or =, and ends at white space, a quote, a closing
// parenthesis or bracket, a comma, a semicolon or ": ". URLs (//host after a scheme) and
// relative paths are left alone.
func scrubPaths(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if i > 0 && !strings.ContainsRune(" \t\n\"'(=[<", rune(s[i-1])) {
			continue
		}
		n := pathStart(s[i:])
		if n == 0 {
			continue
		}
		j := i + n
		for j < len(s) && !strings.ContainsRune(" \t\n\"'),;>]", rune(s[j])) && !(s[j] == ':' && (j+1 == len(s) || s[j+1] == ' ')) {
			j++
		}
		b.WriteString(s[last:i])
		b.WriteString("…")
		last, i = j, j-1
	}
	if last == 0 {
		return s
	}
	return b.String() + s[last:]
}

// pathStart returns the length of the root an absolute path at the start of s begins with
// ("/", `C:\`, `\\`), 0 when none does. A lone "/" is no path.
func pathStart(s string) int {
	switch {
	case len(s) >= 2 && s[0] == '/' && s[1] != ' ' && s[1] != '/':
		return 1
	case len(s) >= 3 && s[0] == '\\' && s[1] == '\\':
		return 2
	case len(s) >= 4 && (s[0]|0x20) >= 'a' && (s[0]|0x20) <= 'z' && s[1] == ':' && (s[2] == '\\' || s[2] == '/'):
		return 3
	}
	return 0
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

// refuseInvalidUTF8 answers a call CheckUTF8 marked.
func refuseInvalidUTF8(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if m := req.Params.Meta; m != nil {
			if path, ok := m.AdditionalFields[transport.MetaInvalidUTF8].(string); ok {
				if n := noteOf(ctx); n != nil {
					n.err = &argError{msg: path + " is not valid UTF-8"}
				}
				return mcp.NewToolResultError(sanitize(fmt.Sprintf(
					"%s: %s is not valid UTF-8 text (bytes that are not UTF-8, or a \\u escape of a lone surrogate); "+
						"send every string as UTF-8, e.g. decode tool output as UTF-8 and replace what does not decode; nothing was stored",
					req.Params.Name, path))), nil
			}
		}
		return next(ctx, req)
	}
}
