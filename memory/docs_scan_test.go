package memory

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
)

// checkTextScan fails when messageTextScan reads raw and gives another text than
// messageText; it reports whether the scan read it.
func checkTextScan(t *testing.T, raw string) bool {
	t.Helper()
	got, ok := messageTextScan(raw)
	if !ok {
		return false
	}
	if want := messageText(gjson.Parse(raw)); got != want {
		t.Fatalf("message %s:\nscan  %q\ngjson %q", raw, got, want)
	}
	return true
}

// MessageTextScan and MessageTextGJSON are the two readers, for the benchmark.
func MessageTextScan(raw string) (string, bool) { return messageTextScan(raw) }
func MessageTextGJSON(raw string) string        { return messageText(gjson.Parse(raw)) }

// MessageTextBoth returns what the one-pass reader and messageText make of a message's JSON,
// for the corpus test (package memory_test: the corpus helpers import memory).
func MessageTextBoth(raw string) (scan string, ok bool, want string) {
	scan, ok = messageTextScan(raw)
	return scan, ok, messageText(gjson.Parse(raw))
}

// TestMessageTextScanCases: shapes a client or an older build may have stored.
func TestMessageTextScanCases(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		read bool // the scan reads it (else messageText does)
	}{
		{`{"role":"user","content":"plain text"}`, true},
		{`{"role":"user","content":"  \n\t "}`, true},
		{`{"role":"user","content":"line\nnext \"quoted\" \u00e9 \ud83d\ude00 \ud800 lone \/ slash"}`, true},
		{`{"role":"user","content":null}`, true},
		{`{"role":"user"}`, true},
		{`{"content":"first","content":"second"}`, true},
		{`{"role":"assistant","content":[{"text":"type comes last","type":"text"},{"type":"thinking","thinking":"hmm"}]}`, true},
		{`{"content":[{"type":"text","text":"one","text":"two"},{"type":"t\u0065xt","text":"escaped type"}]}`, true},
		{`{"content":[{"type":"text"},{"type":"text","text":"   "},{"type":"text","text":"\u2028\u00a0"},{"type":"text","text":"after blanks"}]}`, true},
		{`{"content":[{"type":"tool_call","id":"c1","name":"bash","arguments":{"command":"go test ./...","env":["A=1","  ",{"deep":["x"]}],"n":3,"f":false,"z":null}}]}`, true},
		{`{"content":[{"type":"tool_call","name":"  ","arguments":"{\"path\":\"/a\"}"}]}`, true},
		{`{"content":[{"type":"tool_call","name":"read"}]}`, true},
		{`{"content":[{"type":"tool_result","tool_call_id":"c1","content":[{"type":"text","text":"out"},{"type":"tool_result","content":"nested"}]},{"type":"tool_result","content":"flat"}]}`, true},
		{`{"content":[{"type":"image","data":"AAAA","text":"not a text block"},"a string",7,null,[1],{"type":5,"text":"no kind"},{"type":"text","type":"thinking","text":"first type counts"}]}`, true},
		{`{"content":[{"type":"text","text":"invalid ` + "\xff" + ` byte, no escape"}]}`, true},
		{`{"content":[{"type":"text","text":"invalid ` + "\xff" + ` byte\nwith an escape"}]}`, false},
		{`{"content":[{"type":"text","text":42}]}`, false},
		{`{"content":{"a":{"type":"text","text":"an object"}}}`, false},
		{`{"content":17}`, false},
		{`{"cont\u0065nt":"escaped key"}`, false},
		{`{"content":[{"type":"tool_result","content":{"x":{"type":"text","text":"object content"}}}]}`, false},
		{`{"content":[{"type":"tool_call","name":"x","arguments":` + strings.Repeat("[", 80) + `"deep"` + strings.Repeat("]", 80) + `}]}`, false},
	} {
		if got := checkTextScan(t, tc.raw); got != tc.read {
			t.Errorf("%s: read by the scan %v, want %v", tc.raw, got, tc.read)
		}
	}
}

// TestMessageTextScanRandom: random blocks of every kind, with awkward strings and any values
// where strings belong, give messageText's text whenever the scan reads them.
func TestMessageTextScanRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 1))
	str := func(rng *rand.Rand) string {
		if rng.IntN(3) == 0 {
			return jsontest.Pick(rng, `"text"`, `"thinking"`, `"tool_call"`, `"tool_result"`, `"type"`, `"content"`, `"arguments"`, `"name"`, `" "`, `""`)
		}
		return jsontest.InputString(rng)
	}
	var block func(depth int) string
	block = func(depth int) string {
		var members []string
		for range rng.IntN(5) {
			key := jsontest.Pick(rng, `"type"`, `"text"`, `"thinking"`, `"name"`, `"arguments"`, `"content"`, `"id"`)
			var v string
			switch {
			case key == `"content"` && depth < 3 && rng.IntN(2) == 0:
				var els []string
				for range rng.IntN(4) {
					els = append(els, block(depth+1))
				}
				v = "[" + strings.Join(els, ",") + "]"
			case rng.IntN(3) == 0:
				v = jsontest.Value(rng, 0, str)
			default:
				v = str(rng)
			}
			members = append(members, key+":"+v)
		}
		return jsontest.Object(rng, members)
	}
	read := 0
	const n = 20000
	for range n {
		var els []string
		for range rng.IntN(5) {
			els = append(els, block(0))
		}
		content := "[" + strings.Join(els, ",") + "]"
		if rng.IntN(8) == 0 {
			content = str(rng)
		}
		raw := `{"role":"assistant","content":` + content + `}`
		if !gjson.Valid(raw) {
			continue
		}
		if checkTextScan(t, raw) {
			read++
		}
	}
	if read < n/4 {
		t.Fatalf("the scan read only %d of %d messages", read, n)
	}
	t.Logf("the scan read %d of %d messages", read, n)
}
