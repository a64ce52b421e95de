package memory_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/redact"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// The gate returns clean tool-call arguments as they are without decoding them into maps
// (cleanJSON); these tests check that it stores exactly what the general way stores, with the
// real redactor and with hooks that react to how strings are decoded.

func gateHooks(t testing.TB) map[string]func(string) string {
	r, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]func(string) string{
		"redactor": r.String,
		// U+FFFD appears only where decoding replaced something (invalid bytes, surrogates).
		"replacement": func(s string) string { return strings.ReplaceAll(s, "\uFFFD", "?") },
		// Decoded escapes: control characters, quotes, backslashes, supplementary runes.
		"escapes": func(s string) string {
			if strings.ContainsAny(s, "\n\t\"\\/\b\f\r\x00😀") {
				return "[" + s + "]"
			}
			return s
		},
		"word": func(s string) string { return strings.ReplaceAll(s, "secret", "[x]") },
	}
}

func checkRedactJSON(t *testing.T, hooks map[string]func(string) string, raw string) {
	t.Helper()
	for name, hook := range hooks {
		got, want := memory.RedactJSONBoth(hook, []byte(raw))
		if !bytes.Equal(got, want) {
			t.Fatalf("%s hook, %q:\n got %s\nwant %s", name, raw, got, want)
		}
	}
}

func TestRedactJSONClean(t *testing.T) {
	hooks := gateHooks(t)
	for _, raw := range []string{
		`{"path":"a.go"}`,
		`{ "command" : "curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789'" }`,
		`{"password":"hunter2hunter2","n":[1,2.5e3,true,null,{"k":"v"}]}`,
		`{"s\u0065cret":"x","v":"a secret"}`,
		`{"a":"secret","a":"clean"}`,
		`{"a":"\ud83d\ude00 \ud83d \ude00 \u0000 \n\t\"\\\/"}`,
		"{\"a\":\"\xff\xe2\x82 \xed\xa0\x80\"}",
		`{"a":"x"} trailing`,
		`{"a" "x"}`,
		`"secret"`, `["secret", 1]`, `12`, `null`, ``,
	} {
		checkRedactJSON(t, hooks, raw)
	}
	for _, m := range transcripttest.Sized(t, 3000, 0, 1<<30) {
		for _, b := range m.Content {
			if len(b.Arguments) > 0 {
				checkRedactJSON(t, hooks, string(b.Arguments))
			}
		}
	}
}

// TestRedactJSONShadowedKey: a value under a repeated key is invisible once decoded (the last
// one wins) but is in the bytes; the gate must not store it as sent.
func TestRedactJSONShadowedKey(t *testing.T) {
	word := gateHooks(t)["word"]
	for _, raw := range []string{
		`{"a":"secret","a":"clean"}`,
		`{"a":{"b":"a secret"},"a":1}`,
		`[{"k":["secret"],"k":[]}]`,
		`{"secret":1,"secret":2}`,
	} {
		got, want := memory.RedactJSONBoth(word, []byte(raw))
		if bytes.Contains(got, []byte("secret")) || !bytes.Equal(got, want) {
			t.Errorf("%s: stored %s (the general way: %s)", raw, got, want)
		}
	}
}

// TestRedactJSONDeep: arguments nested deeper than cleanJSON's reader follows go the general
// way, and a secret deep inside is still redacted.
func TestRedactJSONDeep(t *testing.T) {
	hooks := gateHooks(t)
	for _, levels := range []int{400, 600} {
		for _, leaf := range []string{`"clean"`, `"a secret"`} {
			raw := strings.Repeat(`{"k":[`, levels/2) + leaf + strings.Repeat(`]}`, levels/2)
			checkRedactJSON(t, hooks, raw)
			if got, _ := memory.RedactJSONBoth(hooks["word"], []byte(raw)); bytes.Contains(got, []byte("secret")) {
				t.Errorf("%d levels: the secret was stored", levels)
			}
		}
	}
}

// TestRedactJSONHookKeepsStrings: the hook may keep the strings it is given; cleanJSON decodes
// them into one buffer it reuses, so each must reach the hook as a copy of its own.
func TestRedactJSONHookKeepsStrings(t *testing.T) {
	var kept []string
	hook := func(s string) string { kept = append(kept, s); return s }
	raw := `{"path":"a.go","n":["first","second \u00e9 \n"],"plain keys and values":"the last one"}`
	memory.RedactJSONBoth(hook, []byte(raw))
	want := []string{"path", "a.go", "n", "first", "second é \n", "plain keys and values", "the last one"}
	if len(kept) < len(want) || strings.Join(kept[:len(want)], "|") != strings.Join(want, "|") {
		t.Fatalf("the hook kept %q, want %q first", kept, want)
	}
}

func TestRedactJSONRandom(t *testing.T) {
	hooks := gateHooks(t)
	rng := rand.New(rand.NewPCG(2, 6))
	for range 5000 {
		raw := randomArguments(rng, 0)
		checkRedactJSON(t, hooks, raw)
		checkRedactJSON(t, hooks, jsontest.Damage(rng, raw))
	}
}

func FuzzRedactJSON(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 30 {
		f.Add(randomArguments(rng, 0))
	}
	hooks := gateHooks(f)
	f.Fuzz(func(t *testing.T, raw string) { checkRedactJSON(t, hooks, raw) })
}

// randomArguments returns a random JSON value whose strings mix the decoder's odd cases
// with words the hooks react to.
func randomArguments(rng *rand.Rand, depth int) string {
	switch n := rng.IntN(8); {
	case n == 0 || depth > 3:
		return jsontest.Pick(rng, `null`, `true`, `-0.5e3`, `17`)
	case n < 3:
		return jsontest.InputString(rng)
	case n == 3:
		return jsontest.Pick(rng, `"a secret"`, `"s\u0065cret"`, `"password=hunter2hunter2"`, `"sk-ant-api03-`+strings.Repeat("a", 90)+`"`)
	case n == 4:
		var parts []string
		for range rng.IntN(4) {
			parts = append(parts, randomArguments(rng, depth+1))
		}
		return "[" + strings.Join(parts, ","+jsontest.Space(rng)) + "]"
	}
	var members []string
	for range rng.IntN(4) {
		k, _ := json.Marshal(jsontest.Pick(rng, "path", "command", "secret", "api_key", "content"))
		if rng.IntN(3) == 0 {
			k = []byte(jsontest.InputString(rng))
		}
		members = append(members, string(k)+":"+randomArguments(rng, depth+1))
	}
	return jsontest.Object(rng, members)
}
