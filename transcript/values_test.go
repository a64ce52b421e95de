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
