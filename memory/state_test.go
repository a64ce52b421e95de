package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/storage"
)

// The state keeps running totals per entry instead of walking the path. These tests hold
// them to the definitions they replace: the walks below are the algorithms the service used
// before (state.contextTokens, sessionPath.contextTokens and a resume that decodes the whole
// context and pages over it), applied to the same sessions.

// refContextTokens walks from the leaf: the newest compaction's summary, the entries it kept
// (when its first kept entry is on the path) and everything after it, calibrated by the
// newest usage after that compaction.
func refContextTokens(st *state) int {
	var after []*node // newest first
	var comp *node
	for i := st.leafIdx; i >= 0; i = st.nodes[i].parent {
		n := &st.nodes[i]
		if n.kind == KindCompaction {
			comp = n
			break
		}
		after = append(after, n)
	}
	total := 0
	for i, n := range after {
		if n.usage > 0 {
			total = n.usage
			for _, m := range after[:i] {
				total += m.tokens
			}
			return total
		}
		total += n.tokens
	}
	if comp != nil {
		total += comp.tokens
		if comp.firstKept >= 0 {
			for k := comp.parent; k >= 0; k = st.nodes[k].parent {
				if st.nodes[k].kind != KindCompaction { // an earlier summary is replaced
					total += st.nodes[k].tokens
				}
				if k == comp.firstKept {
					break
				}
			}
		}
	}
	return total
}

// refPathTokens is the estimate over a decoded path the way resume computed it before:
// package compaction's ContextTokensFrom over the summary, the kept entries and the newer ones,
// trusting usage only after the compaction.
func refPathTokens(p *sessionPath) int {
	if p.comp < 0 {
		return compaction.ContextTokens(compactionEntries(p.entries))
	}
	es := []compaction.Entry{compactionEntry(p.entries[p.comp])}
	trustFrom := 1
	for _, e := range p.context() {
		if e.Type == KindCompaction {
			continue // an earlier summary is replaced by the newest
		}
		es = append(es, compactionEntry(e))
		if e.seq < p.entries[p.comp].seq {
			trustFrom = len(es)
		}
	}
	return compaction.ContextTokensFrom(es, trustFrom)
}

// refMessages counts the messages on the leaf's path.
func refMessages(st *state) int {
	n := 0
	for i := st.leafIdx; i >= 0; i = st.nodes[i].parent {
		if st.nodes[i].kind == KindMessage {
			n++
		}
	}
	return n
}

// randomSession grows a session through the service with saves, branches, usage reports,
// compactions (keeping entries on the path, off it, or none) and branch summaries, calling
// check after every step.
func randomSession(t *testing.T, s *Service, rng *rand.Rand, steps int, check func(id string, step int)) string {
	t.Helper()
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("u0", "start")}})
	id := res.SessionID
	var entries []string // every entry id so far
	entries = append(entries, res.LeafID)
	// Words JSON encoders treat differently: HTML characters, quotes, escapes, non-ASCII.
	words := []string{"word", "<div class=\"x\">", "a&b", "tab\there", "line\nbreak", "é", "日本語", `back\slash`, "\u2028"}
	text := func(n int) string {
		var sb strings.Builder
		for i := range n {
			sb.WriteString(words[(i*7+n)%len(words)])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	for step := range steps {
		switch k := rng.IntN(20); {
		case k < 12: // a batch of messages, sometimes from an earlier entry
			req := SaveRequest{SessionID: id}
			if k == 0 && len(entries) > 2 {
				req.ParentID = entries[rng.IntN(len(entries))]
			}
			for j := range 1 + rng.IntN(4) {
				mid := fmt.Sprintf("m%d-%d", step, j)
				switch rng.IntN(4) {
				case 0:
					req.Messages = append(req.Messages, user(mid, text(rng.IntN(300))))
				case 1:
					m := assistant(mid, text(rng.IntN(200)))
					if rng.IntN(3) == 0 {
						m.Usage = &Usage{InputTokens: rng.IntN(5000), OutputTokens: rng.IntN(50)}
					}
					req.Messages = append(req.Messages, m)
				case 2:
					req.Messages = append(req.Messages, assistantCall(mid, "c"+mid, "read", `{"path":"a.go"}`))
				default:
					req.Messages = append(req.Messages, toolResult(mid, "c"+mid, text(rng.IntN(2000))))
				}
			}
			res = mustSave(t, s, req)
		case k < 15: // a compaction written through the service's own commit
			err := s.store.Update(t.Context(), id, func(w storage.Writer) error {
				st, err := s.current(id, w)
				if err != nil {
					return err
				}
				defer st.mu.Unlock()
				kept := ""
				switch rng.IntN(3) {
				case 0: // an entry on the path
					var path []string
					for i := st.leafIdx; i >= 0; i = st.nodes[i].parent {
						path = append(path, st.nodes[i].id)
					}
					kept = path[rng.IntN(min(len(path), 8))]
				case 1: // any entry, maybe off the path
					kept = entries[rng.IntN(len(entries))]
				}
				b := newBatch(st, st.leaf, s.now())
				b.barrier = rng.IntN(2) == 0
				b.add(Entry{Type: KindCompaction, Compaction: &Compaction{Summary: "summary " + text(rng.IntN(100)),
					FirstKeptID: kept, ReadFiles: []string{"a.go"}, ModifiedFiles: []string{}, Summarizer: "agent"}})
				return s.commit(w, st, b, s.now())
			})
			if err != nil {
				t.Fatal(err)
			}
		case k < 17: // a branch summary and a label
			err := s.store.Update(t.Context(), id, func(w storage.Writer) error {
				st, err := s.current(id, w)
				if err != nil {
					return err
				}
				defer st.mu.Unlock()
				b := newBatch(st, st.leaf, s.now())
				b.add(Entry{Type: KindBranchSummary, BranchSummary: &BranchSummary{FromID: st.leaf, Summary: "left " + text(rng.IntN(80))}})
				b.add(Entry{Type: KindLabel, Label: &Label{TargetID: st.leaf, Label: "x"}})
				return s.commit(w, st, b, s.now())
			})
			if err != nil {
				t.Fatal(err)
			}
		default: // a rename and a model change
			res = mustSave(t, s, SaveRequest{SessionID: id, Name: fmt.Sprintf("n%d", step), Model: fmt.Sprintf("m%d", step),
				Messages: []Message{user(fmt.Sprintf("r%d", step), text(20))}})
		}
		st := s.cached(t, id)
		entries = entries[:0]
		for i := range st.nodes {
			entries = append(entries, st.nodes[i].id)
		}
		check(id, step)
	}
	return id
}

// cached returns the service's state for id, caught up.
func (s *Service) cached(t *testing.T, id string) *state {
	t.Helper()
	var st *state
	err := s.store.View(t.Context(), id, func(r storage.Reader) error {
		var err error
		st, err = s.current(id, r)
		if err == nil {
			st.mu.Unlock()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStateTotalsMatchWalks(t *testing.T) {
	seeds, steps := 6, 60
	if raceEnabled {
		seeds, steps = 2, 30
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := newTestService(t, Options{})
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			randomSession(t, s, rng, steps, func(id string, step int) {
				st := s.cached(t, id)
				if got, want := st.contextTokens(), refContextTokens(st); got != want {
					t.Fatalf("step %d: context tokens %d, walk gives %d", step, got, want)
				}
				if got, want := st.messages, refMessages(st); got != want {
					t.Fatalf("step %d: messages %d, walk gives %d", step, got, want)
				}
				p, err := s.readPath(t.Context(), id, false)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := p.contextTokens(), refPathTokens(p); got != want {
					t.Fatalf("step %d: context tokens %d, path estimate %d", step, got, want)
				}
				meta, err := s.store.Get(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				if meta.ContextTokens != st.contextTokens() || meta.Messages != st.messages {
					t.Fatalf("step %d: index has %d tokens, %d messages; state %d, %d", step, meta.ContextTokens, meta.Messages,
						st.contextTokens(), st.messages)
				}
				// A state built from the log alone agrees with the one kept up by saves.
				if step%5 != 4 {
					return
				}
				fresh, err := Summarize(st.header, recordsOf(t, s, id))
				if err != nil {
					t.Fatal(err)
				}
				if fresh.ContextTokens != meta.ContextTokens || fresh.Messages != meta.Messages || fresh.Leaf != meta.Leaf ||
					fresh.Checkpoint != meta.Checkpoint {
					t.Fatalf("step %d: rebuilt meta %+v, kept %+v", step, fresh, meta)
				}
			})
		})
	}
}

func recordsOf(t *testing.T, s *Service, id string) func(func(storage.Record, error) bool) {
	var recs []storage.Record
	err := s.store.View(t.Context(), id, func(r storage.Reader) error {
		for rec, err := range r.Records(1) {
			if err != nil {
				return err
			}
			rec.Data = append([]byte(nil), rec.Data...)
			recs = append(recs, rec)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return func(yield func(storage.Record, error) bool) {
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// refResume pages the way Resume did before it seeked: decode the whole context, prune over
// all of it, and start each page at the entry the cursor names.
func refResume(t *testing.T, s *Service, id string, maxTokens int, prune bool) []ResumeResult {
	t.Helper()
	p, err := s.readPath(t.Context(), id, true)
	if err != nil {
		t.Fatal(err)
	}
	// The full path, then what the context starts with, as the old readPath(false) kept.
	var ctxEntries []*pathEntry
	if p.comp < 0 {
		ctxEntries = p.entries
	} else {
		sub := &sessionPath{entries: p.entries[:], comp: p.comp}
		ctxEntries = sub.context()
	}
	var msgs []Message
	var sizes []int
	var raws [][]byte
	for _, e := range ctxEntries {
		if m, ok := outputMessage(e); ok {
			msgs = append(msgs, m)
			sizes = append(sizes, rawOutputChars(e))
			raws = append(raws, e.raw)
		}
	}
	if prune {
		seen := 0
		for i := len(msgs) - 1; i >= 0; i-- {
			if seen < PruneProtectTokens {
				if raws[i] != nil {
					seen += compaction.EstimateMessage(raws[i])
				} else if b, err := json.Marshal(msgs[i]); err == nil {
					seen += compaction.EstimateMessage(b)
				}
				continue
			}
			sizes[i] = -1
			pruneToolOutputs(&msgs[i])
		}
	}
	var pages []ResumeResult
	start := 0
	for {
		res := ResumeResult{SessionID: id, WorkingDir: p.header.WorkingDir, ReadFiles: []string{}, ModifiedFiles: []string{},
			Pinned: []Message{}, Messages: []Message{}, ContextTokens: refPathTokens(p)}
		if c := p.compaction(); c != nil {
			res.Summary, res.ReadFiles, res.ModifiedFiles = c.Summary, nonNil(c.ReadFiles), nonNil(c.ModifiedFiles)
			if c.Facts != nil && start == 0 {
				f := c.Facts.Clone()
				res.Facts = &f
			}
		}
		cursorReserve := len(encodeToken("r1.", resumeCursor{Session: id, Next: strings.Repeat("x", MaxIDBytes), Seq: 1 << 62}))
		budget := maxTokens*4 - ResumeFrameChars - 2*cursorReserve
		fitHeader(&res, budget/2)
		used := jsonChars(res)
		next := len(msgs)
		for i := start; i < len(msgs); i++ {
			size := sizes[i]
			if size < 0 {
				size = jsonChars(msgs[i])
			}
			size++
			m := msgs[i]
			if used+size > budget {
				if len(res.Messages) > 0 {
					next = i
					break
				}
				m = fitMessage(m, budget-used-1)
				size = jsonChars(m) + 1
			}
			res.Messages = append(res.Messages, m)
			used += size
		}
		pages = append(pages, res)
		if next == len(msgs) {
			return pages
		}
		start = next
	}
}

func TestResumePagesMatchReference(t *testing.T) {
	seeds, steps := 4, 80
	if raceEnabled {
		seeds, steps = 2, 40
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := newTestService(t, Options{})
			rng := rand.New(rand.NewPCG(uint64(seed), 11))
			id := randomSession(t, s, rng, steps, func(string, int) {})
			for _, maxTokens := range []int{1000, 2500, 20000, 200000} {
				for _, prune := range []bool{false, true} {
					want := refResume(t, s, id, maxTokens, prune)
					var got []ResumeResult
					cursor := ""
					for {
						res, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: maxTokens, Prune: prune, Cursor: cursor})
						if err != nil {
							t.Fatal(err)
						}
						cursor = res.NextCursor
						res.NextCursor, res.Chars, res.Ahead = "", 0, nil
						got = append(got, res)
						if cursor == "" {
							break
						}
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("max_tokens %d prune %v: %d pages, reference %d\ngot  %s\nwant %s", maxTokens, prune, len(got), len(want),
							clip(mustString(got), 3000), clip(mustString(want), 3000))
					}
					// The same pages as stored JSON encode to the same bytes.
					cursor = ""
					for i := 0; ; i++ {
						res, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: maxTokens, Prune: prune, Cursor: cursor, Raw: true})
						if err != nil {
							t.Fatal(err)
						}
						if res.Messages != nil || len(res.RawMessages) != len(want[i].Messages) {
							t.Fatalf("raw page %d: %d messages, want %d", i, len(res.RawMessages), len(want[i].Messages))
						}
						// (Non-ASCII characters escaped, as resume pages go out.)
						if g, w := mustString(res.RawMessages), string(message.AppendASCII(nil, []byte(mustString(want[i].Messages)))); g != w {
							t.Fatalf("raw page %d differs:\ngot  %s\nwant %s", i, clip(g, 2000), clip(w, 2000))
						}
						if g, w := string(res.RawPage), `{"messages":[`+joinRaw(res.RawMessages); g != w {
							t.Fatalf("raw page %d: RawPage is not its messages:\ngot  %s\nwant %s", i, clip(g, 2000), clip(w, 2000))
						}
						if cursor = res.NextCursor; cursor == "" {
							break
						}
					}
				}
			}
		})
	}
}

// joinRaw joins raw JSON values with commas, as they are.
func joinRaw(items []json.RawMessage) string {
	var b bytes.Buffer
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	return b.String()
}

func mustString(v any) string { b, _ := json.Marshal(v); return string(b) }

// A cursor stays valid while its entry is on the path, and is stale once it is not.
func TestResumeCursorStaleness(t *testing.T) {
	s := newTestService(t, Options{})
	var msgs []Message
	for i := range 40 {
		msgs = append(msgs, user(fmt.Sprint(i), strings.Repeat("text ", 400)))
	}
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: msgs})
	p1, err := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID, MaxTokens: 2000})
	if err != nil || p1.NextCursor == "" {
		t.Fatalf("first page: %v, cursor %q", err, p1.NextCursor)
	}
	// New messages do not invalidate it.
	mustSave(t, s, SaveRequest{SessionID: res.SessionID, Messages: []Message{user("new", "more")}})
	p2, err := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID, MaxTokens: 2000, Cursor: p1.NextCursor})
	if err != nil || len(p2.Messages) == 0 || p2.Messages[0].ID != fmt.Sprint(len(p1.Messages)) {
		t.Fatalf("second page after a save: %v, %+v", err, p2.Messages)
	}
	// With working_dir instead of session_id the cursor must be that project's: another
	// project's resume does not read this session (and this project's still works).
	if _, err := s.Resume(t.Context(), ResumeRequest{WorkingDir: "/elsewhere", MaxTokens: 2000, Cursor: p1.NextCursor}); !errors.Is(err, ErrStale) {
		t.Fatalf("cursor with another working_dir: %v, want ErrStale", err)
	}
	if p, err := s.Resume(t.Context(), ResumeRequest{WorkingDir: wd, MaxTokens: 2000, Cursor: p1.NextCursor}); err != nil || len(p.Messages) == 0 {
		t.Fatalf("cursor with its own working_dir: %v", err)
	}
	// A branch from the first message leaves the cursor's entry off the path.
	mustSave(t, s, SaveRequest{SessionID: res.SessionID, ParentID: p1.Messages[0].EntryID, Messages: []Message{user("b", "branch")}})
	if _, err := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID, MaxTokens: 2000, Cursor: p1.NextCursor}); err == nil ||
		!strings.Contains(err.Error(), "stale") {
		t.Fatalf("cursor after a branch: %v, want stale", err)
	}
	// A session deleted and created again under the same id does not take the old cursor.
	s2 := newTestService(t, Options{NewID: func() string { return "same" }})
	a := mustSave(t, s2, SaveRequest{WorkingDir: wd, Messages: msgs})
	pa, _ := s2.Resume(t.Context(), ResumeRequest{SessionID: a.SessionID, MaxTokens: 2000})
	if _, err := s2.Delete(t.Context(), a.SessionID); err != nil {
		t.Fatal(err)
	}
	mustSave(t, s2, SaveRequest{WorkingDir: wd, Messages: msgs})
	if _, err := s2.Resume(t.Context(), ResumeRequest{SessionID: "same", MaxTokens: 2000, Cursor: pa.NextCursor}); err == nil {
		t.Fatal("a cursor from the deleted session was accepted")
	}
	_ = time.Now
}

// TestPreviewWithoutNUL: a preview never holds U+0000, which a PostgreSQL store's listing
// cannot hold (the message itself keeps it), so both stores list the session alike.
func TestPreviewWithoutNUL(t *testing.T) {
	s := newTestService(t, Options{})
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", "a\x00b \x00")}})
	sess, err := s.Get(t.Context(), res.SessionID)
	if err != nil || sess.Preview != "a\uFFFDb \uFFFD" {
		t.Fatalf("preview %q, %v", sess.Preview, err)
	}
	rr, err := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID})
	if err != nil || rr.Messages[0].Content[0].Text != "a\x00b \x00" {
		t.Fatalf("the message changed: %+v %v", rr.Messages, err)
	}
}

// TestPreviewWithoutANSI: a preview is the prompt as it reads, without terminal escape codes
// (as search snippets and the index have them, a708aba and 9cac542): the listing held
// "\x1b[31mred\x1b[0m alert", which the text block showed as "[31mred[0m alert" and
// session_list's query "red alert" did not find. A text block of escape codes alone counts as
// blank, so the next text is the preview.
func TestPreviewWithoutANSI(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []Message
		want string
	}{
		{"colored", []Message{user("1", "\x1b[31mred\x1b[0m alert\x1b]0;title\x07 now")}, "red alert now"},
		{"cursor moves", []Message{user("1", "one\x1b[1A\x1b[2Ktwo")}, "onetwo"},
		{"escapes alone", []Message{user("1", "\x1b[0m\x1b[?25h"), user("2", "second prompt")}, "second prompt"},
		{"escapes and blanks", []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: " \x1b[0m\n"}, {Type: BlockText, Text: "\x1b[1mbold\x1b[22m"}}}}, "bold"},
		{"plain", []Message{user("1", "plain  text\nhere")}, "plain text here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestService(t, Options{})
			res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: tc.msgs})
			sess, err := s.Get(t.Context(), res.SessionID)
			if err != nil || sess.Preview != tc.want {
				t.Fatalf("preview %q, %v; want %q", sess.Preview, err, tc.want)
			}
			l, err := s.List(t.Context(), ListRequest{Query: strings.ToUpper(tc.want[:4])})
			if err != nil || len(l.Sessions) != 1 {
				t.Errorf("query %q: %d sessions, %v", strings.ToUpper(tc.want[:4]), len(l.Sessions), err)
			}
			rr, err := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID})
			if err != nil || rr.Messages[0].Content[0].Text != tc.msgs[0].Content[0].Text {
				t.Fatalf("the message changed: %+v %v", rr.Messages, err)
			}
		})
	}
}
