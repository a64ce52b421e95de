package transport

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// httpSessionIdleTTL ends streamable HTTP sessions left idle this long: without a TTL,
// sessions of clients that never send DELETE leak (mcp-go #723).
const httpSessionIdleTTL = 30 * time.Minute

// HTTP is s served over HTTP: streamable HTTP at /mcp and legacy SSE at /sse + /message, each
// behind WrapHTTP's message checks; SSE's batches are served by sseBatch (batch_http.go).
type HTTP struct {
	http.Handler
	streamable *server.StreamableHTTPServer
	sse        *server.SSEServer
	srv        *server.MCPServer
	log        *slog.Logger
}

// NewHTTP returns the HTTP transports of s, logging to logger. The caller listens, puts its
// own handlers and checks around it, and calls CloseSessions before shutting its server down.
func NewHTTP(s *server.MCPServer, logger *slog.Logger) *HTTP {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	streamable := server.NewStreamableHTTPServer(s,
		server.WithEndpointPath("/mcp"),
		server.WithStateful(true),
		server.WithSessionIdleTTL(httpSessionIdleTTL),
		server.WithStreamableHTTPLogger(logger),
	)
	// No base URL: the message endpoint is sent relative, so it works under any host name
	// the client used (an absolute one would carry 0.0.0.0 with --allow-remote).
	sse := server.NewSSEServer(s,
		server.WithSSEEndpoint("/sse"),
		server.WithMessageEndpoint("/message"),
		server.WithSSEContextFunc(keepProbeContext),
	)
	h := &HTTP{streamable: streamable, sse: sse, srv: s, log: logger}
	mux := http.NewServeMux()
	mux.Handle("/mcp", WrapHTTP(streamable))
	mux.Handle("/sse", WrapHTTP(sse.SSEHandler()))
	mux.Handle("/message", &checked{next: sse.MessageHandler(), batch: h.sseBatch})
	h.Handler = mux
	return h
}

// CloseSessions ends the long-lived GET and SSE streams, which would otherwise hold an
// http.Server's Shutdown until its deadline.
func (h *HTTP) CloseSessions(ctx context.Context) {
	h.streamable.CloseSessions(ctx)
	h.sse.CloseSessions()
}
