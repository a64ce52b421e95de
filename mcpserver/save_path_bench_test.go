package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/redact"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// BenchmarkSavePath measures the server's own share of a session_save over stdio, all of it
// but memory.Service.Save (whose answer is made up), for ~2 KB corpus messages sent as
// BenchmarkStdioSaveAB in cmd/sessionmem sends them. Its steps: sequencer (the transport's routing,
// from the line read to the call ready to run), arguments (saveRequest: the call's arguments
// and messages), answer (saveAnswer and encodeMessage); serve is the whole path (sequencer,
// mcp-go's HandleMessage with our middlewares and a logger like that of `sessionmem serve`,
// redacting and text, then arguments, answer and writing it), serve-nolog the same without a
// logger. Run it with
//
//	go test ./mcpserver -run '^$' -bench SavePath -count 10
func BenchmarkSavePath(b *testing.B) {
	msgs := transcripttest.Sized(b, 64, 1024, 4096)
	lines := make([][]byte, len(msgs))
	for i, m := range msgs {
		m.ID = fmt.Sprintf("m%d", i)
		raw, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		// The envelope as json.Marshal of a map writes it (sorted keys), like the A/B
		// benchmark's lines; the message as memory.Message encodes.
		lines[i], err = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
			"params": map[string]any{"name": "session_save", "arguments": map[string]any{"session_id": "s-bench", "messages": []any{json.RawMessage(raw)}}}})
		if err != nil {
			b.Fatal(err)
		}
	}
	store, err := local.Open(b.TempDir(), local.Options{Summarize: memory.Summarize})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	svc := memory.New(store, memory.Options{})
	red, err := redact.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(redact.NewHandler(slog.NewTextHandler(io.Discard, nil), red))
	made := memory.SaveResult{SessionID: "s-bench", Saved: 1, MessageCount: 1001, LeafID: "e-1001", ContextTokens: 123456}

	b.Run("sequencer", func(b *testing.B) {
		c := newBenchConn(b, New(svc, Options{}))
		i := 0
		for b.Loop() {
			c.Release(mustRoute(b, c, lines[i%len(lines)]))
			i++
		}
	})
	b.Run("arguments", func(b *testing.B) {
		c := newBenchConn(b, New(svc, Options{}))
		args := make([][]transport.Field, len(lines))
		for i, l := range lines {
			call := mustRoute(b, c, l)
			args[i] = call.Arguments()
			c.Release(call)
		}
		i := 0
		for b.Loop() {
			r, bad := saveRequest(transport.WithArguments(context.Background(), args[i%len(args)]), mcp.CallToolRequest{})
			i++
			if bad != nil || len(r.Messages) != 1 {
				b.Fatalf("%v", bad)
			}
		}
	})
	b.Run("answer", func(b *testing.B) {
		for b.Loop() {
			resp := mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(float64(1234)), Result: saveAnswer(made, 1)}
			if _, err := transport.EncodeMessage(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, l := range []*slog.Logger{logger, nil} {
		name := "serve"
		if l == nil {
			name = "serve-nolog"
		}
		b.Run(name, func(b *testing.B) {
			s := New(svc, Options{Logger: l})
			tool := s.GetTool("session_save").Tool
			s.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				r, bad := saveRequest(ctx, req)
				if bad != nil {
					return nil, fmt.Errorf("%v", bad.Content)
				}
				return saveAnswer(made, len(r.Messages)), nil
			})
			c := newBenchConn(b, s)
			i := 0
			for b.Loop() {
				call := mustRoute(b, c, lines[i%len(lines)])
				i++
				c.Serve(call)
			}
		})
	}
}

// newBenchConn is a stdio connection to s, initialized, that writes to io.Discard and has no
// reader: Route and Serve are called by the benchmark.
func newBenchConn(b *testing.B, s *server.MCPServer) *transport.BenchConn {
	c, closeConn, err := transport.NewBenchConn(s, io.Discard, StdioOptions{Orders: toolOrder})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(closeConn)
	return c
}

// mustRoute routes line, a tools/call that must be free to run at once.
func mustRoute(b *testing.B, c *transport.BenchConn, line []byte) transport.BenchCall {
	call, ok := c.Route(line)
	if !ok {
		b.Fatal("the call was not run at once")
	}
	return call
}
