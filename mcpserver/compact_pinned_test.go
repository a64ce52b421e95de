package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
)

// Pinned messages are never folded into a summary, so a session whose part older than
// keep_recent_tokens is all pinned messages (and metadata such as a rename) has nothing to
// fold in: session_compact answers nothing_to_compact (contract v1) and stores nothing.
// Before, the extractive summarizer stored a summary of empty sections (context_tokens grew,
// 1031 to 1081), and the agent flow asked the model to summarize "(no messages)".
func TestCompactNothingButPinned(t *testing.T) {
	pinned := func(n int) []any {
		var msgs []any
		for i := range n {
			msgs = append(msgs, obj{"id": fmt.Sprintf("p%d", i), "role": "user", "pinned": true,
				"content": fmt.Sprintf("standing rule %d: %s", i, strings.Repeat("keep it verbatim ", 40))})
		}
		return msgs
	}
	for _, tc := range []struct {
		name       string
		batches    [][]any // saved in this order; the first creates the session
		rename     bool    // the second batch also renames the session (a metadata entry)
		summarizer string
		want       string
	}{
		{"all pinned, extractive", [][]any{append(pinned(10), assistantMsg("last", "ok"))}, false, "extractive", memory.StatusNothingToCompact},
		{"all pinned, agent", [][]any{append(pinned(10), assistantMsg("last", "ok"))}, false, "agent", memory.StatusNothingToCompact},
		{"all pinned, auto", [][]any{append(pinned(10), assistantMsg("last", "ok"))}, false, "", memory.StatusNothingToCompact},
		{"pinned and a rename", [][]any{pinned(10), {assistantMsg("last", "ok")}}, true, "extractive", memory.StatusNothingToCompact},
		{"pinned and one message", [][]any{append(pinned(5), assistantMsg("a", "a short reply"), assistantMsg("last", "ok"))}, false, "extractive", memory.StatusCompacted},
		{"pinned and one message, agent", [][]any{append(pinned(5), assistantMsg("a", "a short reply"), assistantMsg("last", "ok"))}, false, "agent", memory.StatusNeedsSummary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			var saved memory.SaveResult
			f.ok("session_save", obj{"working_dir": dir, "name": "n", "messages": tc.batches[0]}, &saved)
			for _, b := range tc.batches[1:] {
				args := obj{"session_id": saved.SessionID, "messages": b}
				if tc.rename {
					args["name"] = "renamed"
				}
				f.ok("session_save", args, nil)
			}
			args := obj{"session_id": saved.SessionID, "keep_recent_tokens": 1}
			if tc.summarizer != "" {
				args["summarizer"] = tc.summarizer
			}
			var got struct {
				Status        string `json:"status"`
				Conversation  string `json:"conversation"`
				ContextTokens int    `json:"context_tokens"`
			}
			f.ok("session_compact", args, &got)
			if got.Status != tc.want {
				t.Fatalf("status %q (conversation %q), want %q", got.Status, got.Conversation, tc.want)
			}
			var l memory.ListResult
			f.ok("session_list", obj{}, &l)
			if tc.want == memory.StatusNothingToCompact {
				if l.Sessions[0].Compactions != 0 {
					t.Errorf("nothing to compact, yet %d compactions stored", l.Sessions[0].Compactions)
				}
				if got.ContextTokens != l.Sessions[0].ContextTokens {
					t.Errorf("context_tokens %d, the session has %d", got.ContextTokens, l.Sessions[0].ContextTokens)
				}
			}
		})
	}
}
