package mcpserver

import (
	"strings"
	"testing"

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
