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

	"github.com/sessionmem/sessionmem/internal/testcorpus"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/redact"
	"github.com/sessionmem/sessionmem/storage/local"
)

// BenchmarkSavePath measures the server's own share of a session_save over stdio, all of it
// but memory.Service.Save (whose answer is made up), for ~2 KB corpus messages sent as
// BenchmarkStdioSaveAB in cmd/sessionmem sends them. Its steps: sequencer (stdioConn.handle,
// from the line read to the call ready to run), arguments (saveRequest: the call's arguments
// and messages), answer (saveAnswer and encodeMessage); serve is the whole path (sequencer,
// mcp-go's HandleMessage with our middlewares and a logger like that of `sessionmem serve`,
// redacting and text, then arguments, answer and writing it), serve-nolog the same without a
// logger. Run it with
//
//	go test ./mcpserver -run '^$' -bench SavePath -count 10
func BenchmarkSavePath(b *testing.B) {
	msgs := testcorpus.Sized(b, 64, 1024, 4096)
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
			c.release(c.mustHandle(b, lines[i%len(lines)]))
			i++
		}
	})
	b.Run("arguments", func(b *testing.B) {
		c := newBenchConn(b, New(svc, Options{}))
		args := make([][]argField, len(lines))
		for i, l := range lines {
			p := c.handle(l)
			args[i] = p.args
			c.release(p)
		}
		i := 0
		for b.Loop() {
			r, bad := saveRequest(withSentArguments(context.Background(), args[i%len(args)]), mcp.CallToolRequest{})
			i++
			if bad != nil || len(r.Messages) != 1 {
				b.Fatalf("%v", bad)
			}
		}
	})
	b.Run("answer", func(b *testing.B) {
		for b.Loop() {
			resp := mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(float64(1234)), Result: saveAnswer(made, 1)}
			if _, err := encodeMessage(resp); err != nil {
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
				p := c.mustHandle(b, lines[i%len(lines)])
				i++
				c.send(p)
				<-c.slots
				c.running.Done()
			}
		})
	}
}

// newBenchConn is a stdio connection to s, initialized, that writes to io.Discard and has no
// reader: handle and send are called by the benchmark.
func newBenchConn(b *testing.B, s *server.MCPServer) *stdioConn {
	c := newStdioConn(s, io.Discard, StdioOptions{})
	c.sess.Initialize()
	c.initSeen = true
	if err := s.RegisterSession(context.Background(), c.sess); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.UnregisterSession(context.Background(), c.sess.SessionID()) })
	c.ctx = s.WithContext(context.Background(), c.sess)
	return c
}

// mustHandle routes line, a tools/call that must be free to run at once.
func (c *stdioConn) mustHandle(b *testing.B, line []byte) *pending {
	p := c.handle(line)
	if p == nil {
		b.Fatal("the call was not run at once")
	}
	return p
}

// release ends a call handle returned to run without running it.
func (c *stdioConn) release(p *pending) {
	<-c.slots
	c.running.Done()
	c.finish(p.key)
}
