package mcpserver

import (
	"context"
	"io"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
)

// Server is the MCP server New returns, named here so that callers need not import mcp-go.
type Server = server.MCPServer

// StdioOptions configure ServeStdio (transport.StdioOptions; Orders is set by ServeStdio).
type StdioOptions = transport.StdioOptions

// ServeStdio serves s over in and out with its requests kept in order (transport.ServeStdio),
// each tool call ordered as its tool declared (hints.order).
func ServeStdio(ctx context.Context, s *Server, in io.Reader, out io.Writer, o StdioOptions) error {
	o.Orders = toolOrder
	o.Recycle = memory.RecyclePage
	return transport.ServeStdio(ctx, s, in, out, o)
}

// NewHTTP returns the HTTP transports of s (transport.NewHTTP).
func NewHTTP(s *Server, logger *slog.Logger) *transport.HTTP { return transport.NewHTTP(s, logger) }
