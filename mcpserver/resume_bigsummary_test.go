package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
)

// A page never exceeds max_tokens, however long the summary, and the pinned messages are
// shown or said to be left out. An agent may write a summary of up to ~12,000 tokens; resume
// cut it to no less than an eighth (5,000 characters of a 40,000-character one), so at
// max_tokens 1000 every page held about 1,450 tokens, and the page had no room left for the
// pinned message, which was dropped without the note that says so.
func TestResumeBigSummaryStaysUnderMaxTokens(t *testing.T) {
	for _, tc := range []struct {
		summaryChars int
		maxTokens    int
	}{
		{40000, 1000}, {40000, 1500}, {40000, 3000}, {20000, 1000}, {9000, 1000}, {2000, 1000},
	} {
		t.Run(fmt.Sprintf("summary %d, max_tokens %d", tc.summaryChars, tc.maxTokens), func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			var msgs []any
			for i := range 20 {
				m := obj{"id": fmt.Sprintf("m%02d", i), "role": []string{"user", "assistant"}[i%2],
					"content": fmt.Sprintf("turn %d %s", i, strings.Repeat("lorem ", 100))}
				if i == 0 {
					m["pinned"] = true
				}
				msgs = append(msgs, m)
			}
			var saved memory.SaveResult
			f.ok("session_save", obj{"working_dir": dir, "messages": msgs}, &saved)
			var step struct {
				CompactionID string `json:"compaction_id"`
			}
			f.ok("session_compact", obj{"session_id": saved.SessionID, "summarizer": "agent", "keep_recent_tokens": 300}, &step)
			f.ok("session_compact", obj{"session_id": saved.SessionID, "compaction_id": step.CompactionID,
				"summary": strings.Repeat("S", tc.summaryChars)}, nil)

			cursor, pinnedSeen := "", false
			for page := 0; ; page++ {
				if page > 50 {
					t.Fatal("paging does not end")
				}
				args := obj{"session_id": saved.SessionID, "max_tokens": tc.maxTokens}
				if cursor != "" {
					args["cursor"] = cursor
				}
				var r memory.ResumeResult
				res := f.ok("session_resume", args, &r)
				b, _ := json.Marshal(res.StructuredContent)
				if got := (len(b) + 3) / 4; got > tc.maxTokens {
					t.Errorf("page %d: %d tokens, over max_tokens %d (summary %d characters, %d pinned, %d messages)",
						page, got, tc.maxTokens, len(r.Summary), len(r.Pinned), len(r.Messages))
				}
				if page == 0 {
					pinnedSeen = len(r.Pinned) > 0 && r.Pinned[0].ID == "m00"
				}
				if r.Summary == "" {
					t.Errorf("page %d has no summary", page)
				}
				if r.NextCursor == "" {
					break
				}
				cursor = r.NextCursor
			}
			if !pinnedSeen {
				t.Error("the first page neither shows the pinned message nor says it was left out")
			}
		})
	}
}
