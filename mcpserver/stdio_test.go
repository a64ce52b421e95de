package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/storage/local"
)

// rawStdio is ServeStdio over pipes, driven line by line as a pipelining client would.
type rawStdio struct {
	t    *testing.T
	svc  *memory.Service
	in   *io.PipeWriter
	out  chan string
	done chan error
}

func newRawStdio(t *testing.T) *rawStdio {
	t.Helper()
	store, err := local.Open(t.TempDir(), local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc := memory.New(store, memory.Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rawStdio{t: t, svc: svc, in: inW, out: make(chan string, 1000), done: make(chan error, 1)}
	go func() {
		r.done <- ServeStdio(context.Background(), New(svc, Options{SamplingTimeout: 20 * time.Second}), inR, outW, StdioOptions{})
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			r.out <- sc.Text()
		}
		close(r.out)
	}()
	t.Cleanup(func() {
		r.in.Close()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Error("ServeStdio did not return after stdin closed")
		}
	})
	return r
}

func (r *rawStdio) send(lines ...string) {
	r.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(r.in, l+"\n"); err != nil {
			r.t.Fatal(err)
		}
	}
}

// next returns the next message the server sends.
func (r *rawStdio) next() gjson.Result {
	r.t.Helper()
	select {
	case l, ok := <-r.out:
		if !ok {
			r.t.Fatal("server closed its output")
		}
		return gjson.Parse(l)
	case <-time.After(20 * time.Second):
		r.t.Fatal("no message from the server in 20s")
	}
	return gjson.Result{}
}

// expectNone checks that the server sends nothing for a while.
func (r *rawStdio) expectNone(d time.Duration) {
	r.t.Helper()
	select {
	case l := <-r.out:
		r.t.Fatalf("unexpected message: %.300s", l)
	case <-time.After(d):
	}
}

// closeAndCollect ends the input and returns every answer by id.
func (r *rawStdio) closeAndCollect() map[string]gjson.Result {
	r.t.Helper()
	r.in.Close()
	got := map[string]gjson.Result{}
	for l := range r.out {
		m := gjson.Parse(l)
		if id := m.Get("id"); id.Exists() {
			got[id.Raw] = m
		}
	}
	return got
}

func initLine(id int, sampling bool) string {
	caps := "{}"
	if sampling {
		caps = `{"sampling":{}}`
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":%s,"clientInfo":{"name":"t","version":"1"}}}`, id, caps) +
		"\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}`
}

func callLine(id any, tool string, args any) string {
	a, _ := json.Marshal(args)
	i, _ := json.Marshal(id)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, i, tool, a)
}

func importSession(t *testing.T, svc *memory.Service, id string, n int) {
	t.Helper()
	var items []memory.ImportItem
	for i := range n {
		items = append(items, memory.ImportItem{Message: &memory.Message{ID: fmt.Sprintf("m%d", i), Role: memory.RoleUser,
			Content: []memory.Block{{Type: memory.BlockText, Text: fmt.Sprintf("message %d %s", i, strings.Repeat("word ", 200))}}}})
	}
	if _, err := svc.Import(context.Background(), memory.ImportRequest{SessionID: id, WorkingDir: "/p", Items: items}); err != nil {
		t.Fatal(err)
	}
}

// TestStdioPipelineTakesEffectInOrder: saves and reads written without waiting take effect
// in the order sent: every resume sees exactly the saves sent before it, and a list sees a
// session created just before it.
func TestStdioPipelineTakesEffectInOrder(t *testing.T) {
	r := newRawStdio(t)
	importSession(t, r.svc, "s1", 1)
	lines := []string{initLine(0, false)}
	const n = 40
	for i := 1; i <= n; i++ {
		lines = append(lines,
			callLine(fmt.Sprintf("save-%d", i), "session_save", map[string]any{"session_id": "s1",
				"messages": []any{map[string]any{"id": fmt.Sprintf("p%d", i), "role": "user", "content": fmt.Sprintf("pipelined %d", i)}}}),
			callLine(fmt.Sprintf("resume-%d", i), "session_resume", map[string]any{"session_id": "s1"}))
	}
	lines = append(lines,
		callLine("create", "session_save", map[string]any{"working_dir": "/q", "messages": []any{map[string]any{"role": "user", "content": "new"}}}),
		callLine("list", "session_list", map[string]any{}),
		callLine("delete", "session_delete", map[string]any{"session_id": "s1"}),
		callLine("gone", "session_resume", map[string]any{"session_id": "s1"}))
	r.send(lines...)
	got := r.closeAndCollect()
	for i := 1; i <= n; i++ {
		res := got[fmt.Sprintf(`"resume-%d"`, i)]
		if c := len(res.Get("result.structuredContent.messages").Array()); c != i+1 {
			t.Fatalf("resume %d saw %d messages, want %d: %.300s", i, c, i+1, res.Raw)
		}
	}
	if c := len(got[`"list"`].Get("result.structuredContent.sessions").Array()); c != 2 {
		t.Fatalf("list saw %d sessions, want 2", c)
	}
	if !got[`"gone"`].Get("result.isError").Bool() {
		t.Fatalf("resume after delete: %s", got[`"gone"`].Raw)
	}
}

// TestStdioBeforeInitialize: before initialize only initialize and ping are served; a tool
// call is answered with an error and stores nothing.
func TestStdioBeforeInitialize(t *testing.T) {
	r := newRawStdio(t)
	r.send(callLine(1, "session_save", map[string]any{"working_dir": "/p", "messages": []any{map[string]any{"role": "user", "content": "x"}}}),
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	got := map[string]gjson.Result{}
	for range 3 {
		m := r.next()
		got[m.Get("id").Raw] = m
	}
	if got["1"].Get("error.code").Int() != codeInvalidRequest || got["3"].Get("error.code").Int() != codeInvalidRequest {
		t.Fatalf("calls before initialize: %s / %s", got["1"].Raw, got["3"].Raw)
	}
	if !got["2"].Get("result").Exists() {
		t.Fatalf("ping before initialize: %s", got["2"].Raw)
	}
	list, err := r.svc.List(context.Background(), memory.ListRequest{})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("a refused call stored something: %v %v", list, err)
	}
}

// TestStdioSamplingDoesNotBlock: a compaction waiting for the client's sampling answer blocks
// neither reading nor calls on other sessions, and calls on its own session wait for it; the
// sampling answer, sent after them, arrives and completes it.
func TestStdioSamplingDoesNotBlock(t *testing.T) {
	r := newRawStdio(t)
	importSession(t, r.svc, "s1", 30)
	importSession(t, r.svc, "s2", 1)
	r.send(initLine(1, true))
	if r.next().Get("id").Int() != 1 {
		t.Fatal("no initialize answer")
	}
	r.send(callLine(2, "session_compact", map[string]any{"session_id": "s1", "summarizer": "sampling", "keep_recent_tokens": 500}))
	req := r.next()
	if req.Get("method").String() != "sampling/createMessage" {
		t.Fatalf("want a sampling request, got %.300s", req.Raw)
	}
	// While the compaction waits: a save on s1 must wait, calls elsewhere must not.
	r.send(callLine(3, "session_save", map[string]any{"session_id": "s1", "messages": []any{map[string]any{"id": "late", "role": "user", "content": "after"}}}),
		callLine(4, "session_save", map[string]any{"session_id": "s2", "messages": []any{map[string]any{"role": "user", "content": "elsewhere"}}}),
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	seen := map[int64]bool{}
	for range 2 {
		seen[r.next().Get("id").Int()] = true
	}
	if !seen[4] || !seen[5] {
		t.Fatalf("calls on another session waited for the compaction: %v", seen)
	}
	r.expectNone(200 * time.Millisecond) // the save on s1 is still waiting
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"## Goal\nsampled summary"},"model":"m"}}`, req.Get("id").Raw))
	first, second := r.next(), r.next()
	if first.Get("id").Int() != 2 || first.Get("result.structuredContent.status").String() != "compacted" {
		t.Fatalf("compaction answer: %.400s", first.Raw)
	}
	if second.Get("id").Int() != 3 || second.Get("result.isError").Bool() {
		t.Fatalf("save after the compaction: %.400s", second.Raw)
	}
}

// TestStdioCancelQueued: a request cancelled while it waits for its turn is never run and
// gets no answer.
func TestStdioCancelQueued(t *testing.T) {
	r := newRawStdio(t)
	importSession(t, r.svc, "s1", 30)
	r.send(initLine(1, true))
	r.next()
	r.send(callLine(2, "session_compact", map[string]any{"session_id": "s1", "summarizer": "sampling", "keep_recent_tokens": 500}))
	req := r.next()
	r.send(callLine(3, "session_delete", map[string]any{"session_id": "s1"}),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"## Goal\nx"},"model":"m"}}`, req.Get("id").Raw))
	if m := r.next(); m.Get("id").Int() != 2 {
		t.Fatalf("want the compaction's answer, got %.300s", m.Raw)
	}
	r.expectNone(200 * time.Millisecond)
	if _, err := r.svc.Get(context.Background(), "s1"); err != nil {
		t.Fatalf("the cancelled delete ran: %v", err)
	}
}

// TestStdioBadInput: duplicate ids in flight, invalid UTF-8 and unknown resources get the
// answers the specs give, and nothing is written.
func TestStdioBadInput(t *testing.T) {
	r := newRawStdio(t)
	r.send(initLine(1, false))
	r.next()
	r.send(
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_save","arguments":{"working_dir":"/p","name":"ok","messages":[{"role":"user","content":[{"type":"text","text":"bad \ud800 surrogate"}]}]}}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"session_save\",\"arguments\":{\"working_dir\":\"/p/\xc3\x28\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}}}",
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"session://missing"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"session://missing/summary"}}`,
	)
	got := r.closeAndCollect()
	for id, field := range map[string]string{"2": "messages[0].content[0].text", "3": "working_dir"} {
		m := got[id]
		if !m.Get("result.isError").Bool() || !strings.Contains(m.Get("result.content.0.text").String(), field+" is not valid UTF-8") {
			t.Errorf("call %s: want a tool error naming %s, got %.300s", id, field, m.Raw)
		}
	}
	for _, id := range []string{"4", "5"} {
		if c := got[id].Get("error.code").Int(); c != -32002 {
			t.Errorf("resources/read %s: code %d, want -32002: %s", id, c, got[id].Raw)
		}
	}
	list, err := r.svc.List(context.Background(), memory.ListRequest{})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("a refused call stored something: %+v %v", list, err)
	}
}

// TestStdioDuplicateKeys: a request that sends a key of its envelope twice (the tool, its
// arguments, the method, the id) is refused with Invalid Request naming the key, and nothing
// runs: the sequencer reads the first of duplicate keys, mcp-go the last, so either could
// otherwise serve a request the other did not order. Inside the arguments the tool's own
// reading (the last) decides, as TestSequencerScopeIsToolSession checks.
func TestStdioDuplicateKeys(t *testing.T) {
	const save = `"name":"session_save","arguments":{"working_dir":"/p","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct{ id, line, key string }{
		{"2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_list",` + save + `}}`, "params.name"},
		{"3", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + save + `,"arguments":{}}}`, "params.arguments"},
		{"4", `{"jsonrpc":"2.0","id":4,"method":"tools/list","method":"tools/call","params":{` + save + `}}`, "method"},
		{"5", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"session_list"},"params":{` + save + `}}`, "params"},
		{"null", `{"jsonrpc":"2.0","id":6,"id":7,"method":"tools/call","params":{` + save + `}}`, "id"},
	}
	r := newRawStdio(t)
	r.send(initLine(1, false))
	r.next()
	for _, tt := range tests {
		r.send(tt.line)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","method":"tools/call","params":{` + save + `}}`)
	got := r.closeAndCollect()
	for _, tt := range tests {
		m := got[tt.id]
		if m.Get("error.code").Int() != codeInvalidRequest || !strings.Contains(m.Get("error.message").String(), `"`+tt.key+`" appears more than once`) {
			t.Errorf("%.70s: want Invalid Request naming %s, got %.300s", tt.line, tt.key, m.Raw)
		}
	}
	if len(got) != len(tests) {
		t.Errorf("%d answers, want %d: %v", len(got), len(tests), got)
	}
	list, err := r.svc.List(context.Background(), memory.ListRequest{})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("a refused request stored something: %+v %v", list, err)
	}
}

// TestStdioTakesArguments: a tools/call's arguments reach the tool as sent (every digit, key
// order, escapes), without mcp-go decoding them: ServeStdio takes them out of the message.
func TestStdioTakesArguments(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"session_save","arguments":{"working_dir":"/p","messages":[{"role":"assistant","content":[{"type":"tool_call","id":"c","name":"n","arguments":{"z":12345678901234567890123,"a":"\u003c&>"}}]}]}}}`
	r := newRawStdio(t)
	r.send(initLine(1, false))
	r.next()
	r.send(strings.Replace(line, `"id":7`, `"id":2`, 1))
	res := r.next()
	if res.Get("result.isError").Bool() {
		t.Fatalf("save: %s", res.Raw)
	}
	page, err := r.svc.Resume(context.Background(), memory.ResumeRequest{SessionID: res.Get("result.structuredContent.session_id").Str, Raw: true})
	if err != nil || len(page.RawMessages) != 1 {
		t.Fatalf("resume: %v %+v", err, page)
	}
	if got := gjson.GetBytes(page.RawMessages[0], "content.0.arguments").Raw; got != `{"z":12345678901234567890123,"a":"\u003c&>"}` {
		t.Fatalf("stored arguments %s", got)
	}
	r.send(callLine(3, "session_save", map[string]any{"working_dir": "/p", "sessionId": "x", "messages": []any{map[string]any{"role": "user", "content": "x"}}}))
	if m := r.next(); !m.Get("result.isError").Bool() || !strings.Contains(m.Get("result.content.0.text").Str, `unknown argument(s) "sessionId"`) {
		t.Fatalf("unknown argument: %s", m.Raw)
	}
}

// TestStdioResumePageIsASCII: a resume page goes out as one line of ASCII (non-ASCII text as
// \u escapes, which JavaScript clients parse on their fast path), holding the text as saved,
// and within max_tokens counted on the line as sent.
func TestStdioResumePageIsASCII(t *testing.T) {
	r := newRawStdio(t)
	texts := []string{"héllo ─ wörld → 日本語 😀 \u2028 <b>&amp;</b>", strings.Repeat("résumé ", 3000)}
	for i := range 120 {
		texts = append(texts, fmt.Sprintf("%d: %s", i, strings.Repeat("plain → text ", 150)))
	}
	var msgs []any
	for i, s := range texts {
		msgs = append(msgs, map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": s})
	}
	r.send(initLine(1, false), callLine(2, "session_save", map[string]any{"working_dir": "/p", "messages": msgs}))
	r.next()
	saved := r.next()
	id := saved.Get("result.structuredContent.session_id").String()
	if id == "" {
		t.Fatalf("save: %s", saved.Raw)
	}
	// Twice: the second pass is written from the page buffers the first one gave back
	// (memory.RecyclePage: pages of 64 KB and more), and must read the same.
	const maxTokens = 20000
	var got, first []string
	cursor := ""
	for page := 3; ; page++ {
		args := map[string]any{"session_id": id, "max_tokens": maxTokens}
		if cursor != "" {
			args["cursor"] = cursor
		}
		r.send(callLine(page, "session_resume", args))
		line := r.next().Raw
		if !message.IsASCII([]byte(line)) {
			t.Fatalf("page %d is not ASCII: %.300s", page, line)
		}
		sc := gjson.Get(line, "result.structuredContent")
		if tokens := (utf8.RuneCountInString(sc.Raw) + 3) / 4; tokens > maxTokens {
			t.Fatalf("page %d: structured content of %d tokens, over max_tokens %d", page, tokens, maxTokens)
		}
		for _, m := range sc.Get("messages").Array() {
			got = append(got, m.Get("content.0.text").String())
		}
		if cursor = sc.Get("next_cursor").String(); cursor == "" {
			if first != nil {
				break
			}
			first, got = got, nil
		}
	}
	if strings.Join(first, "\x00") != strings.Join(got, "\x00") {
		t.Fatalf("the second resume differs from the first: %q, then %q", first, got)
	}
	if len(got) != len(texts) || got[0] != texts[0] || !strings.HasPrefix(texts[1], strings.TrimRight(strings.SplitN(got[1], "\n[…", 2)[0], " ")) ||
		strings.Join(got[2:], "") != strings.Join(texts[2:], "") {
		t.Fatalf("texts changed: %d of %d, %.300q", len(got), len(texts), got)
	}
}

// TestStdioResumeBuildsAhead: over stdio, every page of a full resume after the first is
// served from the one built after the previous page was written (memory's ResumeResult.Ahead,
// run by transport.AfterAnswer), and the pages are whole.
func TestStdioResumeBuildsAhead(t *testing.T) {
	r := newRawStdio(t)
	var msgs []any
	for i := range 120 {
		msgs = append(msgs, map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": fmt.Sprintf("%d: %s", i, strings.Repeat("some text ", 200))})
	}
	r.send(initLine(1, false), callLine(2, "session_save", map[string]any{"working_dir": "/p", "messages": msgs}))
	r.next()
	id := r.next().Get("result.structuredContent.session_id").String()
	cursor, pages, got := "", 0, 0
	for {
		args := map[string]any{"session_id": id, "max_tokens": 2000}
		if cursor != "" {
			args["cursor"] = cursor
		}
		r.send(callLine(3+pages, "session_resume", args))
		sc := r.next().Get("result.structuredContent")
		pages++
		for i, m := range sc.Get("messages").Array() {
			if m.Get("id").String() != fmt.Sprintf("m%d", got+i) {
				t.Fatalf("page %d: message %d is %s", pages, i, m.Get("id"))
			}
		}
		got += len(sc.Get("messages").Array())
		if cursor = sc.Get("next_cursor").String(); cursor == "" {
			break
		}
	}
	if got != len(msgs) || pages < 5 {
		t.Fatalf("%d messages in %d pages", got, pages)
	}
	if n := r.svc.PagesServedAhead(); n != pages-1 {
		t.Fatalf("%d of the %d pages after the first were built ahead", n, pages-1)
	}
}
