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
	for _, w := range parallelWorkloads(body) {
		for _, tr := range parallelTransports() {
			b.Run(w.name+"/"+tr.name, func(b *testing.B) {
				// A fresh store each, so one that grew a session does not slow the next.
				runParallel(b, parallelService(b, body), tr.serve, w.req)
			})
		}
	}
}

// parallelWorkload makes the i-th of the 64 requests one op sends.
type parallelWorkload struct {
	name string
	req  func(i int) string
}

// parallelWorkloads are resumes of 64 sessions, saves into 64 sessions or one, lists, and a
// mix of saves and resumes.
func parallelWorkloads(body string) []parallelWorkload {
	seq := 0
	return []parallelWorkload{
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
}

// parallelTransport serves svc over stdio on in and out until ctx ends.
type parallelTransport struct {
	name  string
	serve func(ctx context.Context, svc *memory.Service, in io.Reader, out io.Writer) error
}

// parallelTransports are mcp-go's stdio server (5 and 16 workers) and ServeStdio.
func parallelTransports() []parallelTransport {
	return []parallelTransport{
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
}

// parallelService is a service on a fresh store of 64 sessions of 40 messages of body.
func parallelService(b *testing.B, body string) *memory.Service {
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

// runParallel measures ops of 64 requests made by req, written at once, and their 64 answers,
// over serve.
func runParallel(b *testing.B, svc *memory.Service, serve func(ctx context.Context, svc *memory.Service, in io.Reader, out io.Writer) error, req func(i int) string) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { serve(ctx, svc, inR, outW); outW.Close(); close(done) }()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 64<<20)
	io.WriteString(inW, initLine(0, false)+"\n")
	sc.Scan()
	b.ResetTimer()
	for b.Loop() {
		var sb strings.Builder
		for i := range 64 {
			sb.WriteString(req(i))
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
