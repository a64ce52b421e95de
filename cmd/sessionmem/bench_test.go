package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/redact"
	"github.com/sessionmem/sessionmem/storage/local"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/memory"
)

// Benchmarks against the built binary over stdio: what a client sees end to end (JSON-RPC
// encoding, pipes, the server's handler, the store with fsync). Each reports the median
// round trip as median-us next to Go's mean ns/op.

func benchCall(b *testing.B, c *client.Client, name string, args func(i int) obj) {
	b.Helper()
	var durations []time.Duration
	for i := 0; b.Loop(); i++ {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args(i)
		start := time.Now()
		res, err := c.CallTool(context.Background(), req)
		durations = append(durations, time.Since(start))
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", name, err, res)
		}
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds())/1e3, "median-us")
}

// seed fills a store in process (fast) before the server starts.
func seed(b *testing.B, dir string, fn func(ctx context.Context, svc *memory.Service)) {
	b.Helper()
	// As a server leaves a store: listing counts, search index and redaction marker current,
	// so the server under test does not spend its first seconds catching up with the seed
	// (indexing it, re-redacting it) while it is being measured.
	store, err := local.Open(dir, local.Options{Summarize: memory.Summarize, Docs: memory.Docs})
	if err != nil {
		b.Fatal(err)
	}
	fn(context.Background(), memory.New(store, memory.Options{}))
	red, err := redact.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := markRedacted(context.Background(), store, dir, red.Fingerprint()); err != nil {
		b.Fatal(err)
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStdioSave: session_save of one message (durable when answered) into an existing
// session.
func BenchmarkStdioSave(b *testing.B) {
	c := stdioClient(b, b.TempDir())
	var s struct {
		SessionID string `json:"session_id"`
	}
	call(b, c, "session_save", obj{"working_dir": "/bench", "messages": msgs("seed", 1, "hello")}, &s)
	benchCall(b, c, "session_save", func(i int) obj {
		return obj{"session_id": s.SessionID, "messages": []any{
			obj{"id": fmt.Sprintf("m%d", i), "role": "user", "content": "a short user prompt about the build"}}}
	})
}

// BenchmarkStdioList1000: session_list (default page of 20) over a store of 1,000 sessions.
func BenchmarkStdioList1000(b *testing.B) {
	dir := b.TempDir()
	seed(b, dir, func(ctx context.Context, svc *memory.Service) {
		for i := range 1000 {
			if _, err := svc.Save(ctx, memory.SaveRequest{WorkingDir: fmt.Sprintf("/proj/%d", i%10), Name: fmt.Sprintf("session %d", i),
				Messages: []memory.Message{{Role: memory.RoleUser, Content: []memory.Block{{Type: "text", Text: "prompt " + fmt.Sprint(i)}}}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	c := stdioClient(b, dir)
	benchCall(b, c, "session_list", func(int) obj { return obj{} })
}

// BenchmarkStdioResumeCompacted10k: session_resume (default max_tokens 20000) of a session of
// 10,000 messages that was compacted.
func BenchmarkStdioResumeCompacted10k(b *testing.B) {
	dir := b.TempDir()
	var id string
	seed(b, dir, func(ctx context.Context, svc *memory.Service) {
		for batch := range 10 {
			msgs := make([]memory.Message, 0, 1000)
			for i := range 500 {
				n := batch*500 + i
				msgs = append(msgs,
					memory.Message{ID: fmt.Sprintf("u%d", n), Role: memory.RoleUser, Content: []memory.Block{{Type: "text", Text: "question " + strings.Repeat("x", 200)}}},
					memory.Message{ID: fmt.Sprintf("a%d", n), Role: memory.RoleAssistant, Content: []memory.Block{{Type: "text", Text: "answer " + strings.Repeat("y", 400)}}})
			}
			res, err := svc.Save(ctx, memory.SaveRequest{SessionID: id, WorkingDir: "/bench", Messages: msgs})
			if err != nil {
				b.Fatal(err)
			}
			id = res.SessionID
		}
		if _, err := svc.Compact(ctx, memory.CompactRequest{SessionID: id, Summarizer: "extractive"}); err != nil {
			b.Fatal(err)
		}
	})
	c := stdioClient(b, dir)
	benchCall(b, c, "session_resume", func(int) obj { return obj{"session_id": id} })
}
