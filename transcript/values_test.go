package transcript

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
	"github.com/sessionmem/sessionmem/memory"
)

// nested returns an object (or, with array set, an array) nested n levels deep.
func nested(n int, array bool) string {
	if array {
		return strings.Repeat("[", n) + "1" + strings.Repeat("]", n)
	}
	return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
}

// TestArgsDepth: tool arguments that nest deeper than a message's arguments may are imported
// as their text under "input" (every byte kept), never refused, and never change when they
// fit.
func TestArgsDepth(t *testing.T) {
	const limit = memory.MaxArgumentsDepth
	tests := []struct {
		name, raw string
		asText    bool // kept as a string under "input"
		same      bool // passed through unchanged
	}{
		{"object at the limit", nested(limit, false), false, true},
		{"object past it", nested(limit+1, false), true, false},
		{"array under input at the limit", nested(limit-1, true), false, false},
		{"array past it", nested(limit, true), true, false},
		{"far past it", nested(20000, false), true, false},
	}
	for _, tt := range tests {
		for _, fn := range []struct {
			name string
			f    func(string) json.RawMessage
		}{{"objectArgs", func(s string) json.RawMessage { return objectArgs([]byte(s)) }}, {"stringArgs", stringArgs}} {
			t.Run(tt.name+"/"+fn.name, func(t *testing.T) {
				got := fn.f(tt.raw)
				if jsonscan.Deeper(got, limit) || !json.Valid(got) {
					t.Fatalf("arguments %.80s… nest deeper than %d levels or are not JSON", got, limit)
				}
				var v map[string]any
				if err := json.Unmarshal(got, &v); err != nil {
					t.Fatal(err)
				}
				if fn.name == "stringArgs" && !strings.HasPrefix(tt.raw, "{") {
					return // not an object: kept as text whatever its depth, as before
				}
				if s, isText := v["input"].(string); isText != tt.asText || (isText && s != tt.raw) {
					t.Errorf("input as text %v (%.40q), want %v, the raw text", isText, v["input"], tt.asText)
				}
				if same := string(got) == tt.raw; same != tt.same {
					t.Errorf("passed through unchanged: %v, want %v", same, tt.same)
				}
				m := memory.Message{Role: memory.RoleAssistant, Content: []memory.Block{{Type: memory.BlockToolCall, ID: "c", Name: "x", Arguments: got}}}
				raw, _ := json.Marshal(m)
				if _, err := memory.DecodeInputMessage(raw); err != nil {
					t.Errorf("the message does not pass the door: %v", err)
				}
			})
		}
	}
}

// TestNativeImportOfDeepArguments: an export written before the nesting limit, holding a tool
// call nested deeper than it, is imported with those arguments as their text; nothing else of
// the line changes.
func TestNativeImportOfDeepArguments(t *testing.T) {
	deep := nested(memory.MaxArgumentsDepth+100, false)
	lines := `{"type":"sessionmem_export","version":1,"session":{"id":"s1","working_dir":"/p","created_at":"2026-01-01T00:00:00Z"}}` + "\n" +
		`{"id":"a","entry_id":"e1","role":"assistant","content":[{"type":"tool_call","id":"c","name":"x","arguments":` + deep + `},` +
		`{"type":"tool_call","id":"d","name":"y","arguments":{"k":1}},{"type":"tool_call","id":"e","name":"z"}],"ts":"2026-01-01T00:00:01Z"}` + "\n"
	req, st, err := Parse(strings.NewReader(lines), FormatSessionmem, ParseOptions{})
	if err != nil || st.Messages != 1 {
		t.Fatalf("parse: %v, %+v", err, st)
	}
	blocks := req.Items[0].Message.Content
	var v map[string]any
	if err := json.Unmarshal(blocks[0].Arguments, &v); err != nil || v["input"] != deep {
		t.Errorf("deep arguments: %.80s…, want the text under input", blocks[0].Arguments)
	}
	if string(blocks[1].Arguments) != `{"k":1}` || blocks[2].Arguments != nil {
		t.Errorf("other arguments changed: %s, %s", blocks[1].Arguments, blocks[2].Arguments)
	}
	raw, _ := json.Marshal(req.Items[0].Message)
	if _, err := memory.DecodeInputMessage(raw); err != nil {
		t.Errorf("the message does not pass the door: %v", err)
	}
}
