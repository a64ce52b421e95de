package message_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// TestDecodeInputMessageMatchesUnmarshal: the one-pass decoder gives the message
// json.Unmarshal gives (and so stores the same bytes), over the corpus and odd inputs.
func TestDecodeInputMessageMatchesUnmarshal(t *testing.T) {
	inputs := []string{
		`{"role":"user","content":"hello"}`,
		`{"id":"u1","role":"user","content":"a <b> && \"c\" \u00e9\ud83d\ude00 \n"}`,
		`{"role":"assistant","content":[{"type":"text","text":""},{"type":"thinking","thinking":"hm"}],"usage":{"input_tokens":10,"output_tokens":2}}`,
		`{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"read","arguments":{"path": "a.go",  "n": 1.50}}]}`,
		`{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"read"}]}`,
		`{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"read","arguments":null}]}`,
		`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":[]}]}`,
		`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1"}]}`,
		`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":"out","is_error":true}]}`,
		`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":null,"is_error":null}]}`,
		`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":[{"type":"text","text":"x"},{"type":"image","media_type":"image/png","data":"AAAA"}],"is_error":false}]}`,
		`{"role":"user","content":[{"type":"image","media_type":"image/png","data":"iVBOR"}],"pinned":true}`,
		`{"role":"user","content":"x","pinned":null,"id":null,"usage":null}`,
		`{"role":"user","content":"first","content":"second"}`,
		`{"role":"user","content":[{"Type":"text","Text":"folded"}]}`,
		`{"role":"user","content":[{"type":"mystery","whatever":1}]}`,
		`{"role":"user","content":[null]}`,
		`{"role":"user","content":[]}`,
		`{"role":"user"}`,
		`{"entry_id":"e1","role":"system","content":"sys"}`,
		`{"role":"assistant","content":"x","usage":{"input_tokens":-1,"output_tokens":0,"extra":5}}`,
	}
	for _, m := range transcripttest.Sized(t, 400, 0, 1<<30) {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		want, werr := unmarshalChecked(in)
		got, gerr := message.DecodeInput([]byte(in))
		if (werr != nil) != (gerr != nil) {
			t.Errorf("%.200s: error %v, json.Unmarshal: %v", in, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		if !reflect.DeepEqual(exported(got), exported(want)) {
			t.Errorf("%.200s:\n got %+v\nwant %+v", in, got, want)
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("%.200s: encodes as\n%s\nwant\n%s", in, gb, wb)
		}
	}
}

// TestDecodeInputMessageErrors: bad messages get errors that name the field.
func TestDecodeInputMessageErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"hello"`, " must be an object"},
		{`{"role":"user","contents":"x"}`, `unknown field "contents"`},
		{`{"role":"user","content":""}`, ".content is an empty string"},
		{`{"role":"user","content":[{"type":"text","txt":"x"}]}`, `.content[0] (text block) has unknown field "txt"`},
		{`{"role":"user","content":[{"type":"text"}]}`, `.content[0] (text block) lacks "text"`},
		{`{"role":"user","content":[{"type":"text","text":"a"},{"type":"thinking"}]}`, `.content[1] (thinking block) lacks "thinking"`},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c","content":[{"type":"text","txt":"x"}]}]}`, `.content[0].content[0] (text block) has unknown field "txt"`},
		{`{"role":"user","content":["a"]}`, ".content must be a string or a list of block objects"},
		{`{"role":"user","content":42}`, " is malformed: content: must be a string or a list of blocks"},
		{`{"role":5,"content":"x"}`, " is malformed: role must be a string"},
		{`{"role":"user","content":"x","pinned":"yes"}`, " is malformed: pinned must be true or false"},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":1.5}}`, " is malformed: usage.input_tokens must be a whole number"},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":1e3}}`, "whole number"},
		{`{"role":"assistant","content":"x","usage":{"input_tokens":123456789012345678901234}}`, "whole number"},
		{`{"role":"assistant","content":"x","usage":[]}`, "usage must be an object"},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c","is_error":"no"}]}`, "tool_result block is_error"},
		{`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c","content":5}]}`, "tool_result block content: must be a string"},
	} {
		_, err := message.DecodeInput([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
		if _, werr := unmarshalChecked(tc.in); werr == nil {
			t.Errorf("%s: json.Unmarshal accepts it", tc.in)
		}
	}
}

// unmarshalChecked is how a save decoded a message before DecodeInputMessage: the field-name
// checks, then json.Unmarshal.
func unmarshalChecked(in string) (message.Message, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		return message.Message{}, err
	}
	for k := range m {
		switch k {
		case "id", "entry_id", "role", "content", "usage", "pinned":
		default:
			return message.Message{}, &message.InputError{Detail: "unknown field " + k}
		}
	}
	if string(m["content"]) == `""` {
		return message.Message{}, &message.InputError{Detail: "empty"}
	}
	if err := checkFields(m["content"]); err != nil {
		return message.Message{}, err
	}
	var msg message.Message
	err := json.Unmarshal([]byte(in), &msg)
	return msg, err
}

func checkFields(raw json.RawMessage) error {
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return err
	}
	allowed := map[string]string{"text": "type text", "thinking": "type thinking", "tool_call": "type id name arguments",
		"tool_result": "type tool_call_id content is_error", "image": "type media_type data"}
	for _, b := range blocks {
		var typ string
		_ = json.Unmarshal(b["type"], &typ)
		fields, ok := allowed[typ]
		if !ok {
			continue
		}
		for k := range b {
			if !strings.Contains(" "+fields+" ", " "+k+" ") {
				return &message.InputError{Detail: "unknown " + k}
			}
		}
		if (typ == "text" || typ == "thinking") && b[typ] == nil {
			return &message.InputError{Detail: "lacks"}
		}
		if typ == "tool_result" {
			if err := checkFields(b["content"]); err != nil {
				return err
			}
		}
	}
	return nil
}

// exported is m without its blocks' unexported bookkeeping (compared through the encoding).
func exported(m message.Message) any {
	b, _ := json.Marshal(m)
	var v any
	_ = json.Unmarshal(b, &v)
	return []any{m.ID, m.EntryID, m.Role, m.Usage, m.Pinned, len(m.Content), v}
}
