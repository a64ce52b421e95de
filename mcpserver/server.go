package mcpserver

import (
	"context"
	_ "embed"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
)

// Name is the server name announced to clients.
const Name = "sessionmem"

//go:embed instructions.md
var instructions string

// Defaults for Options.
const (
	DefaultSamplingTimeout = 2 * time.Minute
	DefaultMaxResultTokens = 20000
)

// Options configure the MCP server. The zero value is usable.
type Options struct {
	// Version is announced to clients ("dev" when empty).
	Version string
	// Logger receives one record per request and tool call (mcp-go's WithLogger), and the
	// details of failed calls that tool errors leave out (server paths, the store's own
	// errors); nil logs nothing.
	Logger *slog.Logger
	// SamplingTimeout bounds one MCP sampling request to a legacy client (default 2 minutes).
	SamplingTimeout time.Duration
	// MaxResultTokens caps the estimated size of session_list, session_search and
	// session_compact results (default 20000; session_resume has its own max_tokens).
	MaxResultTokens int
	// Middleware wraps every tool handler (outermost first), e.g. to track running calls for
	// a graceful shutdown.
	Middleware []server.ToolHandlerMiddleware
	// Gate, when set, is asked before every tool call starts (inside Observer, outside
	// Middleware): an error refuses the call with that text as its tool error; otherwise the
	// call runs under the context it returns, and done is called when it ends. What a
	// graceful shutdown needs: refuse new calls, wait for running ones.
	Gate func(ctx context.Context, tool string) (run context.Context, done func(), err error)
	// Observer, when set, is told about every tool call (observe.go), outside Middleware.
	Observer Observer
}

func (o Options) withDefaults() Options {
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.SamplingTimeout <= 0 {
		o.SamplingTimeout = DefaultSamplingTimeout
	}
	if o.MaxResultTokens <= 0 {
		o.MaxResultTokens = DefaultMaxResultTokens
	}
	return o
}

// New returns an MCP server exposing svc: the seven session tools, the compaction prompt
// templates, the session resources and the session viewer as an MCP App (app.go). One server may serve stdio and HTTP at the same time.
func New(svc *memory.Service, opts Options) *server.MCPServer {
	o := opts.withDefaults()
	serverOpts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithPromptCapabilities(false),
		server.WithInstructions(instructions),
		server.WithRecovery(),
	}
	if o.Observer != nil {
		serverOpts = append(serverOpts, server.WithToolHandlerMiddleware(observe(o.Observer)))
	}
	if o.Gate != nil {
		serverOpts = append(serverOpts, server.WithToolHandlerMiddleware(gate(o.Gate)))
	}
	for _, m := range o.Middleware {
		serverOpts = append(serverOpts, server.WithToolHandlerMiddleware(m))
	}
	serverOpts = append(serverOpts, server.WithToolHandlerMiddleware(transport.NotificationFlush),
		server.WithToolHandlerMiddleware(redactResults(svc)), server.WithToolHandlerMiddleware(refuseInvalidUTF8))
	if o.Logger != nil {
		serverOpts = append(serverOpts, server.WithLogger(o.Logger), server.WithToolHandlerMiddleware(withLogger(o.Logger)))
	}
	s := server.NewMCPServer(Name, o.Version, serverOpts...)
	s.AddTools(tools(svc, &o)...)
	addPrompts(s, svc)
	addResources(s, svc, o.Logger)
	addApp(s)
	return s
}

// gate makes Options.Gate a middleware.
func gate(g func(context.Context, string) (context.Context, func(), error)) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			run, done, err := g(ctx, req.Params.Name)
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			defer done()
			return next(run, req)
		}
	}
}
