package mcpserver

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/local"
)

// A save that would create a session, for refused requests that must store nothing.
const refusedSave = `"method":"tools/call","params":{"name":"session_save","arguments":{"working_dir":"/p","messages":[{"role":"user","content":"hi"}]}}`

// badIDLines are requests whose id JSON-RPC 2.0 or MCP does not allow.
var badIDLines = []string{
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":null,` + refusedSave + `}`,
	`{"jsonrpc":"2.0","id":null}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":-2.25,` + refusedSave + `}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"ping"}`,
	`{"jsonrpc":"2.0","id":[],"method":"ping"}`,
	`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":false,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{"n":2},` + refusedSave + `}`,
	`{"jsonrpc":"2.0","id":[3],` + refusedSave + `}`,
	`{"jsonrpc":"2.0","id":{"a":1}}`,
}

// deepLine is a ping whose params nest to depth levels in all.
func deepLine(id string, depth int) string {
	head := `{"jsonrpc":"2.0",`
	if id != "" {
		head += `"id":` + id + `,`
	}
	head += `"method":"ping","params":{"x":`
	n := depth - 2 // the message and its params
	return head + strings.Repeat("[", n) + strings.Repeat("]", n) + "}}"
}

// checkRefusal checks an answer: the error code and id, and no result.
func checkRefusal(t *testing.T, what, answer string, code int, id string) {
	t.Helper()
	a := gjson.Parse(answer)
	if a.Get("error.code").Int() != int64(code) || a.Get("id").Raw != id || a.Get("result").Exists() {
		t.Errorf("%.80s: got %.300s, want error %d to id %s", what, answer, code, id)
	}
}

// envelopeLines are messages that are no request: JSON that is not an object, an id MCP does
// not allow, a method or jsonrpc of another type, neither a method nor an id. mcp-go answers
// some with -32700 (parse error) and some not at all; each gets Invalid Request, to the id
// when it has a usable one, saying what is wrong.
func envelopeLines() []refusedLine {
	const want = `want {"jsonrpc":"2.0","id":…,"method":"<name>",…}`
	return []refusedLine{
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null", codeInvalidRequest, `"id" must be a string or an integer (MCP), not null`},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "null", codeInvalidRequest, `"id" must be a string or an integer (MCP), not a fraction`},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "null", codeInvalidRequest, `"id" must be a string or an integer (MCP), not a boolean`},
		{`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, "null", codeInvalidRequest, "not a number beyond ±2^53"},
		{`{"jsonrpc":"2.0","method":5}`, "null", codeInvalidRequest, want},
		{`{"jsonrpc":"2.0","id":7,"method":5}`, "7", codeInvalidRequest, want},
		{`{"jsonrpc":"2.0","id":"m","method":null}`, `"m"`, codeInvalidRequest, want},
		{`{"jsonrpc":"2.0"}`, "null", codeInvalidRequest, want},
		{`{}`, "null", codeInvalidRequest, want},
		{`{"jsonrpc":2,"id":8,"method":"ping"}`, "8", codeInvalidRequest, want},
		{`{"id":9,"method":"ping"}`, "9", codeInvalidRequest, want},
		{`{"jsonrpc":"1.0","method":"notifications/initialized"}`, "null", codeInvalidRequest, want},
		{`123`, "null", codeInvalidRequest, "a JSON-RPC message is an object"},
		{`"x"`, "null", codeInvalidRequest, "a JSON-RPC message is an object"},
		{`null`, "null", codeInvalidRequest, "a JSON-RPC message is an object"},
		{`true`, "null", codeInvalidRequest, "a JSON-RPC message is an object"},
	}
}

// checkRefusalText checks an answer as checkRefusal does, and that its message holds r.text.
func checkRefusalText(t *testing.T, r refusedLine, answer string) {
	t.Helper()
	checkRefusal(t, r.body, answer, r.code, r.id)
	if msg := gjson.Get(answer, "error.message").Str; !strings.Contains(msg, r.text) {
		t.Errorf("%.80s: message %q does not say %q", r.body, msg, r.text)
	}
}

// checkNothingStored fails unless the store holds no session.
func checkNothingStored(t *testing.T, svc *memory.Service) {
	t.Helper()
	list, err := svc.List(t.Context(), memory.ListRequest{})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("a refused request stored something: %+v %v", list, err)
	}
}

// TestStdioRefusesBadIDsAndDeepMessages: over stdio, raw lines with an object, array or
// boolean id are answered -32600 to id null, and a message nested deeper than 10,000 levels
// -32600 to its id (-32700 to null without one), with nothing run; a message at the limit is
// served, and so is everything after the refusals.
func TestStdioRefusesBadIDsAndDeepMessages(t *testing.T) {
	r := newRawStdio(t)
	r.send(initLine(1, false))
	r.next()
	for _, l := range badIDLines {
		r.send(l)
		checkRefusal(t, l, r.next().Raw, codeInvalidRequest, "null")
	}
	for _, l := range envelopeLines() {
		r.send(l.body)
		checkRefusalText(t, l, r.next().Raw)
	}
	r.send(deepLine(`"deep"`, maxEnvelopeDepth+1))
	checkRefusal(t, "deep with an id", r.next().Raw, codeInvalidRequest, `"deep"`)
	r.send(deepLine("", maxEnvelopeDepth+1))
	checkRefusal(t, "deep without an id", r.next().Raw, codeParseError, "null")
	r.send(deepLine(`"huge"`, 5_000_000)) // 10 MB: it overflowed gjson's recursive validator
	checkRefusal(t, "five million levels", r.next().Raw, codeInvalidRequest, `"huge"`)
	r.send(deepLine(`"at"`, maxEnvelopeDepth))
	if a := r.next(); a.Get("id").Raw != `"at"` || !a.Get("result").Exists() {
		t.Errorf("a message at the limit: %.300s", a.Raw)
	}
	r.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if a := r.next(); a.Get("id").Raw != `"after"` || !a.Get("result").Exists() {
		t.Errorf("after the refusals: %.300s", a.Raw)
	}
	checkNothingStored(t, r.svc)
}

// TestHTTPRefusesBadIDsAndDeepMessages: the same over streamable HTTP and SSE's message
// endpoint as NewHTTP serves them, raw bodies in, answered with HTTP 400 and the JSON-RPC
// error, as mcp-go answers what it cannot parse.
func TestHTTPRefusesBadIDsAndDeepMessages(t *testing.T) {
	store, err := local.Open(t.TempDir(), local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	svc := memory.New(store, memory.Options{})
	ts := httptest.NewServer(NewHTTP(New(svc, Options{}), nil))
	defer ts.Close()
	refused := refusedLines()
	t.Run("streamable", func(t *testing.T) { checkStreamableRefusals(t, ts.URL, refused) })
	t.Run("sse", func(t *testing.T) { checkSSERefusals(t, ts.URL, refused) })
	checkNothingStored(t, svc)
}

// refusedLine is a request an HTTP transport must refuse with 400 and the JSON-RPC error code,
// answering to id; text, when set, is in the error's message.
type refusedLine struct {
	body, id string
	code     int
	text     string
}

// refusedLines are messages nested too deep and lines with bad ids.
func refusedLines() []refusedLine {
	refused := []refusedLine{
		{deepLine(`"deep"`, maxEnvelopeDepth+1), `"deep"`, codeInvalidRequest, "nests deeper"},
		{deepLine("", maxEnvelopeDepth+1), "null", codeParseError, "nests deeper"},
		{deepLine("7", 5_000_000), "7", codeInvalidRequest, "nests deeper"},
	}
	for _, l := range badIDLines {
		refused = append(refused, refusedLine{l, "null", codeInvalidRequest, `"id" must be a string or an integer`})
	}
	return append(refused, envelopeLines()...)
}

// checkStreamableRefusals sends every refused line to the streamable HTTP endpoint of an
// initialized session, then a message at the depth limit, which is answered.
func checkStreamableRefusals(t *testing.T, base string, refused []refusedLine) {
	_, _, h := postRaw(t, base+"/mcp", "", strings.Split(initLine(1, false), "\n")[0])
	sid := h.Get("Mcp-Session-Id")
	postRaw(t, base+"/mcp", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, r := range refused {
		status, got, _ := postRaw(t, base+"/mcp", sid, r.body)
		if status != http.StatusBadRequest {
			t.Errorf("%.80s: status %d, want 400", r.body, status)
		}
		checkRefusalText(t, r, got)
	}
	if _, got, _ := postRaw(t, base+"/mcp", sid, deepLine(`"at"`, maxEnvelopeDepth)); gjson.Get(got, "id").Raw != `"at"` || !gjson.Get(got, "result").Exists() {
		t.Errorf("a message at the limit: %.300s", got)
	}
}

// checkSSERefusals sends every refused line to SSE's message endpoint, then a ping whose
// answer must be the next event.
func checkSSERefusals(t *testing.T, base string, refused []refusedLine) {
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/sse", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
		close(events)
	}()
	next := func() string {
		select {
		case e := <-events:
			return e
		case <-time.After(20 * time.Second):
			t.Fatal("no event in 20s")
		}
		return ""
	}
	endpoint := base + next() // the message endpoint, with the session id
	postRaw(t, endpoint, "", strings.Split(initLine(1, false), "\n")[0])
	next()
	postRaw(t, endpoint, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, r := range refused {
		status, got, _ := postRaw(t, endpoint, "", r.body)
		if status != http.StatusBadRequest {
			t.Errorf("%.80s: status %d, want 400", r.body, status)
		}
		checkRefusalText(t, r, got)
	}
	postRaw(t, endpoint, "", `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if got := next(); gjson.Get(got, "id").Raw != `"after"` {
		t.Errorf("the next event is %.300s, want the answer to the ping sent after the refusals", got)
	}
}

// postRaw posts body to url (in MCP session, if set) and returns the status, the JSON-RPC
// answer (the first SSE data line's, for an event stream) and the headers.
func postRaw(t *testing.T, url, session, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := string(b)
	if i := strings.Index(out, "data: "); i >= 0 {
		out = strings.TrimSpace(strings.SplitN(out[i+6:], "\n", 2)[0])
	}
	return res.StatusCode, out, res.Header
}
