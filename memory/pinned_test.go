package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/compaction"
)

// pinnedTask is a standing instruction a session pins at its start.
func pinnedTask(id string) Message {
	m := user(id, "Task: port the <build> scripts to Go & keep every flag. Never touch vendor/. Use tabs, not spaces.")
	m.Pinned = true
	return m
}

func TestPinnedSurvivesCompactionsVerbatim(t *testing.T) {
	s := newTestService(t, Options{})
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{pinnedTask("task")}})
	id := res.SessionID
	pinID := res.LeafID
	first, err := s.Resume(t.Context(), ResumeRequest{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Pinned) != 0 || len(first.Messages) != 1 || !first.Messages[0].Pinned {
		t.Fatalf("before any compaction the pinned message is among messages: pinned %d, messages %+v", len(first.Pinned), first.Messages)
	}
	want := first.Messages[0]
	for round := range 3 {
		var msgs []Message
		for i := range 8 {
			msgs = append(msgs, turn(round*100+i, fmt.Sprintf("f%d_%d.go", round, i), 3000)...)
		}
		mustSave(t, s, SaveRequest{SessionID: id, Messages: msgs})
		c, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 3000})
		if err != nil || c.Status != StatusCompacted {
			t.Fatalf("round %d: %+v %v", round, c, err)
		}
		if strings.Contains(c.Summary, "Never touch vendor/") {
			t.Errorf("round %d: the summary retells the pinned message", round)
		}
		for _, n := range c.Facts.Constraints {
			if strings.Contains(n.Text, "vendor/") {
				t.Errorf("round %d: the ledger copies the pinned message: %q", round, n.Text)
			}
		}
		r, err := s.Resume(t.Context(), ResumeRequest{SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Pinned) != 1 || !reflect.DeepEqual(r.Pinned[0], want) {
			t.Fatalf("round %d: pinned = %+v, want %+v", round, r.Pinned, want)
		}
		if r.Pinned[0].EntryID != pinID {
			t.Fatalf("round %d: entry id %s, want %s", round, r.Pinned[0].EntryID, pinID)
		}
		if r.Facts == nil || mustString(r.Facts) != mustString(c.Facts) {
			t.Fatalf("round %d: resume facts %+v, compact gave %+v", round, r.Facts, c.Facts)
		}
		// Pinned count towards context tokens, and compaction says so in tokens_after.
		if c.TokensAfter != r.ContextTokens {
			t.Errorf("round %d: tokens_after %d, context_tokens %d", round, c.TokensAfter, r.ContextTokens)
		}
		// Later pages carry no pinned and no facts.
		if r.NextCursor != "" {
			r2, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, Cursor: r.NextCursor})
			if err != nil || len(r2.Pinned) != 0 || r2.Pinned == nil || r2.Facts != nil {
				t.Fatalf("round %d: second page pinned %v facts %v err %v", round, r2.Pinned, r2.Facts, err)
			}
		}
	}
	all, err := s.Pinned(t.Context(), id)
	if err != nil || len(all) != 1 || !reflect.DeepEqual(all[0], want) {
		t.Fatalf("Pinned = %+v, %v", all, err)
	}
	// A fork carries the pin.
	f, err := s.Fork(t.Context(), ForkRequest{SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	fr, err := s.Resume(t.Context(), ResumeRequest{SessionID: f.SessionID})
	if err != nil || len(fr.Pinned) != 1 || !reflect.DeepEqual(fr.Pinned[0], want) {
		t.Fatalf("fork pinned = %+v, %v", fr.Pinned, err)
	}
}

func TestPinnedContextTokens(t *testing.T) {
	s := newTestService(t, Options{})
	id := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{pinnedTask("task")}}).SessionID
	var msgs []Message
	for i := range 10 {
		msgs = append(msgs, turn(i, fmt.Sprintf("g%d.go", i), 3000)...)
	}
	mustSave(t, s, SaveRequest{SessionID: id, Messages: msgs})
	c, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 2000})
	if err != nil || c.Status != StatusCompacted {
		t.Fatal(c, err)
	}
	r, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 200000})
	if err != nil {
		t.Fatal(err)
	}
	want := compaction.EstimateText(r.Summary)
	for _, m := range append(append([]Message{}, r.Pinned...), r.Messages...) {
		b, _ := json.Marshal(storedMessage(Message{Role: m.Role, Content: m.Content}))
		want += compaction.EstimateMessage(b)
	}
	if r.ContextTokens != want {
		t.Fatalf("context_tokens %d, summary + pinned + messages estimate %d", r.ContextTokens, want)
	}
}

func TestPinnedCap(t *testing.T) {
	s := newTestService(t, Options{})
	big := func(id string, chars int) Message {
		m := user(id, strings.Repeat("x", chars))
		m.Pinned = true
		return m
	}
	// Creating a session with too much pinned fails and leaves no session behind.
	_, err := s.Save(t.Context(), SaveRequest{WorkingDir: wd, Messages: []Message{big("a", 4*MaxPinnedTokens)}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "8000") {
		t.Fatalf("err = %v", err)
	}
	if l, _ := s.List(t.Context(), ListRequest{}); len(l.Sessions) != 0 {
		t.Fatalf("a refused save created %d sessions", len(l.Sessions))
	}
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{big("a", 4*5000)}})
	before, _ := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID, MaxTokens: 200000})
	// Two pins that fit alone but not together: nothing of the batch is stored.
	_, err = s.Save(t.Context(), SaveRequest{SessionID: res.SessionID, Messages: []Message{user("plain", "hi"), big("b", 4*2000), big("c", 4*2000)}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "pinned") {
		t.Fatalf("err = %v", err)
	}
	after, _ := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID, MaxTokens: 200000})
	if len(after.Messages) != len(before.Messages) {
		t.Fatalf("a refused save stored %d messages", len(after.Messages)-len(before.Messages))
	}
	// Up to the cap is fine; unpinned messages never count.
	mustSave(t, s, SaveRequest{SessionID: res.SessionID, Messages: []Message{big("b", 4*2000), user("u", strings.Repeat("y", 100000))}})
	st := s.cached(t, res.SessionID)
	if st.pinnedCost > MaxPinnedTokens || st.pinnedCost < 7000 {
		t.Fatalf("pinned cost %d", st.pinnedCost)
	}
	// The cost is the JSON a resume returns for them, / 4.
	all, _ := s.Pinned(t.Context(), res.SessionID)
	total := 0
	for _, m := range all {
		total += (jsonChars(m) + 3) / 4
	}
	if total != st.pinnedCost {
		t.Fatalf("state says %d pinned tokens, the JSON of the pinned messages %d", st.pinnedCost, total)
	}
}

func TestPinnedFirstPageOnlyWithinMaxTokens(t *testing.T) {
	s := newTestService(t, Options{})
	var pins []Message
	for i := range 6 {
		m := user(fmt.Sprintf("p%d", i), fmt.Sprintf("Rule %d: ", i)+strings.Repeat("keep <this> & that ", 120))
		m.Pinned = true
		pins = append(pins, m)
	}
	id := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: pins}).SessionID
	var msgs []Message
	for i := range 12 {
		msgs = append(msgs, turn(i, fmt.Sprintf("h%d.go", i), 3000)...)
	}
	mustSave(t, s, SaveRequest{SessionID: id, Messages: msgs})
	if c, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 2000}); err != nil || c.Status != StatusCompacted {
		t.Fatal(c, err)
	}
	for _, maxTokens := range []int{1000, 2000, 5000, 20000} {
		cursor := ""
		pinnedSeen, pages := 0, 0
		for {
			r, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: maxTokens, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			if n := (jsonChars(r) + len(r.NextCursor) + 3) / 4; n > maxTokens {
				t.Fatalf("max_tokens %d: page %d is %d tokens", maxTokens, pages, n)
			}
			if r.Chars != jsonChars(r)+len(r.NextCursor) && r.Chars < jsonChars(r) {
				t.Fatalf("max_tokens %d: page %d measured %d chars, is %d", maxTokens, pages, r.Chars, jsonChars(r))
			}
			if pages > 0 && len(r.Pinned) > 0 {
				t.Fatalf("max_tokens %d: pinned on page %d", maxTokens, pages)
			}
			pinnedSeen += len(r.Pinned)
			pages++
			if cursor = r.NextCursor; cursor == "" {
				break
			}
		}
		if pinnedSeen == 0 || (maxTokens >= 20000 && pinnedSeen != len(pins)) {
			t.Fatalf("max_tokens %d: %d pinned returned", maxTokens, pinnedSeen)
		}
	}
	r, _ := s.Resume(t.Context(), ResumeRequest{SessionID: id})
	for i, m := range r.Pinned {
		if m.ID != pins[i].ID || !reflect.DeepEqual(m.Content, pins[i].Content) {
			t.Fatalf("pinned[%d] is not verbatim", i)
		}
	}
}

// TestCompactCalibratedByUsage is the case: usage puts context_tokens near 57,600 while
// the messages weigh about 20,800 by characters. Told to compact, compaction must compact.
func TestCompactCalibratedByUsage(t *testing.T) {
	s := newTestService(t, Options{})
	var msgs []Message
	for i := range 20 {
		msgs = append(msgs, turn(i, fmt.Sprintf("c%d.go", i), 2900)...)
	}
	last := &msgs[len(msgs)-1]
	last.Usage = &Usage{InputTokens: 57000, OutputTokens: 619}
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, ContextWindow: 64000, Messages: msgs})
	st := s.cached(t, res.SessionID)
	est := st.nodes[st.leafIdx].est
	if res.ContextTokens != 57619 || est < 18000 || est > 24000 || !res.ShouldCompact {
		t.Fatalf("context_tokens %d (estimate %d), should_compact %v", res.ContextTokens, est, res.ShouldCompact)
	}
	// Measured by characters, the default 20,000 kept tokens cover the whole session.
	p, err := s.readPath(t.Context(), res.SessionID, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := compaction.FindCut(compactionEntries(p.entries), 0, -1); ok {
		t.Fatalf("the session is too long to show the issue: by characters there is something to fold (estimate %d)", est)
	}
	// Another server process (which never saw the context window) compacts it.
	other := New(s.Store(), Options{})
	c, err := other.Compact(t.Context(), CompactRequest{SessionID: res.SessionID, Summarizer: SummarizerExtractive})
	if err != nil || c.Status != StatusCompacted {
		t.Fatalf("compact: %+v %v", c, err)
	}
	if c.TokensBefore != res.ContextTokens || c.TokensAfter >= c.TokensBefore {
		t.Fatalf("tokens %d -> %d", c.TokensBefore, c.TokensAfter)
	}
}

// TestShouldCompactAlwaysCompacts: for random sessions with usage, whenever session_save says
// should_compact, session_compact compacts, and the context shrinks.
func TestShouldCompactAlwaysCompacts(t *testing.T) {
	seeds := 12
	if raceEnabled {
		seeds = 4
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 99))
			s := newTestService(t, Options{})
			windows := []int{32000, 64000, 128000, 200000}
			window := windows[rng.IntN(len(windows))]
			factor := 0.8 + 2.5*rng.Float64() // how far the provider's count is above chars/4
			keep := 0
			if rng.IntN(2) == 0 {
				keep = 2000 + rng.IntN(40000)
			}
			first := []Message{user("u0", "start")}
			if rng.IntN(2) == 0 {
				first = append(first, pinnedTask("pin"))
			}
			id := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: first}).SessionID
			compacted := 0
			for step := 0; compacted < 3 && step < 400; step++ {
				msgs := turn(step, fmt.Sprintf("p%d.go", step%7), 500+rng.IntN(8000))
				if rng.IntN(10) == 0 {
					msgs[0].Pinned = rng.IntN(3) == 0 // a few short pins along the way
				}
				st := s.cached(t, id)
				est := st.nodes[st.leafIdx].est
				for _, m := range msgs {
					b, _ := json.Marshal(storedMessage(m))
					est += compaction.EstimateMessage(b)
				}
				last := &msgs[len(msgs)-1]
				last.Usage = &Usage{InputTokens: int(float64(est) * factor), OutputTokens: 100}
				res, err := s.Save(t.Context(), SaveRequest{SessionID: id, ContextWindow: window, Messages: msgs})
				if errors.Is(err, ErrInvalid) && strings.Contains(err.Error(), "pinned") {
					msgs[0].Pinned = false
					res, err = s.Save(t.Context(), SaveRequest{SessionID: id, ContextWindow: window, Messages: msgs})
				}
				if err != nil {
					t.Fatal(err)
				}
				if !res.ShouldCompact {
					continue
				}
				c, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: keep})
				if err != nil {
					t.Fatal(err)
				}
				if c.Status != StatusCompacted {
					t.Fatalf("step %d: should_compact at %d tokens (window %d, factor %.2f, keep %d), compact says %s",
						step, res.ContextTokens, window, factor, keep, c.Status)
				}
				if c.TokensBefore != res.ContextTokens || c.TokensAfter >= c.TokensBefore {
					t.Fatalf("step %d: tokens %d -> %d (context_tokens was %d)", step, c.TokensBefore, c.TokensAfter, res.ContextTokens)
				}
				if compaction.ShouldCompact(c.TokensAfter, window) {
					t.Fatalf("step %d: after compacting, %d tokens still over the threshold of window %d", step, c.TokensAfter, window)
				}
				compacted++
			}
			if compacted == 0 {
				t.Fatalf("never asked to compact (window %d, factor %.2f)", window, factor)
			}
		})
	}
}

// TestImportPinsFirstThatFit: an import never fails for too much pinned context; it keeps the
// first pins that fit pinned and says how many it stored unpinned.
func TestImportPinsFirstThatFit(t *testing.T) {
	s := newTestService(t, Options{})
	var items []ImportItem
	for i := range 5 {
		m := user(fmt.Sprintf("i%d", i), strings.Repeat("z", 4*3000))
		m.Pinned = true
		items = append(items, ImportItem{Message: &m})
	}
	res, err := s.Import(t.Context(), ImportRequest{SessionID: "imp-1", WorkingDir: wd, Items: items})
	if err != nil || res.Added != 5 || res.Unpinned != 3 {
		t.Fatalf("import: %+v %v", res, err)
	}
	all, err := s.Pinned(t.Context(), "imp-1")
	if err != nil || len(all) != 2 || all[0].ID != "i0" || all[1].ID != "i1" {
		t.Fatalf("pinned after import: %d, %v", len(all), err)
	}
	if st := s.cached(t, "imp-1"); st.pinnedCost > MaxPinnedTokens {
		t.Fatalf("pinned cost %d", st.pinnedCost)
	}
}
