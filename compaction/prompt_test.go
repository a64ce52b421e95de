package compaction

import (
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/prompts"
)

func TestBuildPrompt(t *testing.T) {
	history := ids([]Entry{userE("add retries"), asstE("done")})
	prefix := ids([]Entry{userE("now the docs"), asstE("writing")})
	tests := []struct {
		name      string
		req       Request
		contains  []string
		absent    []string
		maxTokens int
	}{
		{
			name:      "first summary",
			req:       Request{History: history},
			contains:  []string{"<conversation>\n[User]: add retries\n\n[Assistant]: done\n</conversation>", "## Goal", "### Blocked", "## Critical Context", `"(none)"`},
			absent:    []string{"<previous-summary>", "Additional focus"},
			maxTokens: SummaryMaxTokens,
		},
		{
			name:      "update with focus",
			req:       Request{History: history, PreviousSummary: "## Goal\n- ship v2\n\n<read-files>\na.go\n</read-files>", Instructions: "  the retry policy "},
			contains:  []string{"<previous-summary>\n## Goal\n- ship v2\n</previous-summary>", "Keep every durable fact", "Additional focus: the retry policy"},
			absent:    []string{"<read-files>"},
			maxTokens: SummaryMaxTokens,
		},
		{
			name:      "turn prefix alone: split-turn template",
			req:       Request{TurnPrefix: prefix, PreviousSummary: "ignored here"},
			contains:  []string{"## Original Request", "## Early Progress", "## Context for Suffix", "[User]: now the docs"},
			absent:    []string{"<previous-summary>", "## Goal"},
			maxTokens: TurnPrefixMaxTokens,
		},
		{
			name:      "history and prefix together: one conversation",
			req:       Request{History: history, TurnPrefix: prefix},
			contains:  []string{"[Assistant]: done\n\n[User]: now the docs"},
			maxTokens: SummaryMaxTokens,
		},
		{
			name:     "conversation cannot close its tag",
			req:      Request{History: ids([]Entry{userE("x </conversation> y")})},
			contains: []string{`x <\/conversation> y`},
		},
		{
			name:     "nothing to summarize",
			req:      Request{},
			contains: []string{"<conversation>\n(no messages)\n</conversation>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := BuildPrompt(tt.req)
			if p.System != prompts.System() {
				t.Fatalf("System = %q, want prompts.System()", p.System)
			}
			for _, s := range tt.contains {
				if !strings.Contains(p.User, s) {
					t.Errorf("User lacks %q:\n%s", s, p.User)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(p.User, s) {
					t.Errorf("User contains %q:\n%s", s, p.User)
				}
			}
			if !strings.Contains(p.User, "<conversation>\n"+p.Conversation+"\n</conversation>") {
				t.Errorf("Conversation %q is not what User embeds", p.Conversation)
			}
			if tt.maxTokens != 0 && p.MaxTokens != tt.maxTokens {
				t.Errorf("MaxTokens = %d, want %d", p.MaxTokens, tt.maxTokens)
			}
		})
	}
}

func TestBuildPromptTrimsOldest(t *testing.T) {
	var history []Entry
	for i := range 100 {
		history = append(history, userE(strings.Repeat("x", 400)+" message "+string(rune('A'+i%26))))
	}
	history = append(history, userE("the newest message"))
	full := BuildPrompt(Request{History: history})
	limit := EstimateText(full.System) + EstimateText(full.User)/3
	p := BuildPrompt(Request{History: history, MaxInputTokens: limit})
	if got := EstimateText(p.System) + EstimateText(p.User); got > limit {
		t.Fatalf("trimmed prompt is %d tokens, limit %d", got, limit)
	}
	if !strings.Contains(p.Conversation, "earlier messages were left out to fit") || !strings.HasSuffix(p.Conversation, "[User]: the newest message") {
		t.Fatalf("trimmed conversation lacks the note or the newest message:\n%.300s…", p.Conversation)
	}
	if strings.HasPrefix(p.Conversation, "[User]") {
		t.Fatal("note is not first")
	}
	if got := BuildPrompt(Request{History: history, MaxInputTokens: 1 << 30}); got.User != full.User {
		t.Fatal("a generous limit changed the prompt")
	}
}

func TestStripFileTags(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"none", "## Goal\n- x", "## Goal\n- x"},
		{"both", "S\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\n</modified-files>\n", "S"},
		{"duplicated", "S\n<read-files>\na\n</read-files>\n<read-files>\nc\n</read-files>", "S"},
		{"unterminated", "S\n<modified-files>\nb", "S"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StripFileTags(tt.in); got != tt.want {
				t.Fatalf("StripFileTags = %q, want %q", got, tt.want)
			}
		})
	}
}
