package transport

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// seenWriter keeps what was written to it, for a check made while writing goes on.
type seenWriter struct {
	mu   sync.Mutex
	seen strings.Builder
	w    io.Writer
}

func (s *seenWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.seen.Write(p)
	s.mu.Unlock()
	return s.w.Write(p)
}

func (s *seenWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen.String()
}

// TestAfterAnswer: over stdio, what a tool leaves to AfterAnswer runs once the client has the
// whole answer but its line's end, in the order left, alone or in a batch; called in Go (no
// transport), it runs at once.
func TestAfterAnswer(t *testing.T) {
	var mu sync.Mutex
	var ran []string // what each function saw written when it ran
	var out *seenWriter
	srv := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("leave"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, name := range []string{"first", "second"} {
			AfterAnswer(ctx, func() {
				mu.Lock()
				defer mu.Unlock()
				seen := ""
				if out != nil {
					seen = out.String()
				}
				ran = append(ran, name+":"+seen)
			})
		}
		return mcp.NewToolResultText("the answer"), nil
	})

	// In Go, without a transport: at once.
	AfterAnswer(context.Background(), func() { ran = append(ran, "direct") })
	if len(ran) != 1 {
		t.Fatalf("without a transport: %q", ran)
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	out = &seenWriter{w: outW}
	done := make(chan error, 1)
	go func() { done <- ServeStdio(context.Background(), srv, inR, out, StdioOptions{}); outW.Close() }()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
			return ""
		}
	}
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	next()
	for _, tc := range []struct{ name, send, answer string }{
		{"alone", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"leave","arguments":{}}}`, `"id":2`},
		{"batch", `[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"leave","arguments":{}}}]`, `"id":3`},
	} {
		mu.Lock()
		ran = nil
		mu.Unlock()
		send(tc.send)
		line := next()
		if !strings.Contains(line, tc.answer) || !strings.Contains(line, "the answer") {
			t.Fatalf("%s: answer %s", tc.name, line)
		}
		mu.Lock()
		got := append([]string(nil), ran...)
		mu.Unlock()
		if len(got) != 2 || !strings.HasPrefix(got[0], "first:") || !strings.HasPrefix(got[1], "second:") {
			t.Fatalf("%s: ran %q", tc.name, got)
		}
		if tc.name == "alone" {
			// The whole answer was written, but not its line's end.
			seen := strings.TrimPrefix(got[0], "first:")
			last := seen[strings.LastIndexByte(seen, '\n')+1:]
			if !strings.Contains(last, tc.answer) || !strings.HasSuffix(last, "}") {
				t.Fatalf("%s: when it ran, the client had %q of the last line", tc.name, last)
			}
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
