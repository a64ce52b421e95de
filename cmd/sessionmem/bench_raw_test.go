package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/internal/testcorpus"
)

// lineServer is the built binary driven with JSON-RPC lines written by hand: no client library,
// so what it measures is the server and the pipes alone (the mcp-go client adds about 0.2 ms
// to a save of a ~2 KB message: encoding the request from a map, decoding the answer).
type lineServer struct {
	in  io.WriteCloser
	out *bufio.Reader
	cmd *exec.Cmd
}

func startLines(b testing.TB, dir string) *lineServer {
	b.Helper()
	cmd := exec.Command(binary(b), "serve", "--store", dir)
	cmd.Env = append(os.Environ(), "HOME="+b.TempDir())
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &lineServer{in: in, out: bufio.NewReaderSize(out, 1<<20), cmd: cmd}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	s.roundTrip(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return s
}

func (s *lineServer) roundTrip(b testing.TB, line string) string {
	b.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		b.Fatal(err)
	}
	resp, err := s.out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	if gjson.Get(resp, "error").Exists() || gjson.Get(resp, "result.isError").Bool() {
		b.Fatalf("error: %.400s", resp)
	}
	return resp
}

// BenchmarkStdioSaveCorpusRaw is BenchmarkStdioSaveCorpus with the requests
// written by hand: the server's share of a save.
func BenchmarkStdioSaveCorpusRaw(b *testing.B) {
	for _, at := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("at=%d", at), func(b *testing.B) {
			dir := b.TempDir()
			msgs := testcorpus.Sized(b, at+20000, 1024, 4096)
			id := seedCorpus(b, dir, msgs, at)
			s := startLines(b, dir)
			var ds []time.Duration
			i := at
			for b.Loop() {
				m := asArgs(b, msgs[i]).(map[string]any)
				m["id"] = fmt.Sprintf("m%d", i)
				line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
					"params": map[string]any{"name": "session_save", "arguments": map[string]any{"session_id": id, "messages": []any{m}}}})
				i++
				start := time.Now()
				s.roundTrip(b, string(line))
				ds = append(ds, time.Since(start))
			}
			b.ReportMetric(float64(median(ds).Nanoseconds())/1e3, "p50-us")
		})
	}
}
