package mcpserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// pinnedOut is the part of a resume page these tests read.
type pinnedOut struct {
	Summary    string            `json:"summary"`
	Facts      json.RawMessage   `json:"facts"`
	Pinned     []json.RawMessage `json:"pinned"`
	Messages   []json.RawMessage `json:"messages"`
	NextCursor string            `json:"next_cursor"`
}

// A message saved with "pinned": true comes back verbatim in pinned after three compactions,
// on the first page only; facts come with it; messages without pinned never carry the field.
func TestPinnedThroughCompactions(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	task := obj{"id": "task", "role": "user", "pinned": true,
		"content": "Task: migrate the <api> to v2 & keep the old routes working. Use tabs. The port is 8443."}
	var saved struct {
		SessionID string `json:"session_id"`
	}
	f.ok("session_save", obj{"working_dir": dir, "messages": []any{task, userMsg("plain", "hello")}}, &saved)
	id := saved.SessionID
	var before pinnedOut
	f.ok("session_resume", obj{"session_id": id}, &before)
	if len(before.Pinned) != 0 || len(before.Messages) != 2 || !strings.Contains(string(before.Messages[0]), `"pinned":true`) ||
		strings.Contains(string(before.Messages[1]), "pinned") {
		t.Fatalf("before compaction: pinned %d, messages %s", len(before.Pinned), before.Messages)
	}
	want := before.Messages[0]
	for round := range 3 {
		var msgs []any
		for i := range 20 {
			msgs = append(msgs, userMsg(fmt.Sprintf("u%d_%d", round, i), "Please go on with step "+fmt.Sprint(i)+". "+strings.Repeat("detail ", 150)),
				assistantMsg(fmt.Sprintf("a%d_%d", round, i), "Done. "+strings.Repeat("detail ", 150)))
		}
		f.ok("session_save", obj{"session_id": id, "messages": msgs}, nil)
		var c struct {
			Status string `json:"status"`
		}
		f.ok("session_compact", obj{"session_id": id, "summarizer": "extractive", "keep_recent_tokens": 1500}, &c)
		if c.Status != "compacted" {
			t.Fatalf("round %d: %s", round, c.Status)
		}
		var page pinnedOut
		f.ok("session_resume", obj{"session_id": id, "max_tokens": 2000}, &page)
		if len(page.Pinned) != 1 || string(page.Pinned[0]) != string(want) {
			t.Fatalf("round %d: pinned = %s, want %s", round, page.Pinned, want)
		}
		if len(page.Facts) == 0 || string(page.Facts) == "null" {
			t.Fatalf("round %d: no facts on the first page", round)
		}
		if strings.Contains(page.Summary, "keep the old routes working") {
			t.Errorf("round %d: the summary retells the pinned message", round)
		}
		if page.NextCursor == "" {
			t.Fatalf("round %d: expected more pages at max_tokens 2000", round)
		}
		var next pinnedOut
		f.ok("session_resume", obj{"session_id": id, "max_tokens": 2000, "cursor": page.NextCursor}, &next)
		if next.Pinned == nil || len(next.Pinned) != 0 || len(next.Facts) != 0 {
			t.Fatalf("round %d: second page pinned %s facts %s", round, next.Pinned, next.Facts)
		}
	}
	// Equal once decoded, too (the raw bytes above compare the stored form).
	var a, b any
	_ = json.Unmarshal(want, &a)
	var last pinnedOut
	f.ok("session_resume", obj{"session_id": id}, &last)
	_ = json.Unmarshal(last.Pinned[0], &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("pinned changed: %v vs %v", a, b)
	}
}

func TestPinnedCapIsToolError(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	huge := obj{"role": "user", "pinned": true, "content": strings.Repeat("x", 40000)}
	f.fails("session_save", obj{"working_dir": dir, "messages": []any{huge}}, "pinned", "8000")
	var list struct {
		Sessions []any `json:"sessions"`
	}
	f.ok("session_list", obj{}, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("a refused save created a session")
	}
	f.fails("session_save", obj{"working_dir": dir, "messages": []any{obj{"role": "user", "pinned": "yes", "content": "x"}}}, "pinned")
}
