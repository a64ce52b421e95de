package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/sessionmem/sessionmem/fileops"
	"github.com/sessionmem/sessionmem/storage"
)

// Resume paging limits.
const (
	DefaultMaxTokens = 20000
	MinMaxTokens     = 1000
	// PruneProtectTokens is the newest part of the context whose tool outputs prune keeps.
	PruneProtectTokens = 40000
	// ResumeFrameChars is what a transport may send around a resume page besides one copy of
	// its next_cursor: a short text beside the result (which may repeat the cursor but not
	// working_dir, which can be long) and the envelope around both. Resume sizes every page so
	// that the page and this frame together stay within max_tokens.
	ResumeFrameChars = 600
)

type resumeCursor struct {
	Session string `json:"s"`
	Next    string `json:"n"`           // entry id of the next message to return
	Seq     uint64 `json:"q,omitempty"` // its seq, so the page starts reading there
}

// Resume returns the context to continue a session: the latest summary with its file lists,
// then the kept and newer messages, oldest first, paged so that no response exceeds max_tokens.
//
// A page reads only what it returns: the cached state says which entries form the context and
// how large the newest part is (for prune), and the cursor carries the next entry's seq, so the
// store seeks to it and decodes from there (at most one frame more than the page returns).
// The page after it can be built in the background (ResumeResult.Ahead, resume_prefetch.go).
func (s *Service) Resume(ctx context.Context, req ResumeRequest) (ResumeResult, error) {
	maxTokens := req.MaxTokens
	switch {
	case maxTokens == 0:
		maxTokens = DefaultMaxTokens
	case maxTokens < MinMaxTokens:
		return ResumeResult{}, invalidf(fmt.Sprintf("pass max_tokens of at least %d, or omit it for %d", MinMaxTokens, DefaultMaxTokens),
			"max_tokens %d is too small", maxTokens)
	}
	id, cur, err := s.resumeTarget(ctx, req)
	if err != nil {
		return ResumeResult{}, err
	}
	key := pageKey{id: id, cursor: req.Cursor, maxTokens: maxTokens, prune: req.Prune, raw: req.Raw}
	var built *prefetched
	if cur != nil {
		built = s.pre.take(ctx, key)
	}
	var res ResumeResult
	served := false // res is built's page
	err = s.store.View(ctx, id, func(r storage.Reader) error {
		if cur != nil && req.SessionID == "" && req.WorkingDir != "" && r.Header().WorkingDir != s.redact(req.WorkingDir) {
			// The cursor names its session; with working_dir it must be that project's.
			return stalef("use a cursor only with the session it came from (its session_id), or omit cursor",
				"cursor belongs to a session of another working_dir, not %s", clip(req.WorkingDir, 200))
		}
		if res, served = s.builtAhead(r, built); served {
			return nil
		}
		var err error
		res, err = s.resumePage(r, id, cur, maxTokens, req.Prune, req.Raw)
		return err
	})
	if built != nil && !served {
		RecyclePage(built.res.RawPage)
	}
	if err != nil {
		return ResumeResult{}, mapStoreErr(id, err)
	}
	if res.NextCursor != "" && s.pre.gens != nil && maxTokens <= prefetchMaxTokens {
		key.cursor = res.NextCursor
		res.Ahead = func() { s.prefetch(key) }
	}
	return res, nil
}

// resumeTarget returns the session a resume request reads and its cursor, if any, decoded.
func (s *Service) resumeTarget(ctx context.Context, req ResumeRequest) (string, *resumeCursor, error) {
	var cur *resumeCursor
	if req.Cursor != "" {
		var c resumeCursor
		if err := decodeToken("r1.", req.Cursor, &c); err != nil || c.Next == "" {
			return "", nil, stalef("pass next_cursor exactly as session_resume returned it, or omit cursor", "cursor is not a session_resume cursor")
		}
		if req.SessionID != "" && c.Session != req.SessionID {
			return "", nil, stalef("use a cursor only with the session it came from", "cursor belongs to session %s, not %s", c.Session, req.SessionID)
		}
		cur = &c
	}
	id := req.SessionID
	if id == "" && cur != nil {
		id = cur.Session
	}
	if id != "" {
		return id, cur, checkSessionID("session_id", id)
	}
	if req.WorkingDir == "" {
		return "", nil, invalidf("pass session_id, or working_dir to resume the newest session of that project",
			"session_id and working_dir are both missing")
	}
	if err := checkWorkingDir(req.WorkingDir); err != nil {
		return "", nil, err
	}
	metas, err := s.listMetas(ctx, storage.ListQuery{WorkingDir: req.WorkingDir, Limit: 1})
	if err != nil {
		return "", nil, err
	}
	if len(metas) == 0 {
		return "", nil, notFoundf("start one with session_save, or call session_list without working_dir to see all sessions",
			"no session for working_dir %s", req.WorkingDir)
	}
	return metas[0].ID, nil, nil
}

// resumePage builds one page of a resume; the caller holds the session (View). The pager
// decides what fits the budget and where the next page starts; the renderer (pageRenderer)
// makes each message's output and says its size.
func (s *Service) resumePage(r storage.Reader, id string, cur *resumeCursor, maxTokens int, prune, raw bool) (ResumeResult, error) {
	st, err := s.current(id, r)
	if err != nil {
		return ResumeResult{}, err
	}
	v := st.contextView()
	start := 0
	if cur != nil {
		var ok bool
		if start, ok = st.cursorPosition(v, cur); !ok {
			st.mu.Unlock()
			return ResumeResult{}, stalef("start again without cursor", "cursor is stale: the session changed since that page (it was compacted or moved to another branch)")
		}
	}
	var comp *Compaction
	var pins []int32
	if v.comp >= 0 {
		comp = st.comps[v.comp]
		if cur == nil {
			pins = st.pinnedBeforeKept(v.comp)
		}
	}
	st.mu.Unlock()

	res := ResumeResult{SessionID: id, WorkingDir: r.Header().WorkingDir, ReadFiles: []string{}, ModifiedFiles: []string{},
		Pinned: []Message{}, Messages: []Message{}, ContextTokens: v.ctxTokens}
	if v.comp >= 0 {
		if comp == nil {
			if comp, err = s.readCompaction(r, st, v.comp); err != nil {
				return ResumeResult{}, err
			}
		}
		setPageHeader(&res, comp, cur == nil)
	}
	budget := pageBudget(id, maxTokens)
	fitHeader(&res, budget/2)
	used := jsonChars(res)
	count := 0 // messages in this page (pinned ones included)
	if len(pins) > 0 {
		pinned, err := readPinned(r, v.nodes, pins)
		if err != nil {
			return ResumeResult{}, err
		}
		used = addPinned(&res, pinned, used, budget)
		count = len(res.Pinned)
	}
	pr := pageRenderer{raw: raw, prune: prune, protectFrom: -PruneProtectTokens}
	if v.leaf >= 0 {
		pr.protectFrom += v.nodes[v.leaf].out // entries whose out total is above it are recent
	}
	// (v.leaf is -1 for a session created but given no record yet: a crash between the two,
	// or on PostgreSQL another process's save between its create and its first append.)
	if raw {
		res.RawMessages = []json.RawMessage{}
		pr.page = newPage(rawPageCap(v, start, budget))
	}
	var nextSeq uint64 // where the next page starts reading, if there is one
	err = v.each(r, start, func(p int, rec storage.Record) (bool, error) {
		n := &v.nodes[v.at(p)]
		if n.kind != KindMessage && n.kind != KindBranchSummary {
			return true, nil
		}
		it, err := pr.render(rec, n)
		if err != nil {
			return false, err
		}
		if used+it.size > budget {
			if count > 0 {
				res.NextCursor = encodeToken("r1.", resumeCursor{Session: id, Next: n.id, Seq: rec.Seq})
				nextSeq = rec.Seq
				return false, nil
			}
			// A single message larger than the whole budget: send it cut, and move on.
			if it, err = pr.cut(it, rec, budget-used-1); err != nil {
				return false, err
			}
		}
		count++
		used += it.size
		return true, pr.add(&res, it)
	})
	if err != nil {
		return ResumeResult{}, err
	}
	if ra, ok := r.(storage.ReadAheader); ok && nextSeq != 0 {
		// The client asks for the next page once it has taken in this one: the store can
		// decode what that page reads meanwhile (on a second core, a fresh server's full
		// resume no longer stops for a frame in the middle).
		ra.ReadAhead(nextSeq)
	}
	if raw {
		res.Messages = nil
		if len(pr.page) == 0 {
			pr.page = append(pr.page, rawPageStart...)
		}
		res.RawPage = pr.page
	}
	res.Chars = used + len(res.NextCursor)
	return res, nil
}

// pages keeps the buffers of raw pages their callers gave back (RecyclePage): a full resume
// of a long session is pages of hundreds of KB one after the other, and in a server just
// started each new buffer costs a page fault per 4 KiB, more than filling it.
var pages sync.Pool

// newPage returns an empty buffer of at least n bytes, a recycled one if there is one.
func newPage(n int) []byte {
	if b, ok := pages.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, n)
}

// RecyclePage gives back the buffer of a raw page (ResumeResult.RawPage, or what its caller
// made of it by appending) once nothing reads it any more.
func RecyclePage(b []byte) {
	if cap(b) >= 64<<10 {
		pages.Put(&b)
	}
}

// rawPageCap is the capacity a raw page's buffer starts with: what the rest of the context
// weighs (its estimated tokens are its text's characters / 4; its JSON, escapes and fields,
// takes up to half as much again), at most the page's budget (the page's bytes never exceed
// its characters), with room for the fields the caller adds. An estimate that falls short
// only costs the buffer's growth.
func rawPageCap(v *pathView, start, budget int) int {
	rest := budget
	if v.leaf >= 0 && start < v.len() {
		rest = min(rest, (v.nodes[v.leaf].out-v.nodes[v.at(start)].out+v.nodes[v.at(start)].tokens)*4*3/2)
	}
	return max(rest, 0) + 4096
}

// setPageHeader puts the latest compaction's summary and file lists on a page, and its facts
// on the first page. Every page carries the summary (the contract's summary is "" only when
// there is none), so a page read on its own, or fetched after the client lost the first, is
// not taken for an uncompacted session's; the facts, like pinned, would only repeat the
// first page's.
func setPageHeader(res *ResumeResult, comp *Compaction, first bool) {
	res.Summary = comp.Summary
	res.ReadFiles = nonNil(comp.ReadFiles)
	res.ModifiedFiles = nonNil(comp.ModifiedFiles)
	if first && comp.Facts != nil {
		f := comp.Facts.Clone()
		res.Facts = &f
	}
}

// pageBudget is the characters a page's JSON may take, its next_cursor not counted: max_tokens
// less what a transport may send around the page (ResumeFrameChars and a copy of the cursor
// in its text) and the room kept for the page's own next_cursor, not yet set. This is the only
// place a resume page's size is decided; transports send what Resume returns as it is.
func pageBudget(sessionID string, maxTokens int) int {
	cursor := len(encodeToken("r1.", resumeCursor{Session: sessionID, Next: strings.Repeat("x", MaxIDBytes), Seq: 1 << 62}))
	return maxTokens*4 - ResumeFrameChars - 2*cursor
}

// cursorPosition finds where a cursor continues in v: the entry it names must still be a
// message of the context. The caller holds st.mu.
func (st *state) cursorPosition(v *pathView, cur *resumeCursor) (int, bool) {
	i, ok := int32(-1), false
	if cur.Seq > 0 {
		ok = cur.Seq <= uint64(len(st.nodes)) && st.nodes[cur.Seq-1].id == cur.Next
		i = int32(cur.Seq) - 1
	} else {
		i, ok = st.ids[cur.Next] // a cursor from before cursors carried the seq
	}
	if !ok {
		return 0, false
	}
	if k := st.nodes[i].kind; k != KindMessage && k != KindBranchSummary {
		return 0, false
	}
	return v.find(i)
}

// readCompaction decodes compaction entry c and caches it in st.
func (s *Service) readCompaction(r storage.Reader, st *state, c int32) (*Compaction, error) {
	for rec, err := range r.Records(uint64(c) + 1) {
		if err != nil {
			return nil, err
		}
		e, err := decodeEntry(rec.Data)
		if err != nil || e.Compaction == nil {
			return nil, fmt.Errorf("record %d is not the compaction the session's state names: %w", rec.Seq, storage.ErrCorrupt)
		}
		st.mu.Lock()
		if st.comps == nil {
			st.comps = map[int32]*Compaction{}
		}
		st.comps[c] = e.Compaction
		st.mu.Unlock()
		return e.Compaction, nil
	}
	return nil, fmt.Errorf("compaction record %d missing: %w", c+1, storage.ErrCorrupt)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Transcript reads a session's whole current path.
func (s *Service) Transcript(ctx context.Context, sessionID string) (Transcript, error) {
	if err := checkSessionID("session_id", sessionID); err != nil {
		return Transcript{}, err
	}
	meta, err := s.Get(ctx, sessionID)
	if err != nil {
		return Transcript{}, err
	}
	p, err := s.readPath(ctx, sessionID, true)
	if err != nil {
		return Transcript{}, err
	}
	t := Transcript{Session: meta, ReadFiles: []string{}, ModifiedFiles: []string{}, Messages: []Message{}}
	if c := p.compaction(); c != nil {
		t.Summary = c.Summary
		t.ReadFiles = nonNil(c.ReadFiles)
		t.ModifiedFiles = nonNil(c.ModifiedFiles)
	}
	t.Entries = []TranscriptEntry{}
	for _, e := range p.entries {
		if m, ok := outputMessage(e); ok {
			t.Messages = append(t.Messages, m)
		}
		switch e.Type {
		case KindMessage:
			m := *e.Message
			t.Entries = append(t.Entries, TranscriptEntry{EntryID: e.ID, Time: e.Time, Message: &m})
		case KindCompaction:
			t.Entries = append(t.Entries, TranscriptEntry{EntryID: e.ID, Time: e.Time, Compaction: e.Compaction})
		}
	}
	return t, nil
}

// summaryText returns a stored summary without its file tags.
func summaryText(summary string) string { return strings.TrimSpace(fileops.StripTags(summary)) }
