package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sessionmem/sessionmem/compaction"
)

// longSession saves n turns, each touching its own file, and returns the session id.
func longSession(t *testing.T, s *Service, n int) string {
	t.Helper()
	var msgs []Message
	for i := range n {
		msgs = append(msgs, turn(i, fmt.Sprintf("pkg/file%02d.go", i), 4000)...)
	}
	return mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: msgs}).SessionID
}

func TestCompactNothingToCompact(t *testing.T) {
	s := newTestService(t, Options{})
	id := longSession(t, s, 1)
	res, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusNothingToCompact || res.ContextTokens == 0 {
		t.Fatalf("res = %+v", res)
	}
}

// Right after a compaction, compacting again with the same keep has nothing to fold, and
// with a smaller one folds the older part of what was kept (nothing_to_compact means nothing
// is older than keep_recent_tokens: it used to answer so whenever the newest entry was a
// compaction).
func TestCompactAgainRightAfter(t *testing.T) {
	s := newTestService(t, Options{})
	id := longSession(t, s, 30)
	first, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 8000})
	if err != nil || first.Status != StatusCompacted {
		t.Fatalf("first compaction: %+v, %v", first, err)
	}
	same, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 8000})
	if err != nil || same.Status != StatusNothingToCompact {
		t.Fatalf("again with the same keep: %+v, %v", same.Status, err)
	}
	smaller, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 2000})
	if err != nil || smaller.Status != StatusCompacted || smaller.TokensAfter >= first.TokensAfter || smaller.FirstKeptID == first.FirstKeptID {
		t.Fatalf("again with a smaller keep: %+v (first %d tokens after, kept from %s), %v", smaller.Status, first.TokensAfter, first.FirstKeptID, err)
	}
}

func TestCompactExtractiveAndResume(t *testing.T) {
	s := newTestService(t, Options{})
	id := longSession(t, s, 30)
	before, _ := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 200000})
	res, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusCompacted || res.Summarizer != "extractive" || res.FirstKeptID == "" {
		t.Fatalf("res = %+v", res)
	}
	if res.TokensAfter >= res.TokensBefore {
		t.Errorf("tokens %d -> %d", res.TokensBefore, res.TokensAfter)
	}
	if !strings.Contains(res.Summary, "<modified-files>") || len(res.ModifiedFiles) == 0 {
		t.Errorf("summary lacks file tags: %q", res.Summary)
	}
	after, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 200000})
	if err != nil {
		t.Fatal(err)
	}
	if after.Summary != res.Summary || len(after.Messages) >= len(before.Messages) || after.Messages[0].EntryID != res.FirstKeptID {
		t.Fatalf("resume after compaction: %d messages (was %d), first %s want %s", len(after.Messages), len(before.Messages), after.Messages[0].EntryID, res.FirstKeptID)
	}
	if after.Messages[0].Role == RoleToolResult {
		t.Errorf("kept part starts with a tool result")
	}
	sess, _ := s.Get(t.Context(), id)
	if sess.Compactions != 1 {
		t.Errorf("compactions = %d", sess.Compactions)
	}
	// A fresh service (another process) reads the same thing from the checkpoint.
	s2 := New(s.store, Options{})
	again, err := s2.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 200000})
	if err != nil || len(again.Messages) != len(after.Messages) {
		t.Fatalf("second service: %v, %d messages", err, len(again.Messages))
	}
}

// Every page of a compacted session's resume carries the latest summary and its file lists
// (the contract's summary is "" only when there is none); the facts, like pinned, are on the
// first page only. Later pages used to say summary "" as if the session were not compacted.
func TestResumeEveryPageHasSummary(t *testing.T) {
	s := newTestService(t, Options{})
	id := longSession(t, s, 30)
	comp, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 12000})
	if err != nil || comp.Status != StatusCompacted {
		t.Fatalf("compact: %+v, %v", comp.Status, err)
	}
	for _, fresh := range []bool{false, true} { // from the cached state, and another process's
		svc := s
		if fresh {
			svc = New(s.store, Options{})
		}
		pages, cursor := 0, ""
		for {
			page, err := svc.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 4000, Cursor: cursor})
			if err != nil {
				t.Fatalf("page %d: %v", pages+1, err)
			}
			pages++
			if page.Summary == "" || !strings.HasPrefix(comp.Summary, strings.SplitN(page.Summary, "\n[…", 2)[0]) {
				t.Errorf("fresh %v, page %d: summary %.80q, want the compaction's", fresh, pages, page.Summary)
			}
			if len(page.ModifiedFiles) == 0 {
				t.Errorf("fresh %v, page %d: no modified_files", fresh, pages)
			}
			if (page.Facts != nil) != (pages == 1 && comp.Facts != nil) {
				t.Errorf("fresh %v, page %d: facts %v", fresh, pages, page.Facts != nil)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if pages < 3 {
			t.Fatalf("fresh %v: %d pages; the test needs several", fresh, pages)
		}
	}
}

func TestCompactFilesAreCumulative(t *testing.T) {
	s := newTestService(t, Options{})
	id := longSession(t, s, 12)
	var all []string
	for round := range 3 {
		var msgs []Message
		for i := range 12 {
			msgs = append(msgs, turn(100*(round+1)+i, fmt.Sprintf("round%d/f%02d.go", round, i), 4000)...)
		}
		mustSave(t, s, SaveRequest{SessionID: id, Messages: msgs})
		res, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 4000})
		if err != nil || res.Status != StatusCompacted {
			t.Fatalf("round %d: %v %+v", round, err, res.Status)
		}
		all = res.ModifiedFiles
		mod := map[string]bool{}
		for _, f := range res.ModifiedFiles {
			mod[f] = true
		}
		for _, f := range res.ReadFiles {
			if mod[f] {
				t.Errorf("round %d: %s listed as read and modified", round, f)
			}
		}
	}
	// Every file of the first 12 turns and every compacted round must still be listed.
	have := map[string]bool{}
	for _, f := range all {
		have[f] = true
	}
	for i := range 12 {
		if f := fmt.Sprintf("pkg/file%02d.go", i); !have[f] {
			t.Errorf("%s lost after three compactions", f)
		}
	}
	for i := range 6 {
		if f := fmt.Sprintf("round1/f%02d.go", i); !have[f] {
			t.Errorf("%s lost", f)
		}
	}
}

func TestCompactAgentTwoStep(t *testing.T) {
	s := newTestService(t, Options{})
	id := longSession(t, s, 20)
	step1, err := s.Compact(t.Context(), CompactRequest{SessionID: id, KeepRecentTokens: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if step1.Status != StatusNeedsSummary || step1.CompactionID == "" || step1.Prompt == "" || step1.Conversation == "" || len(step1.ModifiedFiles) == 0 {
		t.Fatalf("step 1 = %+v", step1.Status)
	}
	if n := compaction.EstimateText(step1.Conversation + step1.Prompt); n > 20000 {
		t.Errorf("needs_summary carries %d tokens", n)
	}
	// Errors first: nothing may be written by them.
	bad := []CompactRequest{
		{SessionID: id, Summary: "x"},
		{SessionID: id, CompactionID: step1.CompactionID},
		{SessionID: id, Summary: "x", CompactionID: "c1.garbage"},
		{SessionID: id, Summarizer: "magic"},
		{SessionID: id, Summarizer: SummarizerSampling},
		{SessionID: id, Summarizer: SummarizerLLM},
	}
	for _, b := range bad {
		if _, err := s.Compact(t.Context(), b); err == nil {
			t.Errorf("Compact(%+v) succeeded", b)
		}
	}
	sum := "## Goal\nFix the bugs.\n\n<read-files>\nechoed.go\n</read-files>"
	done, err := s.Compact(t.Context(), CompactRequest{SessionID: id, CompactionID: step1.CompactionID, Summary: sum})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != StatusCompacted || done.Summarizer != "agent" || strings.Count(done.Summary, "<read-files>") > 1 || strings.Contains(done.Summary, "echoed.go") {
		t.Fatalf("step 2 = %+v", done)
	}
	// The same compaction_id again is stale now.
	if _, err := s.Compact(t.Context(), CompactRequest{SessionID: id, CompactionID: step1.CompactionID, Summary: sum}); !errors.Is(err, ErrStale) {
		t.Errorf("reused compaction_id: %v", err)
	}
	// A save between the steps makes the id stale too.
	mustSave(t, s, SaveRequest{SessionID: id, Messages: turn(99, "late.go", 30000)})
	again, err := s.Compact(t.Context(), CompactRequest{SessionID: id, KeepRecentTokens: 1000})
	if err != nil || again.Status != StatusNeedsSummary {
		t.Fatalf("second step 1: %v %+v", err, again.Status)
	}
	if again.PreviousSummary != "## Goal\nFix the bugs." {
		t.Errorf("previous_summary = %q", again.PreviousSummary)
	}
	mustSave(t, s, SaveRequest{SessionID: id, Messages: []Message{user("after", "more")}})
	if _, err := s.Compact(t.Context(), CompactRequest{SessionID: id, CompactionID: again.CompactionID, Summary: "s"}); !errors.Is(err, ErrStale) {
		t.Errorf("compaction_id after a save: %v", err)
	}
}

func TestCompactWithSummarizers(t *testing.T) {
	var mu sync.Mutex
	var got compaction.Request
	sampler := compaction.SummarizerFunc{N: "sampling", F: func(ctx context.Context, req compaction.Request) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(req.History) > 0 {
			got = req
		}
		return "## Goal\nsampled", nil
	}}
	llm := compaction.SummarizerFunc{N: "llm", F: func(ctx context.Context, req compaction.Request) (string, error) {
		return "## Goal\nfrom llm", nil
	}}
	failing := compaction.SummarizerFunc{N: "sampling", F: func(ctx context.Context, req compaction.Request) (string, error) {
		return "", errors.New("model overloaded")
	}}
	cases := []struct {
		name    string
		opts    Options
		req     CompactRequest
		wantBy  string
		wantErr error
	}{
		{"auto prefers sampling", Options{LLM: llm}, CompactRequest{Sampler: sampler}, "sampling", nil},
		{"auto falls back to llm", Options{LLM: llm}, CompactRequest{}, "llm", nil},
		{"explicit llm", Options{LLM: llm}, CompactRequest{Summarizer: SummarizerLLM, Sampler: sampler}, "llm", nil},
		{"failing sampler", Options{}, CompactRequest{Summarizer: SummarizerSampling, Sampler: failing}, "", ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestService(t, tc.opts)
			tc.req.SessionID = longSession(t, s, 20)
			tc.req.KeepRecentTokens = 5000
			var steps []string
			tc.req.Progress = func(done, total float64, msg string) { steps = append(steps, msg) }
			res, err := s.Compact(t.Context(), tc.req)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || res.Summarizer != tc.wantBy || res.Status != StatusCompacted {
				t.Fatalf("res = %+v, err %v", res, err)
			}
			if len(steps) < 3 {
				t.Errorf("progress steps = %v", steps)
			}
		})
	}
	if len(got.History) == 0 || len(got.ModifiedFiles) == 0 {
		t.Errorf("sampler got an empty request: %d entries, %v", len(got.History), got.ModifiedFiles)
	}
}

// TestCompactUsageBelowEstimate: usage far below the character estimate (input_tokens without
// the cached part, as some clients report it) must not make an explicit compaction keep
// everything: the cut never counts fewer tokens than the characters suggest.
func TestCompactUsageBelowEstimate(t *testing.T) {
	s := newTestService(t, Options{})
	var msgs []Message
	for i := range 20 {
		a := assistant(fmt.Sprintf("a%d", i), strings.Repeat("a long answer ", 50))
		a.Usage = &Usage{InputTokens: 100 + i, OutputTokens: 20}
		msgs = append(msgs, user(fmt.Sprintf("u%d", i), strings.Repeat("a long question ", 40)), a)
	}
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: msgs})
	c, err := s.Compact(t.Context(), CompactRequest{SessionID: res.SessionID, Summarizer: SummarizerExtractive, KeepRecentTokens: 1000})
	if err != nil || c.Status != StatusCompacted {
		t.Fatalf("compact: %+v, %v", c, err)
	}
}
