package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// sameJSON decodes a and b (numbers kept as written) and reports whether they are the same
// JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	dec := func(x []byte) any {
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("not JSON: %v: %.300s", err, x)
		}
		if d.More() {
			t.Fatalf("trailing data: %.300s", x)
		}
		return v
	}
	return reflect.DeepEqual(dec(a), dec(b))
}

// TestEncodeMessageMatchesMarshal: what the stdio transport writes is the JSON value
// json.Marshal (what mcp-go writes) gives, for tool results, errors and odd content.
func TestEncodeMessageMatchesMarshal(t *testing.T) {
	html := `<script>alert('x') && y</script> > z`
	bad := "bad \xff\xfe utf-8 \xc3\x28 and a lone \xed\xa0\x80 surrogate"
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	withRaw := func(sc string, mut ...func(*mcp.CallToolResult)) *mcp.CallToolResult {
		r := mcp.NewToolResultText("text " + html)
		r.RawStructuredContent = raw(sc)
		for _, m := range mut {
			m(r)
		}
		return r
	}
	resp := func(id any, res any) mcp.JSONRPCMessage {
		return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)
	}
	cases := []struct {
		name string
		msg  mcp.JSONRPCMessage
	}{
		{"structured", resp(1, withRaw(`{"a":1,"b":"c"}`))},
		{"string id", resp("req-<1>&", withRaw(`{"a":[]}`))},
		{"float id", resp(1.5, withRaw(`{}`))},
		{"large id", resp(float64(1<<60), withRaw(`{"n":12345678901234567890}`))},
		{"html in raw", resp(2, withRaw(`{"messages":[{"role":"user","content":[{"type":"text","text":"`+html+`"}]}]}`))},
		{"escapes in raw", resp(3, withRaw(`{"t":"\u003c\u2028\ud83d\ude00\n\t\"\\"}`))},
		{"invalid utf-8 in raw", resp(4, withRaw(`{"t":"`+bad+`"}`))},
		{"invalid utf-8 in text", resp(5, withRaw(`{"t":1}`, func(r *mcp.CallToolResult) {
			r.Content = []mcp.Content{mcp.NewTextContent(bad), mcp.NewTextContent("\u2028\u2029 \x00\x1f")}
		}))},
		{"error result", resp(6, withRaw(`{"x":true}`, func(r *mcp.CallToolResult) { r.IsError = true }))},
		{"meta and modern fields", resp(7, withRaw(`{"x":null}`, func(r *mcp.CallToolResult) {
			r.Meta = mcp.NewMetaFromMap(map[string]any{"k": html, "n": 1})
			r.ResultType = "complete"
			r.RequestState = "state <&>"
		}))},
		{"input requests", resp(8, withRaw(`{"x":0}`, func(r *mcp.CallToolResult) {
			r.InputRequests = mcp.InputRequests{"s": mcp.NewSamplingInputRequest(mcp.CreateMessageParams{MaxTokens: 5,
				Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(html)}}})}
		}))},
		{"no content", resp(9, withRaw(`{"x":0}`, func(r *mcp.CallToolResult) { r.Content = nil }))},
		// No raw structured content: the same bytes as json.Marshal.
		{"structured value", resp(10, mcp.NewToolResultStructured(map[string]any{"h": html, "b": bad}, "t"))},
		{"tool error", resp(11, mcp.NewToolResultError("session_save: "+html))},
		{"string id, struct", resp("id \u2028 "+bad, mcp.NewToolResultStructured(struct {
			A string `json:"a"`
			B []int  `json:"b"`
		}{html, nil}, bad+html))},
		{"raw message value", resp(int64(-3), mcp.NewToolResultStructured(json.RawMessage("{ \"a\" : [1, 2] }"), ""))},
		{"no structured content", resp(0.25, mcp.NewToolResultText(html))},
		{"empty content", resp(1e21, &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: 1})},
		{"content of every kind", resp(1e-7, modern(&mcp.CallToolResult{Content: []mcp.Content{
			mcp.TextContent{Type: "text", Text: html, Annotated: mcp.Annotated{Annotations: &mcp.Annotations{Priority: ptr(0.5)}}},
			mcp.TextContent{Type: "text", Text: "m", Meta: mcp.NewMetaFromMap(map[string]any{"k": "v"})},
			mcp.NewImageContent("aGk=", "image/png"),
			&mcp.TextContent{Type: "text", Text: "pointer"},
		}, IsError: true}))},
		{"nil result", resp(14, (*mcp.CallToolResult)(nil))},
		{"fixed code in structured content", resp(15, mcp.NewToolResultStructured(json.RawMessage(`{"code":-32603,"message":"`+NotFoundLegacy+`x"}`), ""))},
		{"other result", resp(12, &mcp.ListToolsResult{Tools: []mcp.Tool{}})},
		{"json-rpc error", mcp.JSONRPCError{JSONRPC: "2.0", ID: mcp.NewRequestId(13),
			Error: mcp.NewJSONRPCErrorDetails(mcp.INVALID_PARAMS, html+bad, nil)}},
		{"notification", mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/progress",
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"progress": 1, "message": html}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := EncodeMessage(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			got := bytes.Join(parts, nil)
			want, err := json.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			want = FixResponse(want) // as the transports send it
			if !sameJSON(t, got, want) {
				t.Fatalf("differs from json.Marshal:\n got %s\nwant %s", got, want)
			}
			if r, ok := tc.msg.(mcp.JSONRPCResponse); ok {
				if res, ok := r.Result.(*mcp.CallToolResult); !ok || res == nil || len(res.RawStructuredContent) == 0 {
					if !bytes.Equal(got, want) {
						t.Fatalf("not the bytes of json.Marshal:\n got %s\nwant %s", got, want)
					}
				}
			}
			if bytes.ContainsAny(got, "\n\r") {
				t.Fatalf("a line break in the answer: %s", got)
			}
			if r, ok := tc.msg.(mcp.JSONRPCResponse); ok {
				// A raw answer's text goes out ASCII, as RawStructured writes its content.
				if res, ok := r.Result.(*mcp.CallToolResult); ok && res != nil && len(res.RawStructuredContent) > 0 &&
					message.IsASCII(res.RawStructuredContent) && res.Meta == nil && len(res.InputRequests) == 0 && res.RequestState == "" && !message.IsASCII(got) {
					t.Fatalf("not ASCII: %s", got)
				}
			}
		})
	}
}

// pageHead is a resume page without its messages, as mcpserver's resumeHead.
type pageHead struct {
	memory.ResumeResult
	Messages *struct{} `json:"messages,omitempty"`
}

// TestRawStructuredMatchesMarshal: a resume page built by RawStructured is the JSON value of
// json.Marshal of the page with its messages.
func TestRawStructuredMatchesMarshal(t *testing.T) {
	type page struct {
		memory.ResumeResult
		Messages []json.RawMessage `json:"messages"`
	}
	html := `<b>a && b</b>`
	full := memory.ResumeResult{SessionID: "s<1>", WorkingDir: "/p/&", Summary: "## Goal\n" + html + "\u2028",
		ReadFiles: []string{"a.go"}, ModifiedFiles: []string{}, ContextTokens: 123, NextCursor: "c.1",
		Facts:  &compaction.Ledger{},
		Pinned: []memory.Message{{ID: "p1", EntryID: "e1", Role: memory.RoleUser, Pinned: true, Content: []memory.Block{{Type: memory.BlockText, Text: html}}}}}
	msgs := []json.RawMessage{
		json.RawMessage(`{"id":"m1","entry_id":"e2","role":"user","content":[{"type":"text","text":"` + html + `"}]}`),
		json.RawMessage("{\n  \"role\": \"assistant\",\r\n  \"content\": [{\"type\":\"text\",\"text\":\"spaced\\nout\"}]\n}"),
		json.RawMessage(`{"role":"user","content":[{"type":"text","text":"\u00e9\ud83d\ude00 \u003c"}]}`),
		nil,
	}
	for _, tc := range []struct {
		name string
		res  memory.ResumeResult
		msgs []json.RawMessage
	}{
		{"full", full, msgs},
		{"no messages", memory.ResumeResult{SessionID: "s", ReadFiles: []string{}, ModifiedFiles: []string{}, Pinned: []memory.Message{}}, []json.RawMessage{}},
		{"zero", memory.ResumeResult{}, []json.RawMessage{msgs[0]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RawStructured(pageHead{ResumeResult: tc.res}, "messages", tc.msgs)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(page{tc.res, tc.msgs})
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, got, want) {
				t.Fatalf("differs from json.Marshal:\n got %s\nwant %s", got, want)
			}
			if bytes.ContainsAny(got, "\n\r") {
				t.Fatalf("a line break: %s", got)
			}
			if !message.IsASCII(got) {
				t.Fatalf("not ASCII: %s", got)
			}
			// The same page built as memory builds it, messages first.
			page := []byte(`{"messages":[`)
			for i, m := range tc.msgs {
				if i > 0 {
					page = append(page, ',')
				}
				if len(m) == 0 {
					m = json.RawMessage("null")
				}
				var c bytes.Buffer
				if err := json.Compact(&c, m); err != nil {
					t.Fatal(err)
				}
				page = message.AppendASCII(page, c.Bytes())
			}
			ended, err := EndRawPage(page, pageHead{ResumeResult: tc.res})
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, ended, want) || !message.IsASCII(ended) || bytes.ContainsAny(ended, "\n\r") {
				t.Fatalf("EndRawPage differs from json.Marshal:\n got %s\nwant %s", ended, want)
			}
		})
	}
	if _, err := EndRawPage([]byte(`{"m":[`), []int{1}); err == nil || !strings.Contains(err.Error(), "object") {
		t.Fatalf("a head that is not an object: %v", err)
	}
	if _, err := RawStructured([]int{1}, "messages", nil); err == nil || !strings.Contains(err.Error(), "object") {
		t.Fatalf("a head that is not an object: %v", err)
	}
}

// BenchmarkEncodeResumePage: the answer to a resume page of 200 corpus messages (about
// 400 KB, what max_tokens 100,000 returns) as mcp-go encoded it (json.Marshal of the page as
// a struct, then of the response) and as the stdio transport writes it now.
//
//	go test ./mcpserver/transport -run XXX -bench EncodeResumePage
func BenchmarkEncodeResumePage(b *testing.B) {
	var msgs []json.RawMessage
	size := 0
	for i, m := range transcripttest.Sized(b, 200, 1024, 4096) {
		m.EntryID = fmt.Sprintf("e%d", i)
		raw, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, raw)
		size += len(raw)
	}
	res := memory.ResumeResult{SessionID: "s1", WorkingDir: "/p", ReadFiles: []string{}, ModifiedFiles: []string{}, Pinned: []memory.Message{}, NextCursor: "r1.x"}
	b.Run("json.Marshal", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			r := mcp.NewToolResultStructured(struct {
				memory.ResumeResult
				Messages []json.RawMessage `json:"messages"`
			}{res, msgs}, "text")
			if _, err := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(1), r)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RawStructured+EncodeMessage", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			raw, err := RawStructured(pageHead{ResumeResult: res}, "messages", msgs)
			if err != nil {
				b.Fatal(err)
			}
			r := mcp.NewToolResultText("text")
			r.RawStructuredContent = raw
			if _, err := EncodeMessage(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(1), r)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// modern sets the fields a 2026-07-28 answer has.
func modern(r *mcp.CallToolResult) *mcp.CallToolResult {
	r.ResultType = "complete"
	r.RequestState = "state \xff <&>"
	r.Meta = mcp.NewMetaFromMap(map[string]any{"a": "<&>", "n": 1.5})
	return r
}

// jsonStrings are strings with everything encoding/json escapes, and what it must not.
var jsonStrings = []string{
	"", "plain", `"quoted" \back\slash`, "<html> & </html>", "\b\f\n\r\t\x00\x01\x1f\x7f", "é ñ 日本 😀",
	"\u2028\u2029 separators", "bad \xff\xfe utf-8 \xc3\x28", "lone \xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 beyond",
	"truncated \xe6\x97", "\xc0\xaf overlong", "\ufffd real replacement", strings.Repeat("a<b>&c\"d\\e\u2028", 50),
}

// TestAppendStringMatchesMarshal: appendString writes a string byte for byte as
// json.Marshal does.
func TestAppendStringMatchesMarshal(t *testing.T) {
	for i := range 256 {
		jsonStrings = append(jsonStrings, string([]byte{byte(i)}), "x"+string(rune(i))+"y")
	}
	for _, s := range jsonStrings {
		checkAppendString(t, s)
	}
}

// FuzzAppendString: appendString against json.Marshal on any input.
func FuzzAppendString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(checkAppendString)
}

func checkAppendString(t *testing.T, s string) {
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendString([]byte("x"), s); !bytes.Equal(got[1:], want) {
		t.Fatalf("%q: got %s, json.Marshal %s", s, got[1:], want)
	}
}

// TestAppendIDMatchesMarshal: appendID writes every id as json.Marshal does.
func TestAppendIDMatchesMarshal(t *testing.T) {
	ids := []any{nil, 0.0, math.Copysign(0, -1), 1.0, -1.0, 7.0, 1.5, -2.25, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789012345678.0,
		float64(1 << 53), float64(1<<53 + 2), 1.7976931348623157e308, 5e-324, 0.1, 1.0 / 3, int64(0), int64(-42), int64(math.MaxInt64),
		int64(math.MinInt64), 42, "", "s", "<&>", "bad \xff", "\u2028", true, map[string]any{"a": 1}}
	for _, id := range ids {
		want, err := json.Marshal(mcp.NewRequestId(id))
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendID(nil, mcp.NewRequestId(id))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%#v: got %s (%v), json.Marshal %s", id, got, err, want)
		}
	}
}
