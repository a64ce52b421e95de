package transport

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// TestHasSurrogateEscape: the scan from backslash to backslash finds what testing every byte
// finds, on every string of up to 7 bytes over the bytes that matter and on random longer ones.
func TestHasSurrogateEscape(t *testing.T) {
	byteByByte := func(b []byte) bool {
		for i := 0; i+5 < len(b); i++ {
			if b[i] == '\\' && b[i+1] == 'u' && (b[i+2]|0x20) == 'd' && strings.IndexByte("89abcdefABCDEF", b[i+3]) >= 0 {
				return true
			}
		}
		return false
	}
	const alphabet = `\uDd8fF0x`
	check := func(b []byte) {
		if got, want := hasSurrogateEscape(b), byteByByte(b); got != want {
			t.Fatalf("%q: %v, want %v", b, got, want)
		}
	}
	var all func(b []byte, n int)
	all = func(b []byte, n int) {
		check(b)
		if n == 0 {
			return
		}
		for i := range len(alphabet) {
			all(append(b, alphabet[i]), n-1)
		}
	}
	all(nil, 7)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		check(b)
	}
}

// BenchmarkCheckUTF8: the check every message read goes through, on ~2 KB corpus messages
// (JSON-encoded, so with their escapes).
func BenchmarkCheckUTF8(b *testing.B) {
	msgs := transcripttest.Sized(b, 64, 1024, 4096)
	lines := make([][]byte, len(msgs))
	for i, m := range msgs {
		var err error
		if lines[i], err = json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		if _, changed := CheckUTF8(lines[i%len(lines)]); changed {
			b.Fatal("changed")
		}
		i++
	}
}

func TestCheckUTF8Paths(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":"ok","b":["x","\udc00"]}`, "b[1]"},
		{`{"m":[{"c":[{"t":"ok"},{"t":"\ud83d\ude00 fine"},{"t":"\ud83d alone"}]}]}`, "m[0].c[2].t"},
		{"{\"k\xff\":1}", "k\uFFFD (a key)"},
		{`{"a":"\ud83d\ude00"}`, ""},
	}
	for _, tc := range cases {
		msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + tc.in + `}}`
		out, changed := CheckUTF8([]byte(msg))
		if tc.want == "" {
			if changed {
				t.Errorf("%s: changed to %s", tc.in, out)
			}
			continue
		}
		if got := gjson.GetBytes(out, `params._meta.sessionmem/invalid-utf8`).String(); got != tc.want {
			t.Errorf("%q: path %q, want %q", tc.in, got, tc.want)
		}
	}
}
