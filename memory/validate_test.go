package memory

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// encodedBound must never be below the real encoding, or an oversize message would be stored.
func TestEncodedBoundCoversEncoding(t *testing.T) {
	worst := "\x00\x01\x1f<>&\u2028\u2029\"\\\xff\xfe" // escaped, HTML-escaped, invalid UTF-8
	cases := []struct {
		name string
		m    Message
	}{
		{"text", Message{ID: "a", Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hello"}}}},
		{"empty text", Message{Role: RoleUser, Content: []Block{{Type: BlockText}}}},
		{"worst text", Message{ID: strings.Repeat("z", 128), Role: RoleUser, Content: []Block{{Type: BlockText, Text: strings.Repeat(worst, 50)}}}},
		{"usage and pinned", Message{Role: RoleAssistant, Pinned: true, Usage: &Usage{InputTokens: 1<<62 + 7, OutputTokens: 1<<62 + 9},
			Content: []Block{{Type: BlockThinking, Thinking: worst}, {Type: BlockText, Text: worst}}}},
		{"tool call", Message{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: "c1", Name: "read",
			Arguments: json.RawMessage(`{ "path" : "<a&b>\u2028" ,"n":[1, 2 ,3]}`)}}}},
		{"tool call without arguments", Message{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: "c1", Name: "read"}}}},
		{"tool result", Message{Role: RoleToolResult, Content: []Block{{Type: BlockToolResult, ToolCallID: "c1", IsError: true,
			Content: []Block{{Type: BlockText, Text: worst}, {Type: BlockImage, MediaType: "image/png", Data: "AAAA"}}}}}},
		{"empty tool result", Message{Role: RoleToolResult, Content: []Block{{Type: BlockToolResult, ToolCallID: "c1"}}}},
		{"many empty blocks", Message{Role: RoleUser, Content: make([]Block, 500)}},
	}
	for i := range cases[len(cases)-1].m.Content {
		cases[len(cases)-1].m.Content[i].Type = BlockText
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		b := make([]byte, r.IntN(300))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		cases = append(cases, struct {
			name string
			m    Message
		}{"random", Message{ID: "r", Role: RoleToolResult, Content: []Block{{Type: BlockToolResult, ToolCallID: string(b[:len(b)/3]),
			Content: []Block{{Type: BlockText, Text: string(b)}}}, {Type: BlockText, Text: string(b[i%(len(b)+1):])}}}})
	}
	for _, c := range cases {
		enc, err := json.Marshal(storedMessage(c.m))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := encodedBound(&c.m); got < len(enc) {
			t.Errorf("%s: bound %d < encoded %d bytes", c.name, got, len(enc))
		}
	}
}

// The size limits hold exactly, whether or not the bound decided them.
func TestValidateMessagesSizeLimits(t *testing.T) {
	text := func(n int) Message {
		return Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: strings.Repeat("x", n)}}}
	}
	overhead := func() int { b, _ := json.Marshal(text(0)); return len(b) }()
	cases := []struct {
		name string
		msgs []Message
		want string // "" = accepted
	}{
		{"small", []Message{text(2000)}, ""},
		{"exactly the limit", []Message{text(MaxMessageBytes - overhead)}, ""},
		{"one byte over", []Message{text(MaxMessageBytes - overhead + 1)}, "is 8388609 bytes"},
		{"batch over", []Message{text(MaxMessageBytes - overhead), text(MaxMessageBytes - overhead), text(MaxMessageBytes - overhead),
			text(MaxMessageBytes - overhead), text(10)}, "add up to more than"},
		{"batch at the limit", []Message{text(MaxMessageBytes - overhead), text(MaxMessageBytes - overhead), text(MaxMessageBytes - overhead),
			text(MaxMessageBytes - overhead)}, ""},
	}
	for _, c := range cases {
		err := validateMessages(c.msgs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// The nesting limit holds exactly at both doors: DecodeInputMessage (what a client sent,
// counted over the whole message) and validateMessages (a message built in Go, as imports
// give it, counted in its stored form), and the error names the limit.
func TestMessageDepthLimit(t *testing.T) {
	args := func(n int) string { return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1) }
	call := func(n int) string {
		return `{"role":"assistant","content":[{"type":"tool_call","id":"c","name":"x","arguments":` + args(n) + `}]}`
	}
	// A usage object's unknown keys are ignored, never stored: they count as sent all the same.
	usage := func(n int) string {
		return `{"role":"assistant","content":"hi","usage":{"input_tokens":1,"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`
	}
	cases := []struct {
		name string
		raw  string
		ok   bool
	}{
		{"arguments at the limit", call(MaxArgumentsDepth), true},
		{"arguments one level past it", call(MaxArgumentsDepth + 1), false},
		{"arguments far past it", call(9000), false},
		{"an ignored usage key at the limit", usage(MaxMessageDepth - 2), true},
		{"an ignored usage key one level past it", usage(MaxMessageDepth - 1), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := DecodeInputMessage([]byte(c.raw))
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				if err := validateMessages([]Message{m}); err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(ie.Detail, "nests deeper than 512 levels") || !strings.Contains(ie.Hint, "nothing was saved") {
				t.Fatalf("got %v, want the limit named", err)
			}
		})
	}
	for n, ok := range map[int]bool{MaxArgumentsDepth: true, MaxArgumentsDepth + 1: false, 20000: false} {
		m := Message{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: "c", Name: "x", Arguments: json.RawMessage(args(n))}}}
		err := validateMessages([]Message{m})
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "nest deeper than 509 levels of JSON (a message may nest 512 levels") {
			t.Errorf("arguments %d deep: %v", n, err)
		}
	}
}
