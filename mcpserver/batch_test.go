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

// elemWant is one answer expected in a batch's array: to id (raw JSON; "null"), a result
// (code 0) holding text, or an error of code whose message holds text.
type elemWant struct {
	id   string
	code int
	text string
}

// batchCase is a batch and its answer: nothing at all (refusal "" and no answers), one
// Invalid Request to id null whose message holds refusal, or an array of answers (any order).
type batchCase struct {
	name    string
	body    string
	refusal string
	answers []elemWant
}

func batchPing(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }

const batchNote = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// servedBatchCases are batches as a session of protocol 2025-03-26 or earlier has them served.
func servedBatchCases() []batchCase {
	save := `{"jsonrpc":"2.0","id":"save","method":"tools/call","params":{"name":"session_save","arguments":{"working_dir":"/batch/p","messages":[{"role":"user","content":"hi"}]}}}`
	list := `{"jsonrpc":"2.0","id":"list","method":"tools/call","params":{"name":"session_list","arguments":{}}}`
	initialize := `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	return []batchCase{
		{name: "requests and a notification", body: `[` + batchPing(`"a"`) + `,` + batchNote + `,{"jsonrpc":"2.0","id":"b","method":"tools/list"}]`,
			answers: []elemWant{{`"a"`, 0, ""}, {`"b"`, 0, "session_save"}}},
		{name: "notifications only", body: `[` + batchNote + `,` + batchNote + `]`},
		{name: "empty", body: `[]`, refusal: "empty batch"},
		{name: "elements not objects", body: `[1,"x",[],` + batchPing(`"c"`) + `]`, answers: []elemWant{
			{"null", codeInvalidRequest, "is an object"}, {"null", codeInvalidRequest, "is an object"},
			{"null", codeInvalidRequest, "is an object"}, {`"c"`, 0, ""}}},
		{name: "bad ids and envelopes", body: `[{"jsonrpc":"2.0","id":null,"method":"ping"},{"jsonrpc":"2.0","id":1.5,"method":"ping"},` +
			`{"jsonrpc":"2.0","id":"m","method":5},` + batchPing(`7`) + `]`, answers: []elemWant{
			{"null", codeInvalidRequest, "string or an integer"}, {"null", codeInvalidRequest, "not a fraction"},
			{`"m"`, codeInvalidRequest, `"method":"<name>"`}, {"7", 0, ""}}},
		{name: "a save, then a list that sees it", body: `[` + save + `,` + list + `]`,
			answers: []elemWant{{`"save"`, 0, ""}, {`"list"`, 0, "/batch/p"}}},
		{name: "initialize must come alone", body: `[` + initialize + `,` + batchPing(`"e"`) + `]`,
			answers: []elemWant{{`"i"`, codeInvalidRequest, "initialize must not be part"}, {`"e"`, 0, ""}}},
		{name: "an unknown method", body: `[{"jsonrpc":"2.0","id":"u","method":"no/such"}]`, answers: []elemWant{{`"u"`, -32601, ""}}},
	}
}

// batchCases are the batches for a session of version (served: 2025-03-26 and earlier): as
// servedBatchCases says, or each refused as a whole.
func batchCases(version string, served bool) []batchCase {
	cases := servedBatchCases()
	if served {
		return cases
	}
	for i := range cases {
		cases[i].answers = nil
		cases[i].refusal = "not supported in protocol version " + version + " (MCP removed them after 2025-03-26); send requests one at a time"
	}
	return cases
}

// batchVersions are the protocol versions a client negotiates, and whether its batches are served.
var batchVersions = []struct {
	version string
	served  bool
}{{"2024-11-05", true}, {"2025-03-26", true}, {"2025-06-18", false}, {"2025-11-25", false}}

// checkBatchAnswer checks what a batch was answered with: got holds the messages sent back
// for it (none, or one).
func checkBatchAnswer(t *testing.T, c batchCase, got []string) {
	t.Helper()
	switch {
	case c.refusal == "" && c.answers == nil:
		if len(got) != 0 {
			t.Errorf("%s: answered %q, want nothing", c.name, got)
		}
		return
	case len(got) != 1:
		t.Errorf("%s: %d answers %q, want 1", c.name, len(got), got)
		return
	}
	a := gjson.Parse(got[0])
	if c.refusal != "" {
		if !a.IsObject() || a.Get("id").Raw != "null" || a.Get("error.code").Int() != codeInvalidRequest ||
			!strings.Contains(a.Get("error.message").Str, c.refusal) {
			t.Errorf("%s: got %.400s, want one -32600 to id null saying %q", c.name, got[0], c.refusal)
		}
		return
	}
	elems := a.Array()
	if !a.IsArray() || len(elems) != len(c.answers) {
		t.Errorf("%s: got %.600s, want an array of %d answers", c.name, got[0], len(c.answers))
		return
	}
	used := make([]bool, len(elems))
	for _, w := range c.answers {
		found := false
		for i, e := range elems {
			if !used[i] && e.Get("id").Raw == w.id && matches(e, w) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("%s: no answer to %s with %d %q in %.600s", c.name, w.id, w.code, w.text, got[0])
		}
	}
}

// matches reports whether answer e is what w expects.
func matches(e gjson.Result, w elemWant) bool {
	if w.code == 0 {
		return e.Get("result").Exists() && !e.Get("result.isError").Bool() && strings.Contains(e.Get("result").Raw, w.text)
	}
	return e.Get("error.code").Int() == int64(w.code) && strings.Contains(e.Get("error.message").Str, w.text)
}

// stdioAnswers sends body, then a ping, and returns what was sent back for body: everything
// but the ping's answer, once that has come and want messages more.
func stdioAnswers(r *rawStdio, body string, want int) []string {
	r.t.Helper()
	r.send(body, batchPing(`"sep"`))
	var got []string
	for sep := false; !sep || len(got) < want; {
		if a := r.next(); a.Get("id").Raw == `"sep"` {
			sep = true
		} else {
			got = append(got, a.Raw)
		}
	}
	return got
}

// wantMessages is how many messages c is answered with.
func wantMessages(c batchCase) int {
	if c.refusal == "" && c.answers == nil {
		return 0
	}
	return 1
}

// TestStdioBatch: over stdio, batches are served in a session of protocol 2025-03-26 or
// earlier (one array of answers, in one line; no answer to notifications; -32600 to null
// for [] and to each element that is no request object) and refused as a whole with one
// -32600 to null in later versions and before initialize.
func TestStdioBatch(t *testing.T) {
	for _, v := range batchVersions {
		t.Run(v.version, func(t *testing.T) {
			r := newRawStdio(t)
			r.send(strings.Replace(initLine(1, false), "2025-06-18", v.version, 1))
			if got := r.next().Get("result.protocolVersion").Str; got != v.version {
				t.Fatalf("negotiated %q", got)
			}
			for _, c := range batchCases(v.version, v.served) {
				checkBatchAnswer(t, c, stdioAnswers(r, c.body, wantMessages(c)))
			}
		})
	}
	t.Run("before initialize", func(t *testing.T) {
		r := newRawStdio(t)
		c := batchCase{name: "before initialize", body: `[` + batchPing(`"p"`) + `]`, refusal: "no protocol version has been negotiated"}
		checkBatchAnswer(t, c, stdioAnswers(r, c.body, 1))
	})
}

// TestHTTPBatch: the same over streamable HTTP (one array as the JSON body, 202 with no body
// when nothing is answered, refusals with 400) and SSE (202, then one event with the array),
// through NewHTTP as `sessionmem serve --http` serves them. Streamable HTTP takes the version
// from the MCP-Protocol-Version header; without one, 2025-03-26, as the spec says.
func TestHTTPBatch(t *testing.T) {
	store, err := local.Open(t.TempDir(), local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ts := httptest.NewServer(NewHTTP(New(memory.New(store, memory.Options{}), Options{}), nil))
	defer ts.Close()
	for _, v := range batchVersions {
		t.Run("streamable/"+v.version, func(t *testing.T) { checkStreamableBatches(t, ts.URL+"/mcp", v.version, v.version, v.served) })
		t.Run("sse/"+v.version, func(t *testing.T) { checkSSEBatches(t, ts.URL, v.version, v.served) })
	}
	t.Run("streamable/2025-03-26 without the header", func(t *testing.T) { checkStreamableBatches(t, ts.URL+"/mcp", "2025-03-26", "", true) })
	t.Run("sse/before initialize", func(t *testing.T) { checkSSEBatches(t, ts.URL, "", false) })
}

// checkStreamableBatches initializes a session of version and posts every batch case to it,
// with header as its MCP-Protocol-Version ("": none).
func checkStreamableBatches(t *testing.T, url, version, header string, served bool) {
	init := strings.Replace(strings.Split(initLine(1, false), "\n")[0], "2025-06-18", version, 1)
	_, _, h := postRaw(t, url, "", init)
	sid := h.Get("Mcp-Session-Id")
	post := func(body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		if header != "" {
			req.Header.Set("MCP-Protocol-Version", header)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, strings.TrimSpace(string(b))
	}
	post(batchNote)
	for _, c := range batchCases(version, served) {
		status, got := post(c.body)
		var answers []string
		if got != "" {
			answers = []string{got}
		}
		want := http.StatusOK
		switch {
		case c.refusal != "":
			want = http.StatusBadRequest
		case c.answers == nil:
			want = http.StatusAccepted
		}
		if status != want {
			t.Errorf("%s: status %d, want %d", c.name, status, want)
		}
		checkBatchAnswer(t, c, answers)
	}
	if status, got, _ := postRaw(t, url, "", `[`+batchPing(`"x"`)+`]`); served && status != http.StatusNotFound && status != http.StatusBadRequest {
		t.Errorf("a batch without a session: %d %.200s", status, got)
	}
}

// checkSSEBatches opens an SSE session, initializes it with version ("": not at all) and
// posts every batch case to its message endpoint; a ping after each shows that nothing else
// was sent for it.
func checkSSEBatches(t *testing.T, base, version string, served bool) {
	events, endpoint := openSSE(t, base)
	if version != "" {
		postRaw(t, endpoint, "", strings.Replace(strings.Split(initLine(1, false), "\n")[0], "2025-06-18", version, 1))
		if got := gjson.Get(events(), "result.protocolVersion").Str; got != version {
			t.Fatalf("negotiated %q", got)
		}
		postRaw(t, endpoint, "", batchNote)
	}
	cases := batchCases(version, served)
	if version == "" {
		cases = []batchCase{{name: "before initialize", body: `[` + batchPing(`"p"`) + `]`, refusal: "no protocol version has been negotiated"}}
	}
	for _, c := range cases {
		status, got, _ := postRaw(t, endpoint, "", c.body)
		var answers []string
		switch {
		case c.refusal != "":
			if status != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400", c.name, status)
			}
			answers = []string{got}
		case status != http.StatusAccepted:
			t.Errorf("%s: status %d, want 202", c.name, status)
		case c.answers != nil:
			answers = []string{events()}
		}
		checkBatchAnswer(t, c, answers)
		postRaw(t, endpoint, "", batchPing(`"sep"`))
		if e := events(); gjson.Get(e, "id").Raw != `"sep"` {
			t.Errorf("%s: sent %.300s before the answer to the ping after it", c.name, e)
		}
	}
}

// openSSE opens an SSE stream at base/sse and returns a function giving its next message
// event's data, and the message endpoint.
func openSSE(t *testing.T, base string) (func() string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/sse", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
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
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(20 * time.Second):
			t.Fatal("no event in 20s")
		}
		return ""
	}
	return next, base + next()
}
