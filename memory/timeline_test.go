package memory

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// timelineIDs returns the client ids of a page's messages, and "C" for a compaction.
func timelineIDs(es []TimelineEntry) string {
	var out []string
	for _, e := range es {
		switch {
		case e.Message != nil:
			out = append(out, e.Message.ID)
		case e.Compaction != nil:
			out = append(out, "C")
		case e.BranchSummary != nil:
			out = append(out, "B")
		}
	}
	return strings.Join(out, " ")
}

func TestTimelinePages(t *testing.T) {
	s := newTestService(t, Options{})
	var msgs []Message
	for i := range 10 {
		msgs = append(msgs, user(fmt.Sprint(i), fmt.Sprintf("message %d", i)))
	}
	id := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: msgs}).SessionID
	all, err := s.Timeline(t.Context(), TimelineRequest{SessionID: id, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	eid := map[string]string{}
	for _, e := range all.Entries {
		eid[e.Message.ID] = e.EntryID
	}
	tests := []struct {
		name       string
		req        TimelineRequest
		want       string
		before, af bool
	}{
		{"newest", TimelineRequest{Limit: 3}, "7 8 9", true, false},
		{"default limit holds all", TimelineRequest{}, "0 1 2 3 4 5 6 7 8 9", false, false},
		{"before", TimelineRequest{Before: eid["7"], Limit: 3}, "4 5 6", true, true},
		{"before the start", TimelineRequest{Before: eid["2"], Limit: 5}, "0 1", false, true},
		{"after", TimelineRequest{After: eid["2"], Limit: 3}, "3 4 5", true, true},
		{"after the leaf", TimelineRequest{After: eid["9"]}, "", true, false},
		{"around", TimelineRequest{Around: eid["5"], Limit: 3}, "4 5 6", true, true},
		{"around the start", TimelineRequest{Around: eid["0"], Limit: 4}, "0 1 2 3", false, true},
		{"around the end", TimelineRequest{Around: eid["9"], Limit: 4}, "6 7 8 9", true, false},
		{"one", TimelineRequest{Around: eid["3"], Limit: 1}, "3", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.SessionID = id
			res, err := s.Timeline(t.Context(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := timelineIDs(res.Entries); got != tc.want || res.HasBefore != tc.before || res.HasAfter != tc.af {
				t.Fatalf("got %q before=%v after=%v, want %q %v %v", got, res.HasBefore, res.HasAfter, tc.want, tc.before, tc.af)
			}
			if res.Length != 10 || res.Leaf != eid["9"] {
				t.Fatalf("length %d leaf %s", res.Length, res.Leaf)
			}
			for i, e := range res.Entries {
				if e.Kind != KindMessage || e.Time.IsZero() || i > 0 && e.Position <= res.Entries[i-1].Position {
					t.Fatalf("entry %d = %+v", i, e)
				}
			}
		})
	}
}

func TestTimelineErrors(t *testing.T) {
	s := newTestService(t, Options{})
	id := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", "a")}}).SessionID
	tests := []struct {
		name string
		req  TimelineRequest
		want error
		text string
	}{
		{"bad session id", TimelineRequest{SessionID: "../x"}, ErrInvalid, "not a valid id"},
		{"unknown session", TimelineRequest{SessionID: "nope"}, ErrNotFound, "no session"},
		{"unknown entry", TimelineRequest{SessionID: id, After: "zzz"}, ErrNotFound, "not on session"},
		{"bad entry id", TimelineRequest{SessionID: id, Around: "a/b"}, ErrInvalid, "entry id"},
		{"two anchors", TimelineRequest{SessionID: id, After: "a", Before: "b"}, ErrInvalid, "more than one anchor"},
		{"limit", TimelineRequest{SessionID: id, Limit: MaxTimelineLimit + 1}, ErrInvalid, "limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Timeline(t.Context(), tc.req)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
}

// A compacted session's timeline still holds the messages the summary replaced, with the
// compaction where it was made; an abandoned branch is not on it.
func TestTimelineCompactedAndBranched(t *testing.T) {
	s := newTestService(t, Options{})
	id := longSession(t, s, 20)
	res, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 5000})
	if err != nil || res.Status != StatusCompacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	tl, err := s.Timeline(t.Context(), TimelineRequest{SessionID: id, Limit: MaxTimelineLimit, MaxTokens: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	got := timelineIDs(tl.Entries)
	if len(tl.Entries) != 20*6+1 || !strings.HasPrefix(got, "t0u t0a") || !strings.HasSuffix(got, "t19z C") {
		t.Fatalf("timeline = %s", got)
	}
	c := tl.Entries[len(tl.Entries)-1].Compaction
	if !strings.Contains(c.Summary, "## Goal") || len(c.ModifiedFiles) == 0 || c.Facts == nil {
		t.Fatalf("compaction = %+v", c)
	}
	// Go back to the third message and continue from there.
	third := tl.Entries[2].EntryID
	mustSave(t, s, SaveRequest{SessionID: id, ParentID: third, Messages: []Message{user("b1", "another way")}})
	tl, err = s.Timeline(t.Context(), TimelineRequest{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	if got := timelineIDs(tl.Entries); got != "t0u t0a t0r b1" || tl.HasBefore || tl.HasAfter {
		t.Fatalf("after branching: %q", got)
	}
	if _, err := s.Timeline(t.Context(), TimelineRequest{SessionID: id, After: tl.Entries[0].EntryID}); err != nil {
		t.Fatal(err)
	}
}

// A page is bounded by its entries' tokens, but always holds one entry.
func TestTimelineTokenBound(t *testing.T) {
	s := newTestService(t, Options{})
	big := strings.Repeat("word ", 4000) // about 5,000 tokens
	id := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", big), user("2", big), user("3", big)}}).SessionID
	tl, err := s.Timeline(t.Context(), TimelineRequest{SessionID: id, MaxTokens: 6000})
	if err != nil {
		t.Fatal(err)
	}
	if got := timelineIDs(tl.Entries); got != "3" || !tl.HasBefore {
		t.Fatalf("got %q", got)
	}
	tl, err = s.Timeline(t.Context(), TimelineRequest{SessionID: id, MaxTokens: 10})
	if err != nil || timelineIDs(tl.Entries) != "3" {
		t.Fatalf("got %+v, %v", tl, err)
	}
}
