package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/memory"
)

// Whole tool results of session_resume stay within max_tokens even for messages far larger
// than a page, and for long working dirs.
func TestResumeWholeResultWithinMaxTokens(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var blocks []any
	for i := range 40 {
		blocks = append(blocks, obj{"type": "text", "text": strings.Repeat(fmt.Sprint(i%10), 3000)})
	}
	var saved struct {
		SessionID string `json:"session_id"`
	}
	f.ok("session_save", obj{"working_dir": "/" + strings.Repeat("w", 1500), "messages": []any{
		obj{"id": "u", "role": "user", "content": blocks},
		obj{"id": "a", "role": "assistant", "content": []any{obj{"type": "tool_call", "id": "c", "name": "write",
			"arguments": obj{"path": "a.go", "content": strings.Repeat("<&>", 40000)}}}},
		obj{"id": "r", "role": "tool_result", "content": []any{obj{"type": "tool_result", "tool_call_id": "c", "content": "ok"}}},
	}}, &saved)
	for _, max := range []int{1000, 3000, 20000} {
		cursor := ""
		for page := 1; page < 20; page++ {
			args := obj{"session_id": saved.SessionID, "max_tokens": max}
			if cursor != "" {
				args["cursor"] = cursor
			}
			var out struct {
				NextCursor string `json:"next_cursor"`
			}
			res := f.ok("session_resume", args, &out)
			if got := tokens(res); got > max {
				t.Errorf("max_tokens %d, page %d: result is %d tokens", max, page, got)
			}
			if out.NextCursor == "" {
				break
			}
			cursor = out.NextCursor
		}
	}
}

// Misspelled fields are refused, not dropped, and nothing is written.
func TestSaveRefusesUnknownMessageFields(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, tc := range []struct {
		name string
		msg  obj
		want string
	}{
		{"txt for text", obj{"role": "user", "content": []any{obj{"type": "text", "txt": "hello"}}}, `unknown field "txt"`},
		{"text missing", obj{"role": "user", "content": []any{obj{"type": "text"}}}, `lacks "text"`},
		{"output for content", obj{"role": "tool_result", "content": []any{obj{"type": "tool_result", "tool_call_id": "c", "output": "x"}}}, `unknown field "output"`},
		{"args for arguments", obj{"role": "assistant", "content": []any{obj{"type": "tool_call", "id": "c", "name": "n", "args": obj{}}}}, `unknown field "args"`},
		{"nested typo", obj{"role": "tool_result", "content": []any{obj{"type": "tool_result", "tool_call_id": "c", "content": []any{obj{"type": "text", "txt": "x"}}}}}, `unknown field "txt"`},
		{"message typo", obj{"role": "user", "contents": "x"}, `unknown field "contents"`},
		{"empty string content", obj{"role": "user", "content": ""}, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.at(t).fails("session_save", obj{"working_dir": "/w", "messages": []any{tc.msg}}, tc.want, "nothing was saved")
		})
	}
	var list struct {
		Sessions []any `json:"sessions"`
	}
	f.ok("session_list", obj{}, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("a refused save created %d sessions", len(list.Sessions))
	}
}

// needs_summary always carries previous_summary, empty on a first compaction.
func TestNeedsSummaryHasEveryField(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	id := f.newSession("/w", "s", 40, strings.Repeat("words ", 300))
	res := f.ok("session_compact", obj{"session_id": id, "summarizer": "agent", "keep_recent_tokens": 1000}, nil)
	sc, _ := res.StructuredContent.(map[string]any)
	for _, k := range []string{"status", "compaction_id", "prompt", "conversation", "previous_summary", "read_files", "modified_files"} {
		if _, ok := sc[k]; !ok {
			t.Errorf("needs_summary lacks %q", k)
		}
	}
}

// Search finds text with characters JSON encoders like to escape, in tool arguments too.
func TestSearchFindsEscapableText(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.ok("session_save", obj{"working_dir": "/w", "messages": []any{
		obj{"id": "a", "role": "assistant", "content": []any{obj{"type": "tool_call", "id": "c", "name": "bash",
			"arguments": obj{"command": "go build && go vet <x> 'café'"}}}},
		obj{"id": "u", "role": "user", "content": "İstanbul is where the NEEDLE is"},
	}}, nil)
	for _, q := range []string{"go build &&", "<x>", "café", "needle"} {
		var out struct {
			Matches []struct {
				Snippet string `json:"snippet"`
			} `json:"matches"`
		}
		f.ok("session_search", obj{"query": q}, &out)
		if len(out.Matches) != 1 || !strings.Contains(strings.ToLower(out.Matches[0].Snippet), strings.ToLower(q)) {
			t.Errorf("search %q: %+v", q, out.Matches)
		}
	}
}

// What resumeResult sends around a page (its text and the envelope) stays within what memory
// allows for when it sizes the page: memory.ResumeFrameChars and one copy of next_cursor.
func TestResumeFrameWithinAllowance(t *testing.T) {
	id := strings.Repeat("s", memory.MaxIDBytes)
	cursor := strings.Repeat("c", 400)
	many := make([]string, 123456)
	msgs := make([]json.RawMessage, 123456)
	for i := range msgs {
		msgs[i] = json.RawMessage(`{}`)
	}
	page := memory.ResumeResult{SessionID: id, WorkingDir: "/" + strings.Repeat("w", 3000), Summary: strings.Repeat("x", 1234567),
		ReadFiles: many, ModifiedFiles: many, RawMessages: msgs, ContextTokens: 1 << 40, NextCursor: cursor,
		Pinned: make([]memory.Message, 0)}
	out := resumeResult(t.Context(), page)
	whole, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	frame := utf8.RuneCount(whole) - utf8.RuneCount(out.RawStructuredContent) - len(cursor)
	if frame > memory.ResumeFrameChars {
		t.Fatalf("resumeResult adds %d characters around a page, memory allows for %d", frame, memory.ResumeFrameChars)
	}
	t.Logf("frame %d of %d characters", frame, memory.ResumeFrameChars)
}
