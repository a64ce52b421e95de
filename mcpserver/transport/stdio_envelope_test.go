package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"
)

// TestParseEnvelope: one pass per level reads exactly what gjson.Get reads path by path (the
// first of duplicate keys, nothing from a params that is not an object), with offsets into
// the line that takeArguments can cut at.
func TestParseEnvelope(t *testing.T) {
	save := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"session_save","arguments":{"messages":[{"role":"user","content":"` +
		strings.Repeat(`a \"quoted\" line\n`, 100) + `"}],"session_id":"s1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	lines := []string{
		save,
		`{"jsonrpc":"2.0","id":"x","method":"resources/read","params":{"uri":"session://abc/messages"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"r"}}`,
		`{"jsonrpc":"2.0","id":1,"result":null}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`,
		`{"id":1,"id":2,"method":"a","method":"b","jsonrpc":"1.0","jsonrpc":"2.0","params":{"name":"n1","name":"n2"},"params":{"name":"n3"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"not an object"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["arguments",{"session_id":"s"}]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":["session_id"]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"session_id":null},"_meta":"x"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{}`,
	}
	metaKey := "params._meta." + gjsonEscape("io.modelcontextprotocol/protocolVersion")
	for _, line := range lines {
		e := parseEnvelope(gjson.Parse(line))
		check := func(what string, got gjson.Result, path string) {
			t.Helper()
			want := gjson.Get(line, path)
			if got.Exists() != want.Exists() || got.Raw != want.Raw || (want.Exists() && line[got.Index:got.Index+len(got.Raw)] != want.Raw) {
				t.Errorf("%.60s: %s = %q (at %d), Get(%q) = %q", line, what, got.Raw, got.Index, path, want.Raw)
			}
		}
		check("method", e.method, "method")
		check("id", e.id, "id")
		check("jsonrpc", e.jsonrpc, "jsonrpc")
		check("name", e.name, "params.name")
		check("args", e.args, "params.arguments")
		check("uri", e.uri, "params.uri")
		check("requestID", e.requestID, "params.requestId")
		check("session_id", e.sessionID(), "params.arguments.session_id")
		var meta gjson.Result
		if e.meta.IsObject() {
			meta = e.meta.Get(gjsonEscape("io.modelcontextprotocol/protocolVersion"))
		}
		check("protocol version", meta, metaKey)
		if want := gjson.Get(line, "result").Exists() || gjson.Get(line, "error").Exists(); e.answer() != want {
			t.Errorf("%.60s: answer %v, want %v", line, e.answer(), want)
		}
	}
}

// BenchmarkParseEnvelope: reading a ~2 KB save's envelope.
func BenchmarkParseEnvelope(b *testing.B) {
	line := `{"id":12,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"messages":[{"content":"` +
		strings.Repeat(`some text \"quoted\" with escapes\n`, 60) + `","id":"m12","role":"user"}],"session_id":"s1"},"name":"session_save"}}`
	for b.Loop() {
		e := parseEnvelope(gjson.Parse(line))
		if e.sessionID().Str != "s1" {
			b.Fatal("no session id")
		}
	}
}

// TestNormalizeID: the key of an id of every JSON shape is what the round trip through
// encoding/json gives, and what mcp-go echoes in its answer; ids that are neither strings nor
// numbers have none.
func TestNormalizeID(t *testing.T) {
	srv := server.NewMCPServer("t", "1")
	for _, raw := range []string{
		`0`, `-0`, `1`, `-1`, `7`, `42`, `123456789012345`, `-123456789012345`, `1234567890123456`, `9007199254740993`,
		`12345678901234567890`, `1.0`, `1.5`, `-2.25`, `1e3`, `1E3`, `1e+3`, `-1e-7`, `0.1`, `100e-2`, `1e21`, `1e400`, `01`, `-`, `+1`,
		` 1`, `1 `, `""`, `"a"`, `"req-1"`, `"with space"`, `"~!@#$%^*()_+{}|:?[];',./"`, `"<&>"`, `"\u00e9"`, `"é"`, `"\"q\""`,
		`"a\/b"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\u2028\"", "\"\xff\"", "\"a\tb\"", `"\n"`, `"\u0041"`, `"x`, `x"`, `"`,
		`true`, `false`, `null`, `{}`, `[]`, `[1]`, `{"a":1}`, ``,
	} {
		var v any
		wantOK := json.Unmarshal([]byte(raw), &v) == nil && v != nil
		var want string
		switch v.(type) {
		case string, float64:
			b, _ := json.Marshal(v)
			want = string(b)
		default:
			wantOK = false
		}
		got, ok := normalizeID(raw)
		if ok != wantOK || got != want {
			t.Errorf("normalizeID(%s) = %s, %v; want %s, %v", raw, got, ok, want, wantOK)
		}
		if !ok || !gjson.Valid(raw) {
			continue
		}
		resp := srv.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":`+raw+`,"method":"ping"}`))
		b, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if echoed := gjson.GetBytes(b, "id").Raw; echoed != got {
			t.Errorf("id %s: key %s, mcp-go echoes %s", raw, got, echoed)
		}
	}
}

// BenchmarkNormalizeID: the key of a request's id.
func BenchmarkNormalizeID(b *testing.B) {
	for _, raw := range []string{`1234`, `"req-1234"`, `1.5`} {
		b.Run(raw, func(b *testing.B) {
			for b.Loop() {
				if _, ok := normalizeID(raw); !ok {
					b.Fatal("no key")
				}
			}
		})
	}
}

// TestSentArgumentsReadAsRaw: a tool gets the arguments ServeStdio took out of a message
// (their fields, read by parseEnvelope) exactly as it gets them from RawArguments (HTTP):
// of duplicate keys the last counts, escaped keys and null values are what they decode to.
func TestSentArgumentsReadAsRaw(t *testing.T) {
	show := func(fs []Field, err error) string {
		var b strings.Builder
		for _, f := range fs {
			fmt.Fprintf(&b, "%q=%s(%v) ", f.Key, f.Value.Raw, f.Value.Type)
		}
		fmt.Fprint(&b, err)
		return b.String()
	}
	for _, sentArgs := range []string{
		`{}`,
		`{"session_id":"a","max_tokens":2000,"messages":[{"role":"user","content":"x"}]}`,
		`{"session_id":"a","session_id":"b"}`,
		`{"session_id":null,"max_tokens":null}`,
		`{"session_id":"a","session_id":null}`,
		`{"x":1,"x":2,"y":3,"session_id":"s"}`,
		`{"session\u005fid":"s","max\u005ftokens":1.5}`,
		`{"messages":{"role":"user"},"max_tokens":"many"}`,
	} {
		env := parseEnvelope(gjson.Parse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + sentArgs + `}}`))
		sent := show(Arguments(withSentArguments(context.Background(), env.argFields), mcp.CallToolRequest{}))
		var req mcp.CallToolRequest
		req.Params.RawArguments = json.RawMessage(sentArgs)
		if raw := show(Arguments(context.Background(), req)); sent != raw {
			t.Errorf("%s: taken by ServeStdio %s, from RawArguments %s", sentArgs, sent, raw)
		}
	}
	fs, err := Arguments(withSentArguments(context.Background(), parseEnvelope(gjson.Parse(
		`{"params":{"arguments":{"session_id":"a","session_id":"b","x":1,"x":2}}}`)).argFields), mcp.CallToolRequest{})
	if s, _ := Last(fs, "session_id"); s.Str != "b" || err != nil || len(fs) != 4 {
		t.Errorf("duplicates: %q, %v", s.Str, err)
	}
}

// TestSequencerScopeIsToolSession: a tools/call is ordered (classify's scope) by the session
// its tool reads from the same arguments (Last), duplicate keys included: ordered by another
// one, a save could run beside a save of the session it writes.
func TestSequencerScopeIsToolSession(t *testing.T) {
	save := func(tool string) (Order, bool) {
		return Order{Write: true, Scope: ScopeSession, Creates: true}, tool == "session_save"
	}
	for _, sentArgs := range []string{
		`{"session_id":"a"}`,
		`{"session_id":"a","session_id":"b"}`,
		`{"session_id":"a","messages":[{"session_id":"c"}],"session_id":"b"}`,
		`{"session_id":"a","session_id":null}`,
		`{"session\u005fid":"a","session_id":"b"}`,
		`{"session_id":"a","session\u005fid":"b"}`,
		`{"working_dir":"/p"}`,
	} {
		env := parseEnvelope(gjson.Parse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"session_save","arguments":` + sentArgs + `}}`))
		fs, _ := Arguments(withSentArguments(context.Background(), env.argFields), mcp.CallToolRequest{})
		sid := ""
		if v, _ := Last(fs, "session_id"); v.Type == gjson.String {
			sid = v.Str
		}
		p := &pending{}
		(&stdioConn{opts: StdioOptions{Orders: save}}).classify(p, string(mcp.MethodToolsCall), &env)
		if sid != "" && p.scope != "s:"+sid || sid == "" && strings.HasPrefix(p.scope, "s:") {
			t.Errorf("%s: ordered as %q, the tool writes session %q", sentArgs, p.scope, sid)
		}
	}
}

// TestTakeArguments: ServeStdio takes a tools/call's arguments out of the message mcp-go
// decodes, as sent (every digit, key order, escapes).
func TestTakeArguments(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"session_save","arguments":{"working_dir":"/p","messages":[{"role":"assistant","content":[{"type":"tool_call","id":"c","name":"n","arguments":{"z":12345678901234567890123,"a":"\u003c&>"}}]}]}}}`
	p := &pending{line: []byte(line)}
	env := parseEnvelope(gjson.Parse(line))
	(&stdioConn{}).takeArguments(p, &env)
	var taken []string
	for _, f := range p.args {
		taken = append(taken, f.Key+"="+f.Value.Raw)
	}
	want := []string{"working_dir=" + gjson.Get(line, "params.arguments.working_dir").Raw, "messages=" + gjson.Get(line, "params.arguments.messages").Raw}
	if !p.taken || !slices.Equal(taken, want) {
		t.Fatalf("arguments taken: %q, want %q", taken, want)
	}
	if got := gjson.GetBytes(p.line, "params.arguments").Raw; got != "{}" || gjson.GetBytes(p.line, "params.name").Str != "session_save" {
		t.Fatalf("message left: %s", p.line)
	}
}
