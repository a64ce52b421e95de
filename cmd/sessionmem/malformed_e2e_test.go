package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// malformedRequests returns requests that must all be refused: broken JSON and JSON-RPC,
// unknown methods and tools, and every tool with arguments of wrong types, out of range,
// over the limits, not valid UTF-8 or naming what does not exist. ids are "m0", "m1", …
// where the line has a usable id. session is an existing session (so refusals are checked
// against real data too).
func malformedRequests(session string) []string {
	var l requestList
	l.addNotRequests()
	l.addBrokenEnvelopes()
	l.addBadArgumentsPerTool()
	l.addBadSaves(session)
	l.addBadCalls(session)
	return l.out
}

// requestList gathers malformed requests, numbering the ids "m0", "m1", … in order.
type requestList struct {
	out []string
	n   int
}

func (l *requestList) id() string { l.n++; return fmt.Sprintf(`"m%d"`, l.n-1) }

func (l *requestList) add(format string, a ...any) { l.out = append(l.out, fmt.Sprintf(format, a...)) }

// call adds a tools/call of tool with args.
func (l *requestList) call(tool, args string) {
	l.add(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, l.id(), tool, args)
}

// addNotRequests adds lines that are not JSON, or not a request.
func (l *requestList) addNotRequests() {
	for _, line := range []string{"{", "}", "garbage", `{"jsonrpc":`, "[", "null", "true", "123", `"str"`, `{'a':1}`,
		"\x00\x01\x02", `{"a":1}}`, strings.Repeat("[", 20000), `{"jsonrpc":"2.0","id":1,"method":"tools/call"`, "[]",
		`[{"jsonrpc":"2.0","id":"b1","method":"ping"}]`, `{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"jsonrpc":"2.0","id":[1],"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`, `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`, `{"jsonrpc":"2.0","id":"y","error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"junk"}`, `{"jsonrpc":"2.0","method":"no/such/notification"}`} {
		l.add("%s", line)
	}
}

// addBrokenEnvelopes adds broken envelopes with usable ids: versions, methods, params.
func (l *requestList) addBrokenEnvelopes() {
	for _, line := range []string{
		`{"jsonrpc":"1.0","id":%s,"method":"ping"}`, `{"jsonrpc":2,"id":%s,"method":"ping"}`, `{"id":%s,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":%s,"method":5}`, `{"jsonrpc":"2.0","id":%s}`, `{"jsonrpc":"2.0","id":%s,"method":""}`,
		`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":[]}`, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":"x"}`,
		`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{}}`, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":5}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"session_nope","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"no/such/method"}`, `{"jsonrpc":"2.0","id":%s,"method":"tools/calll","params":{}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"resources/write","params":{}}`, `{"jsonrpc":"2.0","id":%s,"method":"sampling/createMessage","params":{}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"resources/read","params":{}}`, `{"jsonrpc":"2.0","id":%s,"method":"resources/read","params":{"uri":5}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"resources/read","params":{"uri":"session://"}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"resources/read","params":{"uri":"session://../../etc/passwd"}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"resources/read","params":{"uri":"session://nope/summary"}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"prompts/get","params":{"name":"no_such_prompt"}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"prompts/get","params":{"name":5}}`,
		`{"jsonrpc":"2.0","id":%s,"method":"logging/setLevel","params":{"level":"loud"}}`,
	} {
		l.add(line, l.id())
	}
}

// addBadArgumentsPerTool adds, for every tool, arguments of the wrong shape, unknown keys and
// bad session ids.
func (l *requestList) addBadArgumentsPerTool() {
	tools := []string{"session_save", "session_resume", "session_compact", "session_list", "session_fork", "session_delete", "session_search"}
	for _, tool := range tools {
		for _, args := range []string{`[]`, `"x"`, `5`, `{"unknown_key":1}`, `{"session_id":5}`, `{"session_id":"../escape"}`,
			`{"session_id":".."}`, `{"session_id":"` + strings.Repeat("a", 200) + `"}`, `{"session_id":"has space"}`, `{"session_id":"no-such-session"}`,
			`{"session_id":"bad\u0000nul"}`, `{"session_id":"\ud800"}`, `{"working_dir":"relative/dir"}`, `{"working_dir":5}`, `{"limit":-1,"session_id":"x y"}`} {
			l.call(tool, args)
		}
	}
}

// addBadSaves adds session_save calls with every way a message or its metadata can be
// wrong, invalid UTF-8 as raw bytes in several fields among them.
func (l *requestList) addBadSaves(session string) {
	msg := func(m string) string {
		return `{"session_id":"` + session + `","messages":[` + m + `]}`
	}
	long := strings.Repeat("x", 600)
	for _, args := range []string{
		`{"messages":[{"role":"user","content":"x"}]}`, // no working_dir
		`{"working_dir":"/p","parent_id":"e1","messages":[{"role":"user","content":"x"}]}`,
		`{"working_dir":"/p","messages":[]}`, `{"working_dir":"/p","messages":{}}`, `{"working_dir":"/p","messages":"x"}`, `{"working_dir":"/p"}`,
		`{"working_dir":"/p","name":"` + long + `","messages":[{"role":"user","content":"x"}]}`,
		`{"working_dir":"/p","model":"` + long + `","messages":[{"role":"user","content":"x"}]}`,
		`{"working_dir":"/p","provider":"a\nb","messages":[{"role":"user","content":"x"}]}`,
		`{"working_dir":"/p","name":"line\nbreak","messages":[{"role":"user","content":"x"}]}`,
		`{"working_dir":"/p","context_window":-5,"messages":[{"role":"user","content":"x"}]}`,
		`{"working_dir":"/p","context_window":"big","messages":[{"role":"user","content":"x"}]}`,
		`{"working_dir":"/p\u0000x","messages":[{"role":"user","content":"x"}]}`,
		`{"working_dir":"/p","name":"\udc00","messages":[{"role":"user","content":"x"}]}`,
		msg(`{"role":"robot","content":"x"}`), msg(`{"content":"x"}`), msg(`{"role":"user"}`), msg(`{"role":"user","content":[]}`),
		msg(`{"role":"user","content":""}`) + `,"x":1`, msg(`{"role":"user","content":5}`), msg(`{"role":"user","content":[{"type":"video"}]}`),
		msg(`{"role":"user","content":[{"text":"no type"}]}`), msg(`{"role":"user","content":[{"type":"thinking","thinking":"x"}]}`),
		msg(`{"role":"user","content":[{"type":"tool_call","id":"c","name":"x"}]}`),
		msg(`{"role":"assistant","content":[{"type":"tool_call","name":"x"}]}`),
		msg(`{"role":"assistant","content":[{"type":"tool_call","id":"c","name":"x","arguments":[1]}]}`),
		msg(`{"role":"tool_result","content":[{"type":"tool_result","content":"x"}]}`),
		msg(`{"role":"assistant","content":[{"type":"tool_result","tool_call_id":"c","content":"x"}]}`),
		msg(`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c","content":[{"type":"tool_result","tool_call_id":"d","content":"x"}]}]}`),
		msg(`{"role":"user","content":[{"type":"image","data":"x"}]}`), msg(`{"role":"user","content":[{"type":"image","media_type":"image/png"}]}`),
		msg(`{"role":"user","content":"x","usage":{"input_tokens":1,"output_tokens":1}}`),
		msg(`{"role":"assistant","content":"x","usage":{"input_tokens":-1,"output_tokens":1}}`),
		msg(`{"id":"bad id!","role":"user","content":"x"}`), msg(`{"id":"` + strings.Repeat("i", 200) + `","role":"user","content":"x"}`),
		msg(`{"role":"user","content":"lone \ud83d surrogate"}`), msg(`{"role":"user","content":[{"type":"text","text":"ok"},{"type":"text","text":"\udfff"}]}`),
		msg(`{"role":"assistant","content":[{"type":"thinking","thinking":"\ud800x"}]}`),
		`{"session_id":"` + session + `","parent_id":"not-an-entry","messages":[{"role":"user","content":"x"}]}`,
		`{"session_id":"` + session + `","parent_id":"bad id","messages":[{"role":"user","content":"x"}]}`,
		`{"session_id":"` + session + `","messages":[` + strings.Repeat(`{"role":"user","content":"x"},`, 1000) + `{"role":"user","content":"x"}]}`,
		`{"session_id":"` + session + `","messages":[{"role":"user","content":"` + strings.Repeat("y", 9<<20) + `"}]}`,
	} {
		l.call("session_save", args)
	}
	// Invalid UTF-8 as raw bytes, in several fields.
	for _, args := range []string{
		"{\"working_dir\":\"/p\",\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff\"}]}",
		"{\"working_dir\":\"/p/\xc3\x28\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		"{\"working_dir\":\"/p\",\"name\":\"\xe2\x82\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		"{\"session_id\":\"" + session + "\",\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_call\",\"id\":\"c\",\"name\":\"x\",\"arguments\":{\"k\xff\":1}}]}]}",
	} {
		l.call("session_save", args)
	}
}

// addBadCalls adds the other tools' calls with arguments out of range or naming what does
// not exist.
func (l *requestList) addBadCalls(session string) {
	long := strings.Repeat("x", 600)
	sid := `"session_id":"` + session + `"`
	for _, c := range []struct{ tool, args string }{
		{"session_resume", `{` + sid + `,"max_tokens":5}`}, {"session_resume", `{` + sid + `,"max_tokens":"lots"}`},
		{"session_resume", `{` + sid + `,"cursor":"garbage"}`}, {"session_resume", `{` + sid + `,"prune":"yes"}`},
		{"session_resume", `{}`}, {"session_resume", `{"working_dir":"/nowhere/at/all"}`},
		{"session_compact", `{}`}, {"session_compact", `{` + sid + `,"summarizer":"poet"}`},
		{"session_compact", `{` + sid + `,"summary":"x"}`}, {"session_compact", `{` + sid + `,"compaction_id":"c1.garbage","summary":"x"}`},
		{"session_compact", `{` + sid + `,"compaction_id":"c1.e30"}`}, {"session_compact", `{` + sid + `,"keep_recent_tokens":-5}`},
		{"session_compact", `{` + sid + `,"summarizer":"sampling"}`}, {"session_compact", `{` + sid + `,"summarizer":"llm"}`},
		{"session_compact", `{` + sid + `,"instructions":5}`},
		{"session_list", `{"limit":0.5}`}, {"session_list", `{"limit":true}`}, {"session_list", `{"limit":"ten"}`},
		{"session_list", `{"cursor":"garbage"}`}, {"session_list", `{"query":"` + strings.Repeat("q", 2000) + `"}`},
		{"session_list", `{"query":5}`},
		{"session_fork", `{}`}, {"session_fork", `{` + sid + `,"from_id":"nope"}`}, {"session_fork", `{` + sid + `,"from_id":"bad id"}`},
		{"session_fork", `{` + sid + `,"name":"` + long + `"}`}, {"session_fork", `{` + sid + `,"name":"a\nb"}`},
		{"session_delete", `{}`}, {"session_delete", `{"session_id":"nope-1"}`}, {"session_delete", `{` + sid + `,"force":true}`},
		{"session_search", `{}`}, {"session_search", `{"query":""}`}, {"session_search", `{"query":"   "}`},
		{"session_search", `{"query":"` + strings.Repeat("q", 2000) + `"}`}, {"session_search", `{"query":"x","limit":-3}`},
		{"session_search", `{"query":"x","limit":[1]}`}, {"session_search", `{"query":["x"]}`},
	} {
		l.call(c.tool, c.args)
	}
}

// snapshot returns every file of the store and its bytes.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || strings.HasSuffix(p, ".lock") {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestMalformedRequests: 200+ malformed requests in one connection: the server never
// crashes or hangs, answers every request that has an id it can answer to, keeps serving
// valid requests afterwards, and writes nothing.
func TestMalformedRequests(t *testing.T) {
	store := seedPipelineStore(t)
	const session = "cc-11111111-2222-3333-4444-555555555555"
	// Up to date with the redaction rules, so the server's start writes nothing either.
	runCLI(t, "", "redact", "--store", store).must(t)
	before := snapshot(t, store)
	reqs := malformedRequests(session)
	if len(reqs) < 200 {
		t.Fatalf("only %d malformed requests", len(reqs))
	}
	s := startRaw(t, store, nil, "SESSIONMEM_LOG_LEVEL=debug")
	s.send(initializeLine, initializedLine)
	s.send(reqs...)
	s.send(toolCall("final", "session_list", obj{}), rpc("final-ping", "ping", nil))
	lines := s.finish(120 * time.Second)
	answers := byID(lines)
	missing := 0
	for _, r := range reqs {
		id := gjson.Get(r, "id")
		if !gjson.Valid(r) || id.Type != gjson.String || !strings.HasPrefix(id.Str, "m") {
			continue
		}
		a, ok := answers[id.Raw]
		switch {
		case !ok:
			missing++
			t.Errorf("no answer to %.160q", r)
		case gjson.Get(a, "result").Exists() && !gjson.Get(a, "result.isError").Bool():
			t.Errorf("accepted: %.160q\n→ %.300s", r, a)
		}
	}
	if !strings.Contains(answers[`"final"`], `"sessions"`) || answers[`"final-ping"`] == "" {
		t.Fatalf("the server stopped serving after the malformed requests: %.300s", answers[`"final"`])
	}
	if strings.Contains(s.stderr.String(), "panic") {
		t.Fatalf("a panic was logged:\n%s", s.stderr.String())
	}
	after := snapshot(t, store)
	for p, b := range after {
		if !bytes.Equal(before[p], b) {
			t.Errorf("%s was written by a refused call", p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s was removed by a refused call", p)
		}
	}
	t.Logf("%d malformed requests, %d answers, %d lines of output, 0 crashes, 0 hangs", len(reqs), len(answers), len(lines))
}

// TestBatchAndNullIDEndToEnd: the built binary, over stdio, streamable HTTP and SSE, answers
// a JSON-RPC batch in a session of protocol 2025-03-26 with one array (nothing for its
// notification), refuses it in a 2025-06-18 session with one -32600 to id null, and answers
// a request whose id is null with -32600 to id null, in both.
func TestBatchAndNullIDEndToEnd(t *testing.T) {
	base, _ := httpServer(t, t.TempDir())
	for _, v := range []struct {
		version string
		served  bool
	}{{"2025-03-26", true}, {"2025-06-18", false}} {
		init := strings.Replace(initializeLine, "2025-06-18", v.version, 1)
		t.Run("stdio/"+v.version, func(t *testing.T) {
			s := startRaw(t, t.TempDir(), nil)
			s.send(init, initializedLine, e2eBatch, e2eNullID, `{"jsonrpc":"2.0","id":"end","method":"ping"}`)
			lines := s.finish(60 * time.Second)
			if len(lines) != 4 || byID(lines)[`"end"`] == "" || byID(lines)[`"init"`] == "" {
				t.Fatalf("want the answers to initialize, the batch, the null id and the ping; got %q", lines)
			}
			var batch, null string // in the order they were written, which the server need not keep
			for _, l := range lines {
				switch {
				case strings.Contains(l, "string or an integer"):
					null = l
				case strings.HasPrefix(l, "[") || strings.Contains(l, "batches"):
					batch = l
				}
			}
			checkE2EBatch(t, v.version, v.served, batch, null)
		})
		t.Run("streamable/"+v.version, func(t *testing.T) {
			_, _, h := postE2E(t, base+"/mcp", nil, init)
			hdr := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id"), "MCP-Protocol-Version": v.version}
			postE2E(t, base+"/mcp", hdr, initializedLine)
			status, batch, _ := postE2E(t, base+"/mcp", hdr, e2eBatch)
			if want := map[bool]int{true: 200, false: 400}[v.served]; status != want {
				t.Errorf("batch: status %d, want %d", status, want)
			}
			status, null, _ := postE2E(t, base+"/mcp", hdr, e2eNullID)
			if status != 400 {
				t.Errorf("null id: status %d, want 400", status)
			}
			checkE2EBatch(t, v.version, v.served, batch, null)
		})
		t.Run("sse/"+v.version, func(t *testing.T) {
			events, endpoint := sseE2E(t, base)
			postE2E(t, endpoint, nil, init)
			events()
			postE2E(t, endpoint, nil, initializedLine)
			status, batch, _ := postE2E(t, endpoint, nil, e2eBatch)
			if v.served && status == 202 {
				batch = events()
			} else if v.served || status != 400 {
				t.Errorf("batch: status %d", status)
			}
			_, null, _ := postE2E(t, endpoint, nil, e2eNullID)
			checkE2EBatch(t, v.version, v.served, batch, null)
		})
	}
}

// A batch of a ping, a notification and a tools/call, and a ping whose id is null.
const (
	e2eBatch  = `[{"jsonrpc":"2.0","id":"b1","method":"ping"},` + initializedLine + `,{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"session_list","arguments":{}}}]`
	e2eNullID = `{"jsonrpc":"2.0","id":null,"method":"ping"}`
)

// checkE2EBatch checks the answers to e2eBatch and e2eNullID in a session of version.
func checkE2EBatch(t *testing.T, version string, served bool, batch, null string) {
	t.Helper()
	b := gjson.Parse(batch)
	switch {
	case served && (!b.IsArray() || len(b.Array()) != 2 || b.Get(`#(id=="b1").result`).Raw != "{}" ||
		!b.Get(`#(id=="b2").result.content`).Exists()):
		t.Errorf("batch answered %.400s, want an array of the answers to b1 and b2", batch)
	case !served && (b.Get("id").Raw != "null" || b.Get("error.code").Int() != -32600 ||
		!strings.Contains(b.Get("error.message").Str, "not supported in protocol version "+version)):
		t.Errorf("batch answered %.400s, want -32600 to null: not supported in %s", batch, version)
	}
	n := gjson.Parse(null)
	if n.Get("id").Raw != "null" || n.Get("error.code").Int() != -32600 || !strings.Contains(n.Get("error.message").Str, "string or an integer") {
		t.Errorf(`"id": null answered %.300s, want -32600 to null`, null)
	}
}

// postE2E posts body to url with headers and returns the status, the body and the headers.
func postE2E(t *testing.T, url string, headers map[string]string, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b)), res.Header
}

// sseE2E opens an SSE stream at base/sse and returns a function giving its next event's data,
// and the message endpoint.
func sseE2E(t *testing.T, base string) (func() string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/sse", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	data := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data <- d
			}
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case d := <-data:
			return d
		case <-time.After(20 * time.Second):
			t.Fatal("no event in 20s")
		}
		return ""
	}
	return next, base + next()
}
