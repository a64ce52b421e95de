package message_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// The one-pass decoder (decodeInputFast) must give exactly the Message the general decoder
// gives, unexported fields included, whenever it accepts a message, and must decline every
// message the general decoder refuses. These tests compare the two on odd shapes, the corpus
// (compact and indented), random messages, random damage to them, and fuzzed bytes.

func checkDecodeBoth(t *testing.T, raw string, wantFast bool) {
	t.Helper()
	fast, diff := message.DecodeInputBoth([]byte(raw))
	if diff != "" {
		t.Fatalf("%q:\n%s", raw, diff)
	}
	if wantFast && !fast {
		t.Fatalf("%q: the one-pass decoder declined it", raw)
	}
}

func TestDecodeInputFastShapes(t *testing.T) {
	tests := []struct {
		raw  string
		fast bool
	}{
		{`{"role":"user","content":"hello"}`, true},
		{` {"id":"u1", "role":"user","content":"a <b> && \"c\" \u00e9\ud83d\ude00 \n\/\b\f\r\t\\"} `, true},
		{`{"role":"user","content":"\ud83d \ude00 \ud83d\u0041 \ud83d\ud83d\ude00 \udbff\udfff \u0000 \uFFFD"}`, true},
		{"{\"role\":\"user\",\"content\":\"a\xffb\xe2\x82 \xe2\x82\\u00e9\xa9 \xed\xa0\x80\"}", true},
		{`{"role":"assistant","content":[{"type":"text","text":""},{"type":"thinking","thinking":"hm"}],"usage":{"input_tokens":10,"output_tokens":2}}`, true},
		{`{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"read","arguments":{"path": "a.go",  "n": [1.50, -0, 2e-3, true, null]}}]}`, true},
		{`{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"read"}]}`, true},
		{`{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"read","arguments":null}]}`, true},
		{`{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"read","arguments":"{\"a\":1}"}]}`, true},
		{`{"role":"assistant","content":[{"arguments":-12.5E+3,"name":"read","type":"tool_call"}]}`, true},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":[]}]}`, true},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1"}]}`, true},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":"out","is_error":true}]}`, true},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":"","is_error":false}]}`, true},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":null,"is_error":null}]}`, true},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":[{"type":"text","text":"x"},{"type":"image","media_type":"image/png","data":"AAAA"}],"is_error":false}]}`, true},
		{`{"role":"tool_result","content":[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"text","text":null}]}]}]}`, true},
		{`{"role":"user","content":[{"type":"image","media_type":"image/png","data":"iVBOR"}],"pinned":true}`, true},
		{`{"role":"user","content":"x","pinned":null,"id":null,"usage":null,"entry_id":null}`, true},
		{`{"role":"user","content":[]}`, true},
		{`{"role":"user","content":null}`, true},
		{`{"role":"user"}`, true},
		{`{}`, true},
		{`{"entry_id":"e1","role":"system","content":"sys","pinned":false}`, true},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":-1,"output_tokens":0,"extra":{"a":[5]}}}`, true},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":null,"output_tokens":-0}}`, true},
		{`{"role":"assistant","content":"x","usage":{}}`, true},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":123456789012345678}}`, true},

		// Left to the general decoder (which decodes or refuses them).
		{`{"role":"user","content":"first","content":"second"}`, false},
		{`{"role":"user","content":[{"Type":"text","Text":"folded"}]}`, false},
		{`{"role":"user","content":[{"type":"mystery","whatever":1}]}`, false},
		{`{"role":"user","content":[{"text":"no type"}]}`, false},
		{`{"role":"user","content":[{"type":"te\u0078t","text":"escaped type"}]}`, false},
		{`{"r\u006fle":"user","content":"escaped key"}`, false},
		{`{"role":"user","content":[null]}`, false},
		{`{"role":"user","content":["a"]}`, false},
		{`{"role":"user","content":""}`, false},
		{`{"role":"user","content":42}`, false},
		{`{"role":5,"content":"x"}`, false},
		{`{"role":"user","content":[{"type":"text"}]}`, false},
		{`{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}`, false},
		{`{"role":"user","content":[{"type":"text","txt":"x"}]}`, false},
		{`{"role":"user","contents":"x"}`, false},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":1.5}}`, false},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":1e3}}`, false},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":1234567890123456789}}`, false},
		{`{"role":"assistant","content":"x","usage":{"Input_Tokens":7}}`, false},
		{"{\"role\":\"assistant\",\"content\":\"x\",\"usage\":{\"output_to\u212aens\":7}}", false},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":1,"input_tokens":2}}`, false},
		{`{"role":"assistant","content":"x","usage":[]}`, false},
		{`{"role":"user","content":"x","pinned":"yes"}`, false},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c","is_error":"no"}]}`, false},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c","content":5}]}`, false},
		{`{"role":"user","content":"x"} trailing`, false},
		{"{\"role\":\"user\",\"content\":\"raw\nnewline\"}", false},
		{`{"role":"user","content":"bad \q escape"}`, false},
		{`{"role":"assistant","content":[{"type":"tool_call","name":"r","arguments":{"a" 1}}]}`, false},
		{`"hello"`, false},
		{`[]`, false},
		{``, false},
	}
	for _, tt := range tests {
		checkDecodeBoth(t, tt.raw, tt.fast)
	}
}

// TestDecodeInputFastCorpus: every corpus message, as json.Marshal writes it and indented,
// is read in one pass to the general decoder's Message.
func TestDecodeInputFastCorpus(t *testing.T) {
	for _, m := range transcripttest.Sized(t, 3000, 0, 1<<30) {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		checkDecodeBoth(t, string(raw), true)
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, raw, "", "\t"); err != nil {
			t.Fatal(err)
		}
		checkDecodeBoth(t, pretty.String(), true)
	}
}

// TestDecodeInputFastRandom compares the decoders on random messages and damaged ones.
func TestDecodeInputFastRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	fast := 0
	for range 20000 {
		raw := randomInput(rng)
		if ok, _ := message.DecodeInputBoth([]byte(raw)); ok {
			fast++
		}
		checkDecodeBoth(t, raw, false)
		checkDecodeBoth(t, jsontest.Damage(rng, raw), false)
	}
	if fast < 5000 {
		t.Errorf("only %d of 20000 random messages took the one-pass decoder", fast)
	}
}

// TestDecodeInputFastOwnsItsStrings: what the one-pass decoder returns points into no byte of
// raw (the caller's, which a transport may reuse), and appending to a block's arguments cannot
// write over the strings decoded after them (the strings of a message share one buffer).
func TestDecodeInputFastOwnsItsStrings(t *testing.T) {
	raw := []byte(`{"id":"u1","role":"assistant","content":[{"type":"tool_call","id":"c1","name":"read",` +
		`"arguments":{"path":"a.go"}},{"type":"text","text":"after the arguments \u00e9"}],"usage":{"input_tokens":3}}`)
	if fast, diff := message.DecodeInputBoth(raw); !fast || diff != "" {
		t.Fatalf("the one-pass decoder did not read it: %s", diff)
	}
	want, err := message.DecodeInput(bytes.Clone(raw))
	if err != nil {
		t.Fatal(err)
	}
	m, err := message.DecodeInput(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		raw[i] = 'X'
	}
	_ = append(m.Content[0].Arguments, `,"junk":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}`...)
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("the message changed with raw or with its arguments:\n%#v\nwant\n%#v", m, want)
	}
}

// TestDecodeInputFastDeep: content nested deeper than the one-pass decoder follows, and
// arguments nested deeper than its reader follows, are left to the general decoder, and
// DecodeInputMessage refuses what nests deeper than MaxMessageDepth before either reads it.
func TestDecodeInputFastDeep(t *testing.T) {
	nested := func(levels int) string {
		return strings.Repeat(`[{"type":"tool_result","content":`, levels) + `"deep"` + strings.Repeat(`}]`, levels)
	}
	args := func(levels int) string {
		return `{"role":"assistant","content":[{"type":"tool_call","name":"r","arguments":{"a":` +
			strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}}]}`
	}
	for _, tt := range []struct {
		raw        string
		fast, deep bool
	}{
		{`{"role":"tool_result","content":` + nested(100) + `}`, true, false},
		{`{"role":"tool_result","content":` + nested(300) + `}`, false, true},
		{args(400), true, false},
		{args(600), false, true},
	} {
		fast, diff := message.DecodeInputBoth([]byte(tt.raw))
		if diff != "" || fast != tt.fast {
			t.Fatalf("%.80q...: one pass read it: %v, want %v; %s", tt.raw, fast, tt.fast, diff)
		}
		_, err := message.DecodeInput([]byte(tt.raw))
		if deep := err != nil && strings.Contains(err.Error(), "nests deeper than 512 levels"); deep != tt.deep || (err != nil && !deep) {
			t.Fatalf("%.80q...: %v; want refused as too deep: %v", tt.raw, err, tt.deep)
		}
	}
}

func FuzzDecodeInputMessage(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 4))
	for range 50 {
		f.Add(randomInput(rng))
	}
	f.Fuzz(func(t *testing.T, raw string) { checkDecodeBoth(t, raw, false) })
}

// randomInput returns a message with mostly well-formed fields of the contract, some of the
// wrong type, some misnamed, repeated, or escaped.
func randomInput(rng *rand.Rand) string {
	var members []string
	for _, k := range []string{"id", "role", "content", "usage", "pinned", "entry_id"} {
		if rng.IntN(5) == 0 {
			continue
		}
		var v string
		switch k {
		case "content":
			v = randomInputContent(rng, 0)
		case "usage":
			v = jsontest.Pick(rng, `null`, `{"input_tokens":12,"output_tokens":3}`, `{"output_tokens":-0,"cache":[1,{}]}`,
				`{"input_tokens":1.0}`, `{}`, `{"INPUT_TOKENS":2}`, `[]`)
		case "pinned":
			v = jsontest.Pick(rng, "true", "false", "null", `"yes"`)
		default:
			v = jsontest.InputString(rng)
		}
		members = append(members, `"`+k+`":`+v)
	}
	if rng.IntN(20) == 0 {
		members = append(members, jsontest.Pick(rng, `"content":"again"`, `"Role":"user"`, `"extra":1`, `"r\u006fle":"user"`))
	}
	return jsontest.Object(rng, members)
}

func randomInputContent(rng *rand.Rand, depth int) string {
	switch rng.IntN(12) {
	case 0:
		return jsontest.InputString(rng)
	case 1:
		return jsontest.Pick(rng, `null`, `""`, `5`, `{}`, `[null]`, `["x"]`)
	}
	var parts []string
	for range rng.IntN(4) {
		parts = append(parts, randomInputBlock(rng, depth))
	}
	return "[" + strings.Join(parts, ","+jsontest.Space(rng)) + "]"
}

var inputBlockKeys = map[string][]string{
	"text":        {"text"},
	"thinking":    {"thinking"},
	"tool_call":   {"id", "name", "arguments"},
	"tool_result": {"tool_call_id", "content", "is_error"},
	"image":       {"media_type", "data"},
	"mystery":     {"text", "data"},
}

func randomInputBlock(rng *rand.Rand, depth int) string {
	typ := jsontest.Pick(rng, "text", "thinking", "tool_call", "tool_result", "image", "mystery")
	members := []string{`"type":"` + typ + `"`}
	for _, k := range inputBlockKeys[typ] {
		if rng.IntN(6) == 0 {
			continue
		}
		var v string
		switch {
		case k == "arguments":
			v = jsontest.Pick(rng, `{"path":"a.go"}`, `{ "cmd" : "ls -l" , "n" : [1, 2.5e3, true, null] }`, `null`, `"{}"`, `-1`,
				`{"s":`+jsontest.InputString(rng)+`}`)
		case k == "content" && depth < 2:
			v = randomInputContent(rng, depth+1)
		case k == "is_error":
			v = jsontest.Pick(rng, "true", "false", "null", `"no"`)
		case rng.IntN(20) == 0:
			v = jsontest.Pick(rng, "null", "7", "[]")
		default:
			v = jsontest.InputString(rng)
		}
		members = append(members, `"`+k+`":`+v)
	}
	if rng.IntN(25) == 0 {
		members = append(members, jsontest.Pick(rng, `"Text":"x"`, `"extra":"x"`, `"type":"text"`, `"content":"x"`))
	}
	return jsontest.Object(rng, members)
}
