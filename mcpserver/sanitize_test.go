package mcpserver

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/memory"
)

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "hello, wörld ✓", "hello, wörld ✓"},
		{"newlines and tabs kept", "a\n\tb", "a\n\tb"},
		{"bidi override", "abc\u202Edcba\u202C", "abcdcba"},
		{"bidi isolates", "\u2066x\u2069", "x"},
		{"zero width", "pa\u200Bss\u200Dword\uFEFF", "password"},
		{"tag characters", "hi\U000E0041\U000E0042", "hi"},
		{"control characters", "a\x00b\x1bc\x7f", "abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sanitize(tc.in); got != tc.want {
				t.Errorf("sanitize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestHasInvisible: the byte-wise scan agrees with strings.IndexFunc(s, invisible) for every
// rune (alone and between ASCII), invalid UTF-8 and mixed text.
func TestHasInvisible(t *testing.T) {
	check := func(s string) {
		if got, want := hasInvisible(s), strings.IndexFunc(s, invisible) >= 0; got != want {
			t.Fatalf("hasInvisible(%q) = %v, want %v", s, got, want)
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		check(string(r))
		if r < 0x3000 {
			check("ab" + string(r) + "cd")
		}
	}
	for _, s := range []string{"", "\xff", "a\xc3", "\xed\xa0\x80", "Saved 1 new message (context ≈ 12 tokens).", "x\u200by", "tab\tnl\n"} {
		check(s)
	}
}

// TestSaveAnswerText: the save's short text, now concatenated, reads as it did formatted.
func TestSaveAnswerText(t *testing.T) {
	for _, tc := range []struct {
		res  memory.SaveResult
		sent int
	}{
		{memory.SaveResult{SessionID: "s1", Saved: 1, MessageCount: 1, LeafID: "e1", ContextTokens: 0}, 1},
		{memory.SaveResult{SessionID: "s-2", Saved: 0, MessageCount: 1001, LeafID: "e-9", ContextTokens: 123456}, 3},
		{memory.SaveResult{SessionID: "s3", Saved: 2, MessageCount: 2, LeafID: "e2", ContextTokens: -1, ShouldCompact: true}, 2},
	} {
		want := fmt.Sprintf("Saved %s to session %s (%s on the path, leaf %s, context ≈ %d tokens).",
			fmt.Sprintf("%d %s", tc.res.Saved, map[bool]string{true: "new message", false: "new messages"}[tc.res.Saved == 1]), tc.res.SessionID,
			fmt.Sprintf("%d %s", tc.res.MessageCount, map[bool]string{true: "message", false: "messages"}[tc.res.MessageCount == 1]), tc.res.LeafID, tc.res.ContextTokens)
		if tc.res.Saved < tc.sent {
			want += fmt.Sprintf(" %d already stored (same id), skipped.", tc.sent-tc.res.Saved)
		}
		if tc.res.ShouldCompact {
			want += " The context is close to the window: call session_compact now."
		}
		if got := saveAnswer(tc.res, tc.sent).Content[0].(mcp.TextContent).Text; got != want {
			t.Errorf("%+v: %q, want %q", tc.res, got, want)
		}
	}
}
