package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/local"
)

// BenchmarkStdioParallel measures what ordering costs a client that sends calls in parallel:
// one op writes 64 requests without waiting and reads the 64 answers, over mcp-go's own
// stdio server (unordered; its default 5 workers, and 16 like ours) and over ServeStdio.
// The store holds 64 sessions of 40 messages of about 2 KB.
//
//	go test ./mcpserver -run XXX -bench StdioParallel -benchtime 20x -count 5
func BenchmarkStdioParallel(b *testing.B) {
	body := strings.Repeat("The parser reads tokens and builds the tree; ", 45) // ~2 KB
	// Every sub-benchmark gets a fresh store, so one that grew a session does not slow the next.
	newService := func(b *testing.B) *memory.Service {
		store, err := local.Open(b.TempDir(), local.Options{Summarize: memory.Summarize})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { store.Close() })
		svc := memory.New(store, memory.Options{})
		for i := range 64 {
			var items []memory.ImportItem
			for j := range 40 {
				items = append(items, memory.ImportItem{Message: &memory.Message{ID: fmt.Sprintf("m%d", j), Role: memory.RoleUser,
					Content: []memory.Block{{Type: memory.BlockText, Text: body}}}})
			}
			if _, err := svc.Import(context.Background(), memory.ImportRequest{SessionID: fmt.Sprintf("s%d", i), WorkingDir: "/p", Items: items}); err != nil {
				b.Fatal(err)
			}
		}
		return svc
	}
	seq := 0
	workloads := []struct {
		name string
		req  func(i int) string
	}{
		{"resume-64-sessions", func(i int) string {
			return callLine(fmt.Sprintf("r%d", i), "session_resume", map[string]any{"session_id": fmt.Sprintf("s%d", i), "max_tokens": 4000})
		}},
		{"save-64-sessions", func(i int) string {
			seq++
			return callLine(fmt.Sprintf("w%d", i), "session_save", map[string]any{"session_id": fmt.Sprintf("s%d", i),
				"messages": []any{map[string]any{"id": fmt.Sprintf("b%d", seq), "role": "user", "content": body}}})
		}},
		{"save-1-session", func(i int) string {
			seq++
			return callLine(fmt.Sprintf("o%d", i), "session_save", map[string]any{"session_id": "s0",
				"messages": []any{map[string]any{"id": fmt.Sprintf("c%d", seq), "role": "user", "content": body}}})
		}},
		{"list", func(i int) string { return callLine(fmt.Sprintf("l%d", i), "session_list", map[string]any{}) }},
		{"mixed", func(i int) string {
			if i%4 == 0 {
				seq++
				return callLine(fmt.Sprintf("x%d", i), "session_save", map[string]any{"session_id": fmt.Sprintf("s%d", i%8),
					"messages": []any{map[string]any{"id": fmt.Sprintf("d%d", seq), "role": "user", "content": body}}})
			}
			return callLine(fmt.Sprintf("x%d", i), "session_resume", map[string]any{"session_id": fmt.Sprintf("s%d", i%8), "max_tokens": 4000})
		}},
	}
	transports := []struct {
		name  string
		serve func(ctx context.Context, svc *memory.Service, in io.Reader, out io.Writer) error
	}{
		{"mcp-go-5-workers", func(ctx context.Context, svc *memory.Service, in io.Reader, out io.Writer) error {
			return server.NewStdioServer(New(svc, Options{})).Listen(ctx, in, out)
		}},
		{"mcp-go-16-workers", func(ctx context.Context, svc *memory.Service, in io.Reader, out io.Writer) error {
			std := server.NewStdioServer(New(svc, Options{}))
			server.WithWorkerPoolSize(transport.StdioWorkers)(std)
			return std.Listen(ctx, in, out)
		}},
		{"ordered", func(ctx context.Context, svc *memory.Service, in io.Reader, out io.Writer) error {
			return ServeStdio(ctx, New(svc, Options{}), in, out, StdioOptions{})
		}},
	}
	for _, w := range workloads {
		for _, tr := range transports {
			b.Run(w.name+"/"+tr.name, func(b *testing.B) {
				svc := newService(b)
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { tr.serve(ctx, svc, inR, outW); outW.Close(); close(done) }()
				sc := bufio.NewScanner(outR)
				sc.Buffer(nil, 64<<20)
				io.WriteString(inW, initLine(0, false)+"\n")
				sc.Scan()
				b.ResetTimer()
				for b.Loop() {
					var sb strings.Builder
					for i := range 64 {
						sb.WriteString(w.req(i))
						sb.WriteByte('\n')
					}
					go io.WriteString(inW, sb.String())
					for range 64 {
						if !sc.Scan() {
							b.Fatal("server closed")
						}
						if gjson.Get(sc.Text(), "result.isError").Bool() {
							b.Fatalf("error: %.300s", sc.Text())
						}
					}
				}
				b.StopTimer()
				inW.Close()
				cancel()
				go io.Copy(io.Discard, outR)
				<-done
			})
		}
	}
}

// BenchmarkStdioRoundTrip measures the sequencer's own cost per request: one ping (nothing
// to do) or one save at a time, waiting for each answer.
//
//	go test ./mcpserver -run XXX -bench StdioRoundTrip -count 5
func BenchmarkStdioRoundTrip(b *testing.B) {
	for _, req := range []string{"ping", "save"} {
		for _, ordered := range []bool{false, true} {
			name := req + "/mcp-go"
			if ordered {
				name = req + "/ordered"
			}
			b.Run(name, func(b *testing.B) {
				store, err := local.Open(b.TempDir(), local.Options{Summarize: memory.Summarize})
				if err != nil {
					b.Fatal(err)
				}
				defer store.Close()
				svc := memory.New(store, memory.Options{})
				importSessionB(b, svc)
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				done := make(chan struct{})
				go func() {
					if ordered {
						ServeStdio(context.Background(), New(svc, Options{}), inR, outW, StdioOptions{})
					} else {
						std := server.NewStdioServer(New(svc, Options{}))
						server.WithWorkerPoolSize(transport.StdioWorkers)(std)
						std.Listen(context.Background(), inR, outW)
					}
					outW.Close()
					close(done)
				}()
				sc := bufio.NewScanner(outR)
				sc.Buffer(nil, 64<<20)
				io.WriteString(inW, initLine(0, false)+"\n")
				sc.Scan()
				i := 0
				for b.Loop() {
					i++
					line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
					if req == "save" {
						line = callLine(i, "session_save", map[string]any{"session_id": "s0",
							"messages": []any{map[string]any{"id": fmt.Sprintf("b%d", i), "role": "user", "content": "one more"}}})
					}
					io.WriteString(inW, line+"\n")
					if !sc.Scan() {
						b.Fatal("server closed")
					}
				}
				b.StopTimer()
				inW.Close()
				go io.Copy(io.Discard, outR)
				<-done
			})
		}
	}
}

func importSessionB(b *testing.B, svc *memory.Service) {
	b.Helper()
	if _, err := svc.Import(context.Background(), memory.ImportRequest{SessionID: "s0", WorkingDir: "/p",
		Items: []memory.ImportItem{{Message: &memory.Message{ID: "m0", Role: memory.RoleUser, Content: []memory.Block{{Type: memory.BlockText, Text: "x"}}}}}}); err != nil {
		b.Fatal(err)
	}
}
