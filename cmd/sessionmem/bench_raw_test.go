package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/tidwall/gjson"
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
	return startLinesWith(b, binary(b), dir)
}

// startLinesWith is startLines with the binary given.
func startLinesWith(b testing.TB, bin, dir string) *lineServer {
	b.Helper()
	cmd := exec.Command(bin, "serve", "--store", dir)
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
	benchCorpusSaves(b, func(b *testing.B, dir string) func(i int, id string, m map[string]any) func() {
		s := startLines(b, dir)
		return func(i int, id string, m map[string]any) func() {
			line := saveLine(i, id, m)
			return func() { s.roundTrip(b, line) }
		}
	})
}

// saveLine is the request line of a session_save (request id i) of message m into session id.
func saveLine(i int, id string, m map[string]any) string {
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
		"params": map[string]any{"name": "session_save", "arguments": map[string]any{"session_id": id, "messages": []any{m}}}})
	return string(line)
}
