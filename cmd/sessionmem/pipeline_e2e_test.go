package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// rawServer is the built binary serving stdio, driven with raw lines as a shell pipeline
// would: every line the server writes is kept.
type rawServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr bytes.Buffer
	exited chan error
}

func startRaw(t *testing.T, store string, extraArgs []string, extraEnv ...string) *rawServer {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve", "--store", store}, extraArgs...)...)
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), extraEnv...)
	r := &rawServer{t: t, cmd: cmd, lines: make(chan string, 10000), exited: make(chan error, 1)}
	cmd.Stderr = &r.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.stdin = in
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
		r.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	return r
}

func (r *rawServer) send(lines ...string) {
	r.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(r.stdin, l+"\n"); err != nil {
			r.t.Fatalf("write to server: %v", err)
		}
	}
}

// next waits for one line from the server.
func (r *rawServer) next(timeout time.Duration) (string, bool) {
	select {
	case l, ok := <-r.lines:
		return l, ok
	case <-time.After(timeout):
		return "", false
	}
}

// finish closes stdin and returns every line the server wrote, failing if it does not exit
// cleanly within timeout.
func (r *rawServer) finish(timeout time.Duration) []string {
	r.t.Helper()
	r.stdin.Close()
	var out []string
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				select {
				case err := <-r.exited:
					if err != nil {
						r.t.Fatalf("server exited with %v; stderr:\n%s", err, r.stderr.String())
					}
				case <-deadline:
					r.t.Fatal("server did not exit after stdin closed")
				}
				return out
			}
			out = append(out, l)
		case <-deadline:
			r.cmd.Process.Kill()
			r.t.Fatalf("server hung: no exit within %v after stdin closed (%d lines so far); stderr:\n%s", timeout, len(out), r.stderr.String())
		}
	}
}

// byID indexes answers by their JSON-RPC id.
func byID(lines []string) map[string]string {
	m := map[string]string{}
	for _, l := range lines {
		if id := gjson.Get(l, "id"); id.Exists() && !gjson.Get(l, "method").Exists() {
			m[id.Raw] = l
		}
	}
	return m
}

func rpc(id any, method string, params any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return string(b)
}

func toolCall(id any, name string, args any) string {
	return rpc(id, "tools/call", map[string]any{"name": name, "arguments": args})
}

const initializeLine = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipeline","version":"1"}}}`
const initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// pipelineScript is 24 dependent requests on two imported sessions with known ids: each
// answer depends on what the requests before it did.
func pipelineScript() []string {
	const a, b = "cc-11111111-2222-3333-4444-555555555555", "pi-0195a3b0-1111-7000-8000-000000000001"
	turn := func(i int) []any {
		return []any{
			obj{"id": fmt.Sprintf("pu%d", i), "role": "user", "content": fmt.Sprintf("step %d: %s", i, strings.Repeat("please look at the parser ", 40))},
			obj{"id": fmt.Sprintf("pa%d", i), "role": "assistant", "content": []any{
				obj{"type": "text", "text": fmt.Sprintf("reading file%d.go", i)},
				obj{"type": "tool_call", "id": fmt.Sprintf("pc%d", i), "name": "read", "arguments": obj{"path": fmt.Sprintf("/work/proj/file%d.go", i)}}}},
			obj{"id": fmt.Sprintf("pt%d", i), "role": "tool_result", "content": []any{
				obj{"type": "tool_result", "tool_call_id": fmt.Sprintf("pc%d", i), "content": strings.Repeat("package parser // ", 60)}}},
		}
	}
	var many []any
	for i := range 12 {
		many = append(many, turn(i)...)
	}
	return []string{
		initializeLine, initializedLine,
		toolCall(1, "session_list", obj{}),
		toolCall(2, "session_save", obj{"session_id": a, "name": "parser work", "messages": turn(100)}),
		toolCall(3, "session_resume", obj{"session_id": a}),
		toolCall(4, "session_save", obj{"session_id": a, "messages": many}),
		toolCall(5, "session_save", obj{"session_id": a, "messages": turn(100)}), // a retry: stores nothing
		toolCall(6, "session_compact", obj{"session_id": a, "summarizer": "extractive", "keep_recent_tokens": 2000}),
		toolCall(7, "session_resume", obj{"session_id": a, "max_tokens": 4000}),
		rpc(8, "resources/read", obj{"uri": "session://" + a + "/summary"}),
		rpc(9, "resources/read", obj{"uri": "session://" + a + "/files"}),
		toolCall(10, "session_fork", obj{"session_id": a, "name": "parser fork"}),
		toolCall(11, "session_list", obj{"working_dir": "/work/proj"}),
		toolCall(12, "session_search", obj{"query": `"step 7"`}),
		toolCall(13, "session_save", obj{"working_dir": "/work/new", "name": "fresh", "messages": []any{obj{"id": "n1", "role": "user", "content": "start"}}}),
		toolCall(14, "session_resume", obj{"working_dir": "/work/new"}),
		toolCall(15, "session_delete", obj{"session_id": b}),
		rpc(16, "resources/read", obj{"uri": "session://" + b}),
		toolCall(17, "session_save", obj{"session_id": b, "messages": turn(1)}),
		toolCall(18, "session_list", obj{}),
		toolCall(19, "session_compact", obj{"session_id": a, "summarizer": "extractive", "keep_recent_tokens": 2000}),
		toolCall(20, "session_list", obj{"query": "fork"}),
		toolCall(21, "session_delete", obj{"session_id": a}),
		toolCall(22, "session_resume", obj{"session_id": a}),
		toolCall(23, "session_list", obj{}),
		rpc(24, "ping", nil),
	}
}

var (
	normUUID  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}`)
	normEntry = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
	normTime  = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?Z?`)
	normToken = regexp.MustCompile(`\b[rlc]1\.[A-Za-z0-9_-]{10,}`)
)

// normalizeAnswers replaces what differs between two runs of the same requests (new session ids,
// entry ids, times, opaque cursors) by stable names in order of first appearance.
func normalizeAnswers(answers []string) []string {
	names := map[string]string{}
	rename := func(kind string) func(string) string {
		return func(s string) string {
			if n, ok := names[s]; ok {
				return n
			}
			n := fmt.Sprintf("<%s%d>", kind, len(names))
			names[s] = n
			return n
		}
	}
	out := make([]string, len(answers))
	for i, a := range answers {
		a = normTime.ReplaceAllString(a, "<time>")
		a = normToken.ReplaceAllStringFunc(a, rename("cursor"))
		a = normUUID.ReplaceAllStringFunc(a, rename("session"))
		a = normEntry.ReplaceAllStringFunc(a, rename("entry"))
		out[i] = a
	}
	return out
}

// seedPipelineStore imports the two sessions the script works on.
func seedPipelineStore(t *testing.T) string {
	store := t.TempDir()
	runCLI(t, "", "import", "--store", store, "--file", filepath.Join("testdata", "claude-code.jsonl"), filepath.Join("testdata", "pi.jsonl")).must(t)
	return store
}

// TestPipelinedStdioMatchesSequential: the script written at once, as `printf … | sessionmem
// serve` does, gets exactly the answers a client that waits for each answer gets.
func TestPipelinedStdioMatchesSequential(t *testing.T) {
	script := pipelineScript()
	var ids []string
	for _, l := range script {
		if id := gjson.Get(l, "id"); id.Exists() {
			ids = append(ids, id.Raw)
		}
	}
	if len(ids) < 21 {
		t.Fatalf("the script has %d requests", len(ids))
	}

	// Sequential: one request, wait for its answer, the next.
	seq := startRaw(t, seedPipelineStore(t), nil)
	var seqAnswers []string
	for _, l := range script {
		seq.send(l)
		if !gjson.Get(l, "id").Exists() {
			continue
		}
		a, ok := seq.next(30 * time.Second)
		if !ok {
			t.Fatalf("sequential: no answer to %.100s", l)
		}
		seqAnswers = append(seqAnswers, a)
	}
	seq.finish(30 * time.Second)

	// Pipelined: everything at once, then end of input.
	pipe := startRaw(t, seedPipelineStore(t), nil)
	pipe.send(script...)
	got := byID(pipe.finish(60 * time.Second))
	var pipeAnswers []string
	for _, id := range ids {
		a, ok := got[id]
		if !ok {
			t.Fatalf("pipelined: no answer to request %s", id)
		}
		pipeAnswers = append(pipeAnswers, a)
	}
	ns, np := normalizeAnswers(seqAnswers), normalizeAnswers(pipeAnswers)
	for i := range ns {
		if ns[i] != np[i] {
			t.Errorf("request %s answered differently\nsequential: %.600s\npipelined:  %.600s", ids[i], ns[i], np[i])
		}
	}
	// The answers say what a dependent script expects.
	if !strings.Contains(got["5"], `"saved":0`) || !strings.Contains(got["6"], `"status":"compacted"`) ||
		gjson.Get(got["16"], "error.code").Int() != -32002 || !gjson.Get(got["22"], "result.isError").Bool() {
		t.Errorf("unexpected answers:\n5: %.200s\n6: %.200s\n16: %.200s\n22: %.200s", got["5"], got["6"], got["16"], got["22"])
	}
}
