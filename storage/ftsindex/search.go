package ftsindex

import (
	"container/heap"
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// Limits of Search.
const (
	DefaultLimit = 10
	MaxLimit     = 100
)

// Query is one search: Match and every filter set must hold.
type Query struct {
	// Match is the parsed query; nil searches by File alone (newest first).
	Match *fts.Query
	// SessionID, WorkingDir, Role and Kind keep entries with exactly these values.
	SessionID, WorkingDir, Role, Kind string
	// File keeps entries whose tool calls read or modified this file: an absolute path, or
	// one relative to each session's working directory.
	File string
	// Since and Until bound the entries' time, both inclusive; zero means unbounded.
	Since, Until time.Time
	// Limit is the most hits returned, 1..MaxLimit (0 means DefaultLimit).
	Limit int
	// Cursor continues a previous Search of the same query ("" for the first page).
	Cursor string
	// Text returns the texts of docs, as their Doc.Text was when indexed, for the words of
	// several terms (phrases, paths), which the index matches by their terms' co-occurrence
	// only and checks against the text before they become hits. nil accepts the
	// co-occurrence (tests of the index alone).
	Text TextFunc
}

// DocRef names an indexed doc.
type DocRef struct {
	SessionID string
	Seq       uint64
	Kind      string
}

// TextFunc returns the text of each doc ("" for one that is gone).
type TextFunc func(ctx context.Context, refs []DocRef) ([]string, error)

// Hit is one matching entry.
type Hit struct {
	SessionID string
	// SessionName and WorkingDir are as of the session's last Batch; the store has the
	// current name.
	SessionName, WorkingDir string
	Seq                     uint64
	EntryID, Kind, Role     string
	Time                    time.Time
	// Score is the hit's BM25 score with context (fts.ContextScore): higher is better; it
	// orders the hits of one query, nothing more. It is 0 for a File-only search.
	Score float64
}

// Result is one page of hits.
type Result struct {
	Hits []Hit
	// NextCursor continues with the next page; "" when there are no more hits.
	NextCursor string
	// Windowed is always false: every match is ranked. (It said, before version 2 of the
	// index, that only the newest matches of a very common word were.)
	Windowed bool
}

// Search returns the best matches first (contract v3: BM25 over the query's words with
// context from the neighbouring messages, then the newest, then the latest indexed), or with
// only File the newest first.
//
// Every match is ranked: scores are summed term at a time over the segments' postings (see
// eval.go), a few nanoseconds per posting, so the cost is that of reading the words' lists,
// not a per-match lookup. The best candidates by their own score (at least 500, more for
// deep pages) then get their neighbours' scores added (fts.ContextScore); those matched
// through words of several terms are checked against their text (Query.Text) in score order,
// as far as the page needs.
//
// Paging is by offset within a snapshot: the first page notes the highest doc id, and later
// pages ignore docs indexed after it, so new entries cannot push already seen hits onto the
// next page. A cursor from another query, or from before a Reset, fails with ErrInvalid.
func (ix *Index) Search(ctx context.Context, q Query) (Result, error) {
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return Result{}, fmt.Errorf("%w: limit %d is outside 1..%d", ErrInvalid, q.Limit, MaxLimit)
	}
	if q.Match == nil && q.File == "" {
		return Result{}, fmt.Errorf("%w: give a query or a file", ErrInvalid)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until) {
		return Result{}, fmt.Errorf("%w: since %s is after until %s", ErrInvalid, q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339))
	}
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer release()
	stamp, _ := fileStamp(db.name)
	fp := fingerprint(q)
	var cur cursor
	if q.Cursor != "" {
		if cur, err = parseCursor(q.Cursor); err != nil {
			return Result{}, err
		}
		if cur.stamp != stamp || cur.hash != fp {
			return Result{}, fmt.Errorf("%w: the cursor belongs to another query or to an index rebuilt since; search again without cursor", ErrInvalid)
		}
	}
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Result{}, classify(err)
	}
	defer tx.Rollback()
	sn, err := db.view.load(ctx, tx)
	if err != nil {
		return Result{}, classify(err)
	}
	if q.Cursor == "" {
		cur = cursor{stamp: stamp, hash: fp, snap: sn.maxDoc}
	}
	f, ok := newFilter(q, sn, cur.snap)
	if !ok {
		return Result{Hits: []Hit{}}, nil
	}
	e := &evaluation{ctx: ctx, tx: tx, q: q, sn: sn, f: f, view: db.view, maxText: ix.opts.MaxTextBytes}
	var order []cand
	var more bool
	if q.Match == nil {
		order, more, err = e.byFile(cur.off, limit)
	} else {
		order, more, err = e.ranked(cur.off, limit)
	}
	if err != nil {
		return Result{}, classify(err)
	}
	hits, err := e.hits(order)
	if err != nil {
		return Result{}, classify(err)
	}
	res := Result{Hits: hits}
	if more {
		next := cur
		next.off += limit
		res.NextCursor = next.String()
	}
	return res, nil
}

// filter holds a query's filters, resolved against a snapshot.
type filter struct {
	sess         int64          // 0: any session
	dirs         map[int64]bool // sessions in the working directory; nil: any
	role         string
	kind         int // -1: any
	since, until int64
	hasSince     bool
	hasUntil     bool
	snap         int64
	files        []fileAlt // nil: no file filter
}

// fileAlt is one way to pass a file filter: holding term, in a session of dir ("": any).
type fileAlt struct{ term, dir string }

// newFilter resolves q's filters; ok is false when nothing can match.
func newFilter(q Query, sn *snapshot, snap int64) (*filter, bool) {
	f := &filter{role: q.Role, kind: -1, snap: snap}
	if q.SessionID != "" {
		id, ok := sn.bySid[q.SessionID]
		if !ok {
			return nil, false
		}
		f.sess = id
	}
	if q.WorkingDir != "" {
		wd := normDir(q.WorkingDir)
		f.dirs = map[int64]bool{}
		for id, r := range sn.live {
			if r.dir == wd {
				f.dirs[id] = true
			}
		}
	}
	if q.Kind != "" {
		f.kind = int(kindCode(q.Kind))
	}
	if !q.Since.IsZero() {
		f.since, f.hasSince = q.Since.UnixNano(), true
	}
	if !q.Until.IsZero() {
		f.until, f.hasUntil = q.Until.UnixNano(), true
	}
	if q.File == "" {
		return f, true
	}
	if path.IsAbs(q.File) {
		f.files = []fileAlt{{term: fileTerm(path.Clean(q.File))}}
		return f, true
	}
	// Relative: under each working directory it could be relative to.
	dirs := map[string]bool{}
	switch {
	case q.SessionID != "":
		dirs[sn.live[f.sess].dir] = true
	case q.WorkingDir != "":
		dirs[normDir(q.WorkingDir)] = true
	default:
		for _, r := range sn.live {
			dirs[r.dir] = true
		}
	}
	rel := path.Clean(q.File)
	for wd := range dirs {
		if path.IsAbs(wd) {
			f.files = append(f.files, fileAlt{term: fileTerm(path.Join(wd, rel)), dir: wd})
		}
	}
	return f, len(f.files) > 0
}

// ok reports whether doc o of s passes the filters other than the file.
func (f *filter) ok(sn *snapshot, s *segment, o int) bool {
	d := s.docs
	switch {
	case d.ids[o] > f.snap:
		return false
	case f.sess != 0 && d.sess[o] != f.sess:
		return false
	case f.dirs != nil && !f.dirs[d.sess[o]]:
		return false
	case f.kind >= 0 && int(d.kinds[o]) != f.kind:
		return false
	case f.role != "" && d.roleNames[d.roles[o]] != f.role:
		return false
	case f.hasSince && d.times[o] < f.since:
		return false
	case f.hasUntil && d.times[o] > f.until:
		return false
	}
	if s.allLive {
		return true
	}
	_, live := sn.live[d.sess[o]]
	return live
}

// evaluation is one Search's work.
type evaluation struct {
	ctx     context.Context
	tx      *sql.Tx
	q       Query
	sn      *snapshot
	f       *filter
	view    *view
	maxText int
	units   []*unit
	nreq    int
	lists   []segLists // per segment
	scores  []*scores  // per segment
}

// cand is a candidate hit.
type cand struct {
	seg      int
	ord      uint32
	own      float64
	score    float64 // own plus context
	needText bool
}

// markFiles sets fFile on the docs of segment i that pass the file filter.
func (e *evaluation) markFiles(i int, sc *scores) error {
	s := e.sn.segs[i]
	var terms []string
	for _, a := range e.f.files {
		if !slices.Contains(terms, a.term) {
			terms = append(terms, a.term)
		}
	}
	data, err := s.source(e.ctx, e.tx).get(terms)
	if err != nil {
		return err
	}
	for t, b := range data {
		list, err := decodePostings(b, s.docs.len())
		if err != nil {
			return fmt.Errorf("%w: segment %d: %w", ErrCorrupt, s.id, err)
		}
		for _, a := range e.f.files {
			if a.term != t {
				continue
			}
			if a.dir == "" {
				sc.mark(list, fFile)
				continue
			}
			for _, p := range list {
				if e.sn.live[s.docs.sess[p.ord]].dir == a.dir {
					sc.mark([]posting{p}, fFile)
				}
			}
		}
	}
	return nil
}

// byFile lists the docs touching the file, newest first.
func (e *evaluation) byFile(off, limit int) ([]cand, bool, error) {
	var all []cand
	for i, s := range e.sn.segs {
		sc := newScores(s.docs.len())
		if err := e.markFiles(i, sc); err != nil {
			return nil, false, err
		}
		for _, o := range sc.hits {
			if e.f.ok(e.sn, s, int(o)) {
				all = append(all, cand{seg: i, ord: o})
			}
		}
	}
	e.sortCands(all)
	return page(all, off, limit)
}

func page(all []cand, off, limit int) ([]cand, bool, error) {
	if off >= len(all) {
		return nil, false, nil
	}
	end := min(off+limit, len(all))
	return all[off:end], len(all) > end, nil
}

// sortCands orders candidates by score, then newest, then latest indexed.
func (e *evaluation) sortCands(cs []cand) {
	slices.SortFunc(cs, e.cmp)
}

func (e *evaluation) cmp(a, b cand) int {
	switch {
	case a.score != b.score:
		if a.score > b.score {
			return -1
		}
		return 1
	}
	da, db := e.sn.segs[a.seg].docs, e.sn.segs[b.seg].docs
	if ta, tb := da.times[a.ord], db.times[b.ord]; ta != tb {
		if ta > tb {
			return -1
		}
		return 1
	}
	if ia, ib := da.ids[a.ord], db.ids[b.ord]; ia != ib {
		if ia > ib {
			return -1
		}
		return 1
	}
	return 0
}

// ranked evaluates the words: every segment's lists, the units' rarity over all of them,
// the scores, then the page.
func (e *evaluation) ranked(off, limit int) ([]cand, bool, error) {
	e.units = buildUnits(e.q.Match)
	for _, u := range e.units {
		if u.required {
			e.nreq++
		}
	}
	lists := make([]segLists, len(e.sn.segs))
	e.lists = lists
	for i, s := range e.sn.segs {
		l, err := loadLists(e.ctx, e.tx, s, e.units, e.view.lists)
		if err != nil {
			return nil, false, err
		}
		lists[i] = l
		for k, u := range e.units {
			u.df += len(l[k])
		}
	}
	for _, u := range e.units {
		u.idf = fts.IDF(e.sn.n, u.df)
	}
	e.scores = make([]*scores, len(e.sn.segs))
	want := max(500, 2*(off+limit+1))
	top := &candHeap{less: func(a, b cand) bool { return e.cmp(a, b) > 0 }}
	for i, s := range e.sn.segs {
		sc := newScores(s.docs.len())
		sc.score(s, e.units, lists[i], s.docs.len(), e.sn.avgdl)
		if e.f.files != nil {
			if err := e.markFiles(i, sc); err != nil {
				return nil, false, err
			}
		}
		e.scores[i] = sc
		for _, o := range sc.hits {
			if !sc.matches(o, e.nreq) || e.f.files != nil && sc.flags[o]&fFile == 0 || !e.f.ok(e.sn, s, int(o)) {
				continue
			}
			c := cand{seg: i, ord: o, own: float64(sc.own[o]), needText: sc.needsText(o)}
			c.score = c.own
			top.offer(c, want)
		}
		if err := e.ctx.Err(); err != nil {
			return nil, false, err
		}
	}
	cands := top.items
	for k := range cands {
		cands[k].score = e.withContext(cands[k])
	}
	return e.confirm(cands, off, limit)
}

// withContext is a candidate's own score plus its neighbouring messages' (fts.ContextScore).
func (e *evaluation) withContext(c cand) float64 {
	d := e.sn.segs[c.seg].docs
	if d.kinds[c.ord] != kindMessage {
		return c.own
	}
	prev, next := e.view.neighbours(d.sess[c.ord], d.seqs[c.ord])
	return fts.ContextScore(c.own, e.ownOf(prev), e.ownOf(next))
}

// ownOf is doc id's own score when it matches the query (filters aside, but within the
// snapshot: a page never sees what was indexed after the first), else 0.
func (e *evaluation) ownOf(id int64) float64 {
	if id == 0 || id > e.f.snap {
		return 0
	}
	i, o := e.sn.find(id)
	if i < 0 || !e.scores[i].matches(uint32(o), e.nreq) {
		return 0
	}
	return float64(e.scores[i].own[o])
}

// confirm orders the candidates and checks, best first, those that need their text, until
// the page and one more hit are certain.
func (e *evaluation) confirm(cands []cand, off, limit int) ([]cand, bool, error) {
	h := &candHeap{less: func(a, b cand) bool { return e.cmp(a, b) < 0 }, items: cands}
	heap.Init(h)
	var out []cand
	for h.Len() > 0 && len(out) < off+limit+1 {
		if c := h.items[0]; !c.needText || e.q.Text == nil {
			out = append(out, heap.Pop(h).(cand))
			continue
		}
		var batch []cand
		for h.Len() > 0 && len(batch) < max(1, off+limit+1-len(out)) && h.items[0].needText {
			batch = append(batch, heap.Pop(h).(cand))
		}
		refs := make([]DocRef, len(batch))
		for k, c := range batch {
			d := e.sn.segs[c.seg].docs
			refs[k] = DocRef{SessionID: e.sn.live[d.sess[c.ord]].sid, Seq: d.seqs[c.ord], Kind: kindName(d.kinds[c.ord])}
		}
		texts, err := e.q.Text(e.ctx, refs)
		if err != nil {
			return nil, false, err
		}
		for k, c := range batch {
			if k >= len(texts) {
				break
			}
			terms := fts.Terms(clipText(texts[k], e.maxText))
			own, ok := rescore(e.q.Match, e.units, terms, e.sn.avgdl)
			if !ok {
				continue
			}
			c.needText = false
			if !e.confirmed(c, terms) {
				// A phrase or path it seemed to hold is not there: its score is what the
				// rest of its words give.
				c.score += own - c.own
				c.own = own
			}
			heap.Push(h, c)
		}
	}
	return page(out, off, limit)
}

// confirmed reports whether every unit of several slots that the lists say a candidate holds
// is really in its text. Its score then stays as the lists made it (their frequency being
// the least of the terms'), so that checking the best candidates never lets unchecked ones
// overtake them: a common phrase needs about as many checks as the page has hits.
func (e *evaluation) confirmed(c cand, terms []string) bool {
	for k, u := range e.units {
		if !u.multi() || u.excluded {
			continue
		}
		list := e.lists[c.seg][k]
		_, inList := slices.BinarySearchFunc(list, c.ord, func(p posting, o uint32) int { return int(p.ord) - int(o) })
		if inList && !u.t.OccursIn(terms) {
			return false
		}
	}
	return true
}

// candHeap is a heap of candidates; less orders it.
type candHeap struct {
	items []cand
	less  func(a, b cand) bool
}

func (h *candHeap) Len() int           { return len(h.items) }
func (h *candHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *candHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *candHeap) Push(x any)         { h.items = append(h.items, x.(cand)) }
func (h *candHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// offer keeps the best n candidates (the heap's root is the worst kept).
func (h *candHeap) offer(c cand, n int) {
	if len(h.items) < n {
		heap.Push(h, c)
		return
	}
	if h.less(h.items[0], c) {
		h.items[0] = c
		heap.Fix(h, 0)
	}
}

// hits makes the page's hits from the segments' attributes and the sessions' rows (for their
// current name and working directory); a session gone meanwhile is left out.
func (e *evaluation) hits(order []cand) ([]Hit, error) {
	out := []Hit{}
	if len(order) == 0 {
		return out, nil
	}
	var sess []any
	for _, c := range order {
		if id := e.sn.segs[c.seg].docs.sess[c.ord]; !slices.Contains(sess, any(id)) {
			sess = append(sess, id)
		}
	}
	rows, err := e.tx.QueryContext(e.ctx, `SELECT id, sid, name, working_dir FROM sessions WHERE id IN (?`+strings.Repeat(`, ?`, len(sess)-1)+`)`, sess...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type row struct{ sid, name, dir string }
	byID := map[int64]row{}
	for rows.Next() {
		var id int64
		var r row
		if err := rows.Scan(&id, &r.sid, &r.name, &r.dir); err != nil {
			return nil, err
		}
		byID[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, c := range order {
		d := e.sn.segs[c.seg].docs
		r, ok := byID[d.sess[c.ord]]
		if !ok {
			continue
		}
		h := Hit{SessionID: r.sid, SessionName: r.name, WorkingDir: r.dir, Seq: d.seqs[c.ord], EntryID: d.entries[c.ord],
			Kind: kindName(d.kinds[c.ord]), Role: d.roleNames[d.roles[c.ord]], Time: unnanos(d.times[c.ord])}
		if e.q.Match != nil {
			h.Score = c.score
		}
		out = append(out, h)
	}
	return out, nil
}

// cursor is a page position: offset within the snapshot of doc ids floor..snap (floor 0: no
// ranking window), of the index file stamp, for the query with hash.
type cursor struct {
	stamp int64
	snap  int64
	floor int64
	off   int
	hash  uint64
}

func (c cursor) String() string {
	s := fmt.Sprintf("1.%d.%d.%d.%d.%x", c.stamp, c.snap, c.floor, c.off, c.hash)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func parseCursor(s string) (cursor, error) {
	bad := fmt.Errorf("%w: cursor %.40q is not one this search returned; search again without cursor", ErrInvalid, s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, bad
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 6 || parts[0] != "1" {
		return cursor{}, bad
	}
	var c cursor
	var e [5]error
	c.stamp, e[0] = strconv.ParseInt(parts[1], 10, 64)
	c.snap, e[1] = strconv.ParseInt(parts[2], 10, 64)
	c.floor, e[2] = strconv.ParseInt(parts[3], 10, 64)
	c.off, e[3] = strconv.Atoi(parts[4])
	c.hash, e[4] = strconv.ParseUint(parts[5], 16, 64)
	if errors.Join(e[:]...) != nil || c.off < 0 || c.off > 1_000_000 || c.floor < 0 {
		return cursor{}, bad
	}
	return c, nil
}

// fingerprint hashes what a cursor must not change between pages (not the limit).
func fingerprint(q Query) uint64 {
	h := fnv.New64a()
	match := ""
	if q.Match != nil {
		match = q.Match.String()
	}
	for _, s := range []string{match, q.SessionID, q.WorkingDir, q.Role, q.Kind, q.File,
		strconv.FormatInt(nanos(q.Since), 10), strconv.FormatInt(nanos(q.Until), 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
