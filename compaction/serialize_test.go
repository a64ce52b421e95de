package compaction

import (
	"strings"
	"testing"
)

func TestSerialize(t *testing.T) {
	long := strings.Repeat("é", ToolResultChars+37)
	tests := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{
			name:    "user string content",
			entries: []Entry{{Kind: KindMessage, Message: []byte(`{"role":"user","content":"fix the bug"}`)}},
			want:    "[User]: fix the bug",
		},
		{
			name: "assistant thinking, text and tool calls",
			entries: []Entry{{Kind: KindMessage, Message: msg("assistant",
				block{"type": "thinking", "thinking": "hmm"}, txt("Reading it."),
				tcall("c1", "read", map[string]any{"path": "a.go", "limit": 20}), tcall("c2", "bash", map[string]any{"command": "ls -la"}))}},
			want: "[Assistant thinking]: hmm\n\n[Assistant]: Reading it.\n\n[Assistant tool calls]: read(limit=20, path=\"a.go\"); bash(command=\"ls -la\")",
		},
		{
			name:    "tool results, error flagged",
			entries: []Entry{resE("c1", "ok", false), resE("c2", "boom", true)},
			want:    "[Tool result]: ok\n\n[Tool result (error)]: boom",
		},
		{
			name:    "long tool result cut with a note",
			entries: []Entry{resE("c1", long, false)},
			want:    "[Tool result]: " + strings.Repeat("é", ToolResultChars) + "\n[… 37 more characters]",
		},
		{
			name: "images dropped, text kept",
			entries: []Entry{{Kind: KindMessage, Message: msg("user",
				block{"type": "image", "media_type": "image/png", "data": "AAAA"}, txt("see screenshot"))}},
			want: "[User]: see screenshot",
		},
		{
			name: "compactions and other entries skipped, branch summary kept",
			entries: []Entry{
				{Kind: KindCompaction, Summary: "old summary"}, otherE(),
				{Kind: KindBranchSummary, Summary: "tried another way"}, userE("next"),
			},
			want: "[Branch summary]: tried another way\n\n[User]: next",
		},
		{
			name:    "pretty-printed arguments compacted",
			entries: []Entry{{Kind: KindMessage, Message: []byte(`{"role":"assistant","content":[{"type":"tool_call","id":"c","name":"edit","arguments":{ "path" : "a b.go",  "n": [1, 2] }}]}`)}},
			want:    "[Assistant tool calls]: edit(path=\"a b.go\", n=[1,2])",
		},
		{"empty", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Serialize(tt.entries); got != tt.want {
				t.Fatalf("Serialize:\ngot  %q\nwant %q", got, tt.want)
			}
		})
	}
}
