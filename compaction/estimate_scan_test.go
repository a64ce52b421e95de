package compaction

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
)

// The one-pass estimate (scanMessageChars) must give exactly what reading the message with
// gjson gives (messageChars, the definition), for every input: these tests compare the two on
// odd shapes, the fixtures, the corpus, random messages and fuzzed bytes.

// oracleChars is the estimate's definition: messageChars over gjson's reading.
func oracleChars(msg string) (chars, images int) {
	return messageChars(gjson.Get(msg, "content"))
}

// checkScan fails t unless EstimateMessage agrees with the definition on msg; wantFast also
// requires the one-pass scan to have read it (not left it to gjson).
func checkScan(t *testing.T, msg string, wantFast bool) {
	t.Helper()
	wc, wi := oracleChars(msg)
	c, i, ok := scanMessageChars(msg)
	if ok && (c != wc || i != wi) {
		t.Fatalf("scanMessageChars(%q) = %d chars, %d images; gjson reads %d, %d", msg, c, i, wc, wi)
	}
	if !ok && wantFast {
		t.Fatalf("scanMessageChars(%q) declined a message it should read", msg)
	}
	if got, want := EstimateMessage([]byte(msg)), ceilDiv4(wc)+wi*ImageTokens; got != want {
		t.Fatalf("EstimateMessage(%q) = %d, want %d", msg, got, want)
	}
}

func TestScanMessageCharsShapes(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		fast bool // the one-pass scan reads it
	}{
		{"string content", `{"role":"user","content":"abcdefgh"}`, true},
		{"empty list", `{"role":"user","content":[]}`, true},
		{"empty object", `{}`, true},
		{"no content", `{"role":"user"}`, true},
		{"null content", `{"role":"user","content":null}`, true},
		{"object content", `{"role":"user","content":{"type":"text","text":"abcd"}}`, true},
		{"number content", `{"content":12.5e3}`, true},
		{"content first", `{"content":"xyz","role":"user"}`, true},
		{"content repeated: first counts", `{"content":"ab","content":"abcdefghijkl"}`, true},
		{"whitespace everywhere", " \n{ \"role\" : \"user\" ,\t\"content\" : [ { \"type\" : \"text\" , \"text\" : \"abc\" } ] } \n", true},
		{"multibyte", `{"content":"ééé€€😀"}`, true},
		{"escapes", `{"content":"a\nb\t\"c\\d\/e\b\f\r"}`, true},
		{"unicode escapes", `{"content":"\u00e9\u20AC\u0041"}`, true},
		{"surrogate pair", `{"content":"x\ud83d\ude00y"}`, true},
		{"lone high surrogate", `{"content":"x\ud83dy"}`, true},
		{"high surrogate then non-low escape", `{"content":"\ud83d\u0041"}`, true},
		{"two high surrogates", `{"content":"\ud83d\ud83d\ude00"}`, true},
		{"lone low surrogate", `{"content":"\ude00\ude00"}`, true},
		{"high surrogate at end", `{"content":"\ud83d"}`, true},
		{"high surrogate then short escape", `{"content":"\ud83d\n"}`, true},
		{"invalid utf-8", "{\"content\":\"a\xffb\xe2\x82\"}", true},
		{"invalid utf-8 before escape", "{\"content\":\"\xe2\x82\\u00e9\xa9\"}", true},
		{"text and thinking", `{"content":[{"type":"text","text":"abcd"},{"type":"thinking","thinking":"abcd","signature":"zzzz"}]}`, true},
		{"type after text", `{"content":[{"text":"abcdef","type":"text"}]}`, true},
		{"repeated text: first counts", `{"content":[{"type":"text","text":"a","text":"abcdefgh"}]}`, true},
		{"repeated type: first counts", `{"content":[{"type":"image","type":"text","text":"abcdefgh"}]}`, true},
		{"unknown type", `{"content":[{"type":"audio","text":"abcdefgh"}]}`, true},
		{"no type", `{"content":[{"text":"abcdefgh"}]}`, true},
		{"empty block", `{"content":[{}]}`, true},
		{"tool call pretty args", `{"content":[{"type":"tool_call","id":"c1","name":"read","arguments":{ "path" : "a b",` + "\n\t" + `"n": [1, 2.5, -3e2, true, null] }}]}`, true},
		{"tool call no args", `{"content":[{"type":"tool_call","id":"c1","name":"read"}]}`, true},
		{"tool call null args", `{"content":[{"type":"tool_call","name":"read","arguments":null}]}`, true},
		{"tool call string args", `{"content":[{"type":"tool_call","name":"r","arguments":"{\"a\": \"b\\n\"}"}]}`, true},
		{"tool call number args", `{"content":[{"type":"tool_call","name":"r","arguments":-0.5E+3}]}`, true},
		{"tool call array args", `{"content":[{"type":"tool_call","name":"r","arguments":[ 1 , "é" ]}]}`, true},
		{"tool call escaped args", `{"content":[{"type":"tool_call","name":"r","arguments":{"p":"\u00e9 \ud83d\ude00 \"x\""}}]}`, true},
		{"tool call repeated args", `{"content":[{"type":"tool_call","name":"r","arguments":{"a":1},"arguments":{"bbbbbbbb":2}}]}`, true},
		{"tool result string", `{"content":[{"type":"tool_result","tool_call_id":"c1","content":"abcd","is_error":false}]}`, true},
		{"tool result blocks and image", `{"content":[{"type":"tool_result","tool_call_id":"c1","content":[{"type":"text","text":"abcdabcd"},{"type":"image","media_type":"image/png","data":"xxxx"}]}]}`, true},
		{"tool result nested tool result", `{"content":[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"text","text":"deep"},{"type":"image"}]}]}]}`, true},
		{"tool result content before type", `{"content":[{"content":"abcdefgh","type":"tool_result"}]}`, true},
		{"tool result null content", `{"content":[{"type":"tool_result","content":null}]}`, true},
		{"tool result object content", `{"content":[{"type":"tool_result","content":{"text":"abcd"}}]}`, true},
		{"text block with content", `{"content":[{"type":"text","text":"ab","content":"abcdefgh"}]}`, true},
		{"images", `{"content":[{"type":"image","media_type":"image/png","data":"xxxxxxxx"},{"type":"image"}]}`, true},
		{"usage not counted", `{"role":"assistant","content":"abcd","usage":{"input_tokens":5000,"output_tokens":7}}`, true},
		{"keys before content of every kind", `{"a":[1,{"b":null}],"c":true,"d":false,"e":-0,"f":1.5e-3,"g":"\u0041","content":"abc"}`, true},
		{"trailing garbage after content", `{"content":"abc"} xyz`, true},

		// Declined: gjson's lenient reading decides.
		{"not an object", `["content"]`, false},
		{"string holding an object", `"{\"content\":\"abcd\"}"`, false},
		{"escaped key", `{"con\u0074ent":"abcdefgh"}`, false},
		{"escaped type", `{"content":[{"type":"t\u0065xt","text":"abcdefgh"}]}`, false},
		{"string block", `{"content":["{\"type\":\"text\",\"text\":\"abcd\"}"]}`, false},
		{"null block", `{"content":[null,{"type":"text","text":"ab"}]}`, false},
		{"number text", `{"content":[{"type":"text","text":12345}]}`, false},
		{"number type", `{"content":[{"type":7,"text":"abcd"}]}`, false},
		{"raw newline in string", "{\"content\":\"a\nb\\nc\"}", false},
		{"bad escape", `{"content":"a\qb"}`, false},
		{"short unicode escape", `{"content":"a\u12"}`, false},
		{"unterminated", `{"content":"abc`, false},
		{"trailing comma", `{"role":"user",}`, false},
		{"missing colon", `{"role" "user","content":"ab"}`, false},
		{"bad number before content", `{"n":01,"content":"abcd"}`, false},
		{"bad literal before content", `{"n":tru,"content":"abcd"}`, false},
		{"invalid args", `{"content":[{"type":"tool_call","name":"r","arguments":{"a" 1}}]}`, false},
		{"empty", ``, false},
		{"garbage", `}{][`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkScan(t, tt.msg, tt.fast) })
	}
}

// TestScanMessageCharsDeep: tool results and arguments nested deeper than maxScanDepth are
// left to gjson's reading, and EstimateMessage still gives its figures.
func TestScanMessageCharsDeep(t *testing.T) {
	results := func(levels int) string {
		return `{"content":` + strings.Repeat(`[{"type":"tool_result","content":`, levels) +
			`[{"type":"text","text":"deep"},{"type":"image"}]` + strings.Repeat(`}]`, levels) + `}`
	}
	args := func(levels int) string {
		return `{"content":[{"type":"tool_call","name":"r","arguments":` +
			strings.Repeat("[", levels) + `"é"` + strings.Repeat("]", levels) + `}]}`
	}
	for _, tt := range []struct {
		msg  string
		fast bool
	}{
		{results(maxScanDepth - 2), true},
		{results(maxScanDepth + 10), false},
		{args(maxScanDepth - 2), true},
		{args(maxScanDepth + 10), false},
	} {
		checkScan(t, tt.msg, tt.fast)
		if _, _, ok := scanMessageChars(tt.msg); ok != tt.fast {
			t.Fatalf("%.60q...: scanMessageChars read it: %v, want %v", tt.msg, ok, tt.fast)
		}
	}
}

// TestScanMessageCharsFixtures compares the two readings on every message of the fixtures
// and, when present, the shared corpus; all of them are read in one pass.
func TestScanMessageCharsFixtures(t *testing.T) {
	n := 0
	for _, f := range fixtures {
		for _, e := range readEntries(t, f.name) {
			if e.Kind == KindMessage {
				checkScan(t, string(e.Message), true)
				n++
			}
		}
	}
	if _, err := os.Stat(corpusDir); err == nil {
		for _, name := range corpusFiles {
			for _, e := range loadCorpus(t, name) {
				if e.Kind == KindMessage {
					checkScan(t, string(e.Message), true)
					n++
				}
			}
		}
	}
	t.Logf("%d messages", n)
}

// TestScanMessageCharsRandom compares the two readings on random messages of every shape and
// on random damage to them.
func TestScanMessageCharsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 20000 {
		msg := randomMessage(rng)
		checkScan(t, msg, false)
		checkScan(t, jsontest.Damage(rng, msg), false)
	}
}

func FuzzEstimateMessage(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 50 {
		f.Add(randomMessage(rng))
	}
	f.Add(`{"content":[{"type":"tool_call","name":"r","arguments":{ "a" : [1, "\ud83d\ude00"] }}]}`)
	f.Fuzz(func(t *testing.T, msg string) { checkScan(t, msg, false) })
}

// randomMessage returns a message in the contract's shape with random strings (escapes,
// surrogates, invalid bytes), random key order, repeated and unknown keys, odd field types
// and whitespace.
func randomMessage(rng *rand.Rand) string {
	members := []string{`"role":` + randomString(rng), `"content":` + randomContent(rng, 0)}
	if rng.IntN(4) == 0 {
		members = append(members, `"usage":{"input_tokens":12,"output_tokens":3}`)
	}
	if rng.IntN(8) == 0 {
		members = append(members, `"content":`+randomContent(rng, 0))
	}
	return jsontest.Object(rng, members)
}

func randomContent(rng *rand.Rand, depth int) string {
	switch rng.IntN(10) {
	case 0:
		return randomString(rng)
	case 1:
		return jsontest.Value(rng, 1, randomString)
	}
	var b strings.Builder
	b.WriteString("[")
	for i := range rng.IntN(5) {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(jsontest.Space(rng))
		b.WriteString(randomBlock(rng, depth))
	}
	b.WriteString("]")
	return b.String()
}

var blockTypes = []string{"text", "thinking", "tool_call", "tool_result", "image", "audio", ""}

func randomBlock(rng *rand.Rand, depth int) string {
	if rng.IntN(30) == 0 {
		return jsontest.Value(rng, 1, randomString)
	}
	var members []string
	if rng.IntN(12) != 0 {
		members = append(members, `"type":"`+blockTypes[rng.IntN(len(blockTypes))]+`"`)
	}
	fields := []string{"text", "thinking", "name", "arguments", "content", "id", "tool_call_id", "data", "type"}
	for range 1 + rng.IntN(5) {
		k := fields[rng.IntN(len(fields))]
		var v string
		switch {
		case k == "arguments":
			v = jsontest.Value(rng, 0, randomString)
		case k == "content" && depth < 3:
			v = randomContent(rng, depth+1)
		case k == "type":
			v = `"` + blockTypes[rng.IntN(len(blockTypes))] + `"`
		case rng.IntN(15) == 0:
			v = jsontest.Value(rng, 1, randomString)
		default:
			v = randomString(rng)
		}
		members = append(members, `"`+k+`":`+v)
	}
	return jsontest.Object(rng, members)
}

// stringParts are the pieces random strings are made of.
var stringParts = append([]string{
	"a", "Z", " ", "é", "€", "😀", "\xff", "\xe2\x82", "\x80", "{", "}", "[", "]", ":", ",",
}, jsontest.Escapes...)

func randomString(rng *rand.Rand) string {
	return `"` + jsontest.Pieces(rng, stringParts, 12) + `"`
}

// BenchmarkEstimateOnePass compares the one-pass estimate with gjson's reading on the corpus
// messages of 1 to 4 KB (about 2 KB on average, what a save carries), or on the fixtures'
// messages when the corpus is absent.
//
//	go test -run '^$' -bench EstimateOnePass -count 10 ./compaction/
func BenchmarkEstimateOnePass(b *testing.B) {
	var msgs []string
	if _, err := os.Stat(corpusDir); err == nil {
		for _, name := range corpusFiles {
			for _, e := range loadCorpus(b, name) {
				if e.Kind == KindMessage && len(e.Message) >= 1024 && len(e.Message) <= 4096 {
					msgs = append(msgs, string(e.Message))
				}
			}
		}
	} else {
		for _, e := range readEntries(b, fixtures[0].name) {
			if e.Kind == KindMessage {
				msgs = append(msgs, string(e.Message))
			}
		}
	}
	for _, impl := range []struct {
		name string
		f    func(string) int
	}{
		{"scan", func(m string) int { c, _, _ := scanMessageChars(m); return c }},
		{"gjson", func(m string) int { c, _ := oracleChars(m); return c }},
	} {
		b.Run(impl.name, func(b *testing.B) {
			size := 0
			for _, m := range msgs {
				size += len(m)
			}
			b.SetBytes(int64(size / len(msgs)))
			i := 0
			for b.Loop() {
				impl.f(msgs[i%len(msgs)])
				i++
			}
		})
	}
}
