package memory

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/message"
)

// rawOutputChars must agree exactly with the widest way a page carries the message (encoded
// by encoding/json, <, > and & escaped, with its non-ASCII characters escaped as resume pages
// send them), or paging could overshoot.
func TestRawOutputCharsMatchesEncoding(t *testing.T) {
	s := newTestService(t, Options{})
	msgs := []Message{
		user("1", "plain"),
		user("", "html <b>&amp;</b> and \u2028 line sep, é, 日本"),
		assistantCall("2", "c1", "edit", `{"path":"a<b>.go","new":"x && y"}`),
		toolResult("3", "c1", "out\twith\"quotes\\"),
		{Role: RoleAssistant, Content: []Block{{Type: BlockThinking, Thinking: "hmm"}}, Usage: &Usage{InputTokens: 5, OutputTokens: 2}},
	}
	r := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: msgs})
	p, err := s.readPath(t.Context(), r.SessionID, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range p.context() {
		m, _ := outputMessage(e)
		b, _ := json.Marshal(m)
		b = message.AppendASCII(nil, b)
		if got, want := rawOutputChars(e), utf8.RuneCount(b); got != want {
			t.Errorf("entry %s: rawOutputChars = %d, encoding has %d (%s)", e.ID, got, want, b)
		}
	}
}
