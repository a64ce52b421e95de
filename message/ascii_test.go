package message

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
)

// asciiValues are JSON texts whose strings hold what AppendASCII and WireChars must handle:
// every UTF-8 length, astral characters, U+2028, invalid UTF-8, HTML characters, escapes.
func asciiValues(rng *rand.Rand, n int) []string {
	fixed := []string{
		`""`, `"plain"`, `"é"`, `"€"`, `"😀"`, `"a\u2028b"`, "\"\xff\"", "\"\xe2\x82\"", `"<a href=x>&amp;</a>"`,
		`{"k":"日本語 and 😀😀","n":[1,2.5,true,null]}`, `"` + strings.Repeat("long plain run ", 40) + `é"`,
		`"12345678é12345678<12345678😀"`,
	}
	for range n {
		fixed = append(fixed, jsontest.Value(rng, 0, jsontest.InputString))
	}
	return fixed
}

func TestAppendASCII(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 25))
	for _, v := range asciiValues(rng, 3000) {
		if !json.Valid([]byte(v)) {
			continue
		}
		got := AppendASCII([]byte("prefix:"), []byte(v))
		if !bytes.HasPrefix(got, []byte("prefix:")) {
			t.Fatalf("%q: prefix lost", v)
		}
		got = got[len("prefix:"):]
		if !IsASCII(got) {
			t.Fatalf("%q: output %q is not ASCII", v, got)
		}
		// The same value: what encoding/json reads from both (it turns invalid UTF-8 into
		// U+FFFD, as AppendASCII does).
		var want, have any
		if err := json.Unmarshal([]byte(v), &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &have); err != nil {
			t.Fatalf("%q: output %q is not JSON: %v", v, got, err)
		}
		w, _ := json.Marshal(want)
		h, _ := json.Marshal(have)
		if !bytes.Equal(w, h) {
			t.Fatalf("%q: value changed: %s, want %s", v, h, w)
		}
		if utf8.Valid([]byte(v)) && IsASCII([]byte(v)) && string(got) != v {
			t.Fatalf("%q: ASCII input changed to %q", v, got)
		}
	}
}

// WireChars is exactly the length of the widest writing of a text: AppendASCII of it with <,
// > and & escaped. It is never less than encoding/json's length of the value in characters.
func TestWireChars(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 25))
	for _, v := range asciiValues(rng, 3000) {
		if !json.Valid([]byte(v)) {
			continue
		}
		var html bytes.Buffer
		json.HTMLEscape(&html, []byte(v))
		widest := AppendASCII(nil, html.Bytes())
		if got := WireChars([]byte(v)); got != len(widest) {
			t.Fatalf("%q: WireChars = %d, widest writing %q has %d", v, got, widest, len(widest))
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			t.Fatal(err)
		}
		enc, _ := json.Marshal(val)
		// (Strings only: encoding/json writes numbers its own way.)
		if got, std := WireChars([]byte(v)), utf8.RuneCount(enc); got < std && v[0] == '"' {
			t.Fatalf("%q: WireChars = %d, below encoding/json's %d characters", v, got, std)
		}
		if got, again := WireChars([]byte(v)), WireChars(AppendASCII(nil, []byte(v))); got != again {
			t.Fatalf("%q: WireChars changes once written by AppendASCII: %d, then %d", v, got, again)
		}
	}
}

func BenchmarkWireChars(b *testing.B) {
	page := []byte(strings.Repeat(`{"role":"tool_result","content":[{"type":"text","text":"func main() {\n\tif a < b && c > d { fmt.Println(\"héllo ─ world\") }\n}"}]}`, 2000))
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		WireChars(page)
	}
}

func BenchmarkAppendASCII(b *testing.B) {
	page := []byte(strings.Repeat(`{"role":"tool_result","content":[{"type":"text","text":"func main() {\n\tif a < b && c > d { fmt.Println(\"héllo ─ world\") }\n}"}]}`, 2000))
	out := make([]byte, 0, len(page)*2)
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		out = AppendASCII(out[:0], page)
	}
}
