package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/fileops"
	"github.com/sessionmem/sessionmem/storage"
)

// Resume paging limits.
const (
	DefaultMaxTokens = 20000
	MinMaxTokens     = 1000
	// PruneProtectTokens is the newest part of the context whose tool outputs prune keeps.
	PruneProtectTokens = 40000
	// responseSlack leaves room for the short text block a transport adds next to the result
	// and the envelope around both (working_dir and the cursor are reserved separately).
	responseSlack = 600
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
func (s *Service) Resume(ctx context.Context, req ResumeRequest) (ResumeResult, error) {
	maxTokens := req.MaxTokens
	switch {
	case maxTokens == 0:
		maxTokens = DefaultMaxTokens
	case maxTokens < MinMaxTokens:
		return ResumeResult{}, invalidf(fmt.Sprintf("pass max_tokens of at least %d, or omit it for %d", MinMaxTokens, DefaultMaxTokens),
			"max_tokens %d is too small", maxTokens)
	}
	var cur *resumeCursor
	if req.Cursor != "" {
		var c resumeCursor
		if err := decodeToken("r1.", req.Cursor, &c); err != nil || c.Next == "" {
			return ResumeResult{}, stalef("pass next_cursor exactly as session_resume returned it, or omit cursor", "cursor is not a session_resume cursor")
		}
		if req.SessionID != "" && c.Session != req.SessionID {
			return ResumeResult{}, stalef("use a cursor only with the session it came from", "cursor belongs to session %s, not %s", c.Session, req.SessionID)
		}
		cur = &c
	}
	id := req.SessionID
	if id == "" && cur != nil {
		id = cur.Session
	}
	if id == "" {
		if req.WorkingDir == "" {
			return ResumeResult{}, invalidf("pass session_id, or working_dir to resume the newest session of that project",
				"session_id and working_dir are both missing")
		}
		if err := checkWorkingDir(req.WorkingDir); err != nil {
			return ResumeResult{}, err
		}
		metas, err := s.listMetas(ctx, storage.ListQuery{WorkingDir: req.WorkingDir, Limit: 1})
		if err != nil {
			return ResumeResult{}, err
		}
		if len(metas) == 0 {
			return ResumeResult{}, notFoundf("start one with session_save, or call session_list without working_dir to see all sessions",
				"no session for working_dir %s", req.WorkingDir)
		}
		id = metas[0].ID
	} else if err := checkSessionID("session_id", id); err != nil {
		return ResumeResult{}, err
	}
	var res ResumeResult
	err := s.store.View(ctx, id, func(r storage.Reader) error {
		var err error
		res, err = s.resumePage(r, id, cur, maxTokens, req.Prune, req.Raw)
		return err
	})
	if err != nil {
		return ResumeResult{}, mapStoreErr(id, err)
	}
	return res, nil
}

// resumePage builds one page of a resume; the caller holds the session (View).
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
	if cur == nil && v.comp >= 0 {
		comp = st.comps[v.comp]
		pins = st.pinnedBeforeKept(v.comp)
	}
	st.mu.Unlock()

	res := ResumeResult{SessionID: id, WorkingDir: r.Header().WorkingDir, ReadFiles: []string{}, ModifiedFiles: []string{},
		Pinned: []Message{}, Messages: []Message{}, ContextTokens: v.ctx}
	if cur == nil && v.comp >= 0 {
		if comp == nil {
			if comp, err = s.readCompaction(r, st, v.comp); err != nil {
				return ResumeResult{}, err
			}
		}
		res.Summary = comp.Summary
		res.ReadFiles = nonNil(comp.ReadFiles)
		res.ModifiedFiles = nonNil(comp.ModifiedFiles)
		if comp.Facts != nil {
			f := comp.Facts.Clone()
			res.Facts = &f
		}
	}
	// The budget covers this result's JSON; the slack covers what a transport adds around it
	// (a short text and the envelope), and the cursor reserve a next_cursor not yet set, which
	// the text repeats.
	cursorReserve := len(encodeToken("r1.", resumeCursor{Session: id, Next: strings.Repeat("x", MaxIDBytes), Seq: 1 << 62}))
	budget := maxTokens*4 - responseSlack - 2*cursorReserve
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
	protectFrom := -PruneProtectTokens // entries whose out total is above it are recent
	if v.leaf >= 0 {
		protectFrom += v.nodes[v.leaf].out
	}
	// (v.leaf is -1 for a session created but given no record yet: a crash between the two,
	// or on PostgreSQL another process's save between its create and its first append.)
	if raw {
		res.RawMessages = []json.RawMessage{}
	}
	err = v.each(r, start, func(p int, rec storage.Record) (bool, error) {
		n := &v.nodes[v.at(p)]
		if n.kind != KindMessage && n.kind != KindBranchSummary {
			return true, nil
		}
		if raw && n.kind == KindMessage {
			// The common case needs no decoding: the stored bytes are the output, unless prune
			// may change them or the message alone is larger than the page.
			// A view into the record (withEntryID copies what is kept): GetBytes would copy
			// the message twice over.
			r := gjson.Get(view(rec.Data), KindMessage)
			fast := r.IsObject() && r.Index > 0 && r.Index+len(r.Raw) <= len(rec.Data)
			var js []byte
			if fast {
				js = rec.Data[r.Index : r.Index+len(r.Raw)]
			}
			mayPrune := !fast || prune && n.out <= protectFrom && bytes.Contains(js, []byte(`"type":"tool_result"`))
			if size := outputChars(js, n.id) + 1; !mayPrune && (used+size <= budget || count > 0) {
				if used+size > budget {
					res.NextCursor = encodeToken("r1.", resumeCursor{Session: id, Next: n.id, Seq: rec.Seq})
					return false, nil
				}
				count++
				used += size
				res.RawMessages = append(res.RawMessages, withEntryID(js, n.id))
				return true, nil
			}
		}
		e, err := readEntry(rec)
		if err != nil {
			return false, err
		}
		m, _ := outputMessage(e)
		size := rawOutputChars(e)
		changed := false
		// Prune keeps the tool outputs of the newest PruneProtectTokens of the context: an entry
		// is in that window when the conversation after it weighs less.
		if prune && n.out <= protectFrom && pruneToolOutputs(&m) {
			size, changed = -1, true
		}
		if size < 0 {
			size = jsonChars(m)
		}
		size++ // the comma between array elements
		if used+size > budget {
			if count > 0 {
				res.NextCursor = encodeToken("r1.", resumeCursor{Session: id, Next: n.id, Seq: rec.Seq})
				return false, nil
			}
			// A single message larger than the whole budget: send it cut, and move on.
			m = fitMessage(m, budget-used-1)
			size, changed = jsonChars(m)+1, true
		}
		count++
		used += size
		if !raw {
			res.Messages = append(res.Messages, m)
			return true, nil
		}
		js, err := rawMessageJSON(e, m, changed)
		if err != nil {
			return false, err
		}
		res.RawMessages = append(res.RawMessages, js)
		return true, nil
	})
	if err != nil {
		return ResumeResult{}, err
	}
	if raw {
		res.Messages = nil
	}
	res.Chars = used + len(res.NextCursor)
	return res, nil
}

// rawMessageJSON returns m's JSON as the result will encode it: e's stored bytes with entry_id
// added when m is the stored message unchanged, else m encoded.
func rawMessageJSON(e *pathEntry, m Message, changed bool) (json.RawMessage, error) {
	if e.raw != nil && !changed {
		return withEntryID(e.raw, e.ID), nil
	}
	b, err := marshalNoEscape(m)
	if err != nil {
		return nil, fmt.Errorf("encode message %s: %w", e.ID, err)
	}
	return b, nil
}

// withEntryID inserts "entry_id" into a stored message's JSON where encoding a Message puts it:
// after "id" when the client gave one, else first.
func withEntryID(raw []byte, entryID string) json.RawMessage {
	at := 1
	if bytes.HasPrefix(raw, []byte(`{"id":`)) {
		r := gjson.Get(view(raw), "id")
		at = r.Index + len(r.Raw)
	}
	out := make([]byte, 0, len(raw)+len(`,"entry_id":""`)+len(entryID))
	out = append(out, raw[:at]...)
	if at > 1 {
		out = append(out, ',')
	}
	out = append(out, `"entry_id":"`...)
	out = append(out, entryID...)
	out = append(out, '"')
	if at == 1 {
		out = append(out, ',')
	}
	return append(out, raw[at:]...)
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

// fitHeader cuts the summary, then the file lists, until the result without messages takes at
// most chars characters, so a huge summary or thousands of files still leave room for messages
// and never push a page over max_tokens. What is cut is said in place.
func fitHeader(res *ResumeResult, chars int) {
	over := jsonChars(*res) - chars
	if over <= 0 {
		return
	}
	if res.Summary != "" {
		keep := utf8.RuneCountInString(res.Summary) - over - 200
		if min := utf8.RuneCountInString(res.Summary) / 8; keep < min {
			keep = min // keep the opening of the summary; the lists give way next
		}
		res.Summary = truncateText(res.Summary, keep,
			"the summary was cut to fit max_tokens; call session_resume with a larger max_tokens for all of it")
	}
	for _, list := range []*[]string{&res.ReadFiles, &res.ModifiedFiles} {
		all := *list
		for keep := len(all); keep > 0 && jsonChars(*res) > chars; {
			keep = keep * 3 / 4
			*list = append(all[:keep:keep], fmt.Sprintf("… %d more files; call session_resume with a larger max_tokens for the whole list", len(all)-keep))
		}
	}
	// The facts repeat the ledger blocks of the summary: they give way last, the least durable
	// first (Ledger.Fit counts what it drops).
	for tokens := compaction.LedgerMaxTokens; res.Facts != nil && jsonChars(*res) > chars; tokens /= 2 {
		if tokens < 100 {
			res.Facts = nil
			break
		}
		res.Facts.Fit(tokens)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// rawOutputChars is the length in characters of json.Marshal of a stored message as Resume
// returns it, computed from the stored JSON without encoding again: the stored form differs
// only by HTML escaping (<, > and & become six-character escapes) and the added entry_id.
// It returns -1 for entries that are not stored messages.
func rawOutputChars(e *pathEntry) int {
	if e.raw == nil {
		return -1
	}
	return outputChars(e.raw, e.ID)
}

// outputChars is rawOutputChars of a stored message's JSON and its entry id.
func outputChars(raw []byte, entryID string) int {
	n := utf8.RuneCount(raw)
	for _, c := range raw {
		if c == '<' || c == '>' || c == '&' {
			n += 5
		}
	}
	return n + len(`"entry_id":"",`) + len(entryID)
}

// jsonChars is the length in characters of v's JSON encoding, the contract's token measure ×4.
func jsonChars(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return utf8.RuneCount(b)
}

// truncateText keeps the first keep characters of s and appends a note.
func truncateText(s string, keep int, why string) string {
	kept, dropped := compaction.CutChars(s, keep)
	if dropped == 0 {
		return s
	}
	return kept + fmt.Sprintf("\n[… %d characters not shown: %s]", dropped, why)
}

// fitMessage cuts m until its JSON, as json.Marshal writes it, takes at most chars characters:
// the longest text (text, thinking, tool output, image data) first, each cut as little as
// needed and marked; oversize tool-call arguments become a valid JSON placeholder; blocks that
// still do not fit are dropped from the end, with a note. The stored message is not touched.
func fitMessage(m Message, chars int) Message {
	if chars < 400 {
		chars = 400
	}
	m = cloneMessage(m)
	for range countFields(m.Content) + 4 {
		over := jsonChars(m) - chars
		if over <= 0 {
			return m
		}
		f := largestField(&m)
		if f == nil || f.size <= 160 {
			break
		}
		f.shrink(over)
	}
	// Still too large: many blocks, each already short. Drop blocks from the end (inside the
	// last tool result first), then say how many.
	dropped := 0
	for jsonChars(m) > chars-120 {
		last := &m.Content[len(m.Content)-1]
		switch {
		case last.Type == BlockToolResult && len(last.Content) > 1:
			last.Content = last.Content[:len(last.Content)-1]
		case len(m.Content) > 1:
			m.Content = m.Content[:len(m.Content)-1]
		default:
			return m
		}
		dropped++
	}
	if dropped > 0 {
		note := Block{Type: BlockText, Text: fmt.Sprintf("[… %d more blocks not shown: this message is larger than max_tokens]", dropped)}
		if last := &m.Content[len(m.Content)-1]; last.Type == BlockToolResult {
			last.Content = append(last.Content, note)
		} else {
			m.Content = append(m.Content, note)
		}
	}
	return m
}

// countFields counts the cuttable parts of blocks, tool-result content included.
func countFields(bs []Block) int {
	n := 0
	for _, b := range bs {
		n++
		n += countFields(b.Content)
	}
	return n
}

func cloneMessage(m Message) Message {
	m.Content = cloneBlocks(m.Content)
	return m
}

func cloneBlocks(bs []Block) []Block {
	out := append([]Block(nil), bs...)
	for i := range out {
		if out[i].Content != nil {
			out[i].Content = cloneBlocks(out[i].Content)
		}
	}
	return out
}

// field is one cuttable part of a message.
type field struct {
	text *string          // a text, thinking or image-data string
	args *json.RawMessage // or tool-call arguments
	size int              // its encoded length in characters
}

// shrink takes at least over characters out of the field's encoding, as few more as it can.
func (f field) shrink(over int) {
	const note = "this message is larger than max_tokens"
	if f.args != nil {
		*f.args = json.RawMessage(fmt.Sprintf(`{"_truncated":"%d characters of arguments not shown: %s"}`, f.size, note))
		return
	}
	s := *f.text
	target := f.size - over // the field's encoded length must come down to this
	enc := func(k int) int { return jsonChars(truncateText(s, k, note)) }
	lo, hi := 0, utf8.RuneCountInString(s) // largest k with enc(k) <= target, found by bisection
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if enc(mid) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	*f.text = truncateText(s, lo, note)
}

// largestField finds the message's longest cuttable part, tool-result content included.
func largestField(m *Message) *field {
	var best *field
	var visit func(bs []Block)
	consider := func(f field) {
		if f.text != nil {
			f.size = jsonChars(*f.text)
		} else {
			f.size = jsonChars(*f.args)
		}
		if best == nil || f.size > best.size {
			best = &f
		}
	}
	visit = func(bs []Block) {
		for i := range bs {
			b := &bs[i]
			switch b.Type {
			case BlockText:
				consider(field{text: &b.Text})
			case BlockThinking:
				consider(field{text: &b.Thinking})
			case BlockImage:
				consider(field{text: &b.Data})
			case BlockToolCall:
				if len(b.Arguments) > 0 {
					consider(field{args: &b.Arguments})
				}
			case BlockToolResult:
				visit(b.Content)
			}
		}
	}
	visit(m.Content)
	return best
}

// pruneToolOutputs replaces the content of m's tool results with a one-line placeholder
// saying how many characters were dropped, and reports whether it changed anything. Only the
// response changes; the store keeps everything.
func pruneToolOutputs(m *Message) bool {
	changed := false
	for j := range m.Content {
		if m.Content[j].Type != BlockToolResult {
			continue
		}
		if !changed {
			m.Content = append([]Block(nil), m.Content...)
			changed = true
		}
		b := &m.Content[j]
		n := 0
		for _, c := range b.Content {
			n += utf8.RuneCountInString(c.Text) + len(c.Data)
		}
		b.Content = []Block{{Type: BlockText, Text: fmt.Sprintf("[tool output pruned from this view: %d characters; resume without prune to see it]", n)}}
		b.absent &^= absentContent
	}
	return changed
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
