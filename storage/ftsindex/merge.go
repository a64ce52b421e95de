package ftsindex

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// Segments and their merges. Every Index call writes its docs as one new segment (level 0),
// so a save costs one row per distinct term it brings, not a rewrite of long lists; segments
// of one level are merged mergeFactor at a time into one of the next level, which keeps
// their number logarithmic in the index's size, and a merge drops the postings of deleted
// sessions. A segment of capDocs docs or more is final: only Optimize merges it again, so no
// merge ever rewrites more than about capDocs docs' postings.
const (
	mergeFactor = 8
	capDocs     = 1 << 16
	finalLevel  = 99
	// smallMerge: merges of fewer docs run inside the Index transaction that made them due;
	// larger ones are built outside any write transaction (Merge) and committed in a short
	// one, so other processes' writes (and so their saves' freshness) never wait long.
	smallMerge = 4096
	// packBudget bounds the packed postings (compressed, as stored) of an index's segments:
	// every process that searches keeps each packed segment decoded in memory (about three
	// times its stored size), and without a bound the small levels hold up to 7 segments of
	// each size below packLimit, some 44,000 docs (50 MB of heap with 2 KB messages). Past
	// it, Merge rewrites the oldest packed segments as rows (read per term, through the
	// bounded list cache), so a searching server's memory stops growing with its saves.
	packBudget = 2 << 20
)

// segMeta is a segments row without its docs.
type segMeta struct {
	id     int64
	level  int
	lo, hi int64
	ndocs  int
	packed int // stored size of its packed postings; 0: rows in postings
}

// querier is what both *sql.Tx and *sql.DB offer.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// listSegments returns the segments in id order (lo).
func listSegments(ctx context.Context, q querier) ([]segMeta, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, level, lo, hi, ndocs, coalesce(length(packed), 0) FROM segments ORDER BY lo`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []segMeta
	for rows.Next() {
		var m segMeta
		if err := rows.Scan(&m.id, &m.level, &m.lo, &m.hi, &m.ndocs, &m.packed); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// levelFor is the level of a new segment of n docs.
func levelFor(n int) int {
	if n >= capDocs {
		return finalLevel
	}
	lvl := 0
	for size := 256; n >= size && lvl < 4; size *= mergeFactor {
		lvl++
	}
	return lvl
}

// mergeDue returns the oldest mergeFactor segments of the first run of consecutive segments
// of one (non-final) level that has that many, or nil.
func mergeDue(segs []segMeta) []segMeta {
	for i := 0; i < len(segs); {
		j := i
		for j < len(segs) && segs[j].level == segs[i].level {
			j++
		}
		if segs[i].level != finalLevel && j-i >= mergeFactor {
			return segs[i : i+mergeFactor]
		}
		i = j
	}
	return nil
}

// packedDue returns a pick that, when the packed segments take more than budget bytes,
// chooses the oldest run of consecutive packed segments whose rewrite as rows leaves at most
// half the budget packed (one segment or more), and otherwise nil.
func packedDue(budget int) func([]segMeta) []segMeta {
	return func(segs []segMeta) []segMeta {
		total := 0
		for _, s := range segs {
			total += s.packed
		}
		if total <= budget {
			return nil
		}
		i := slices.IndexFunc(segs, func(s segMeta) bool { return s.packed > 0 })
		j := i
		for j < len(segs) && segs[j].packed > 0 && total > budget/2 {
			total -= segs[j].packed
			j++
		}
		return segs[i:j]
	}
}

// segRow is one term's list in a segment being written.
type segRow struct {
	term string
	data []byte
}

// newSeg is a segment ready to be written.
type newSeg struct {
	level int
	docs  *segDocs
	rows  []segRow
	// packBelow overrides packLimit when not 0: -1 writes the postings as rows whatever the
	// segment's size (packedDue), closePackLimit packs Close's larger merge.
	packBelow int
}

// flushSegment writes the docs this transaction added as a new segment.
func (w *writer) flushSegment() error {
	sb := w.seg
	if sb.docs.len() == 0 {
		return nil
	}
	var total int64
	for _, n := range sb.docs.lens {
		total += int64(n)
	}
	if err := addCounts(w.ctx, w.tx, int64(sb.docs.len()), total); err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(w.ctx, `UPDATE counters SET v = ? WHERE k = 'last_doc'`, w.nextDoc); err != nil {
		return err
	}
	ns := newSeg{level: levelFor(sb.docs.len()), docs: &sb.docs}
	var buf []byte
	for _, t := range sb.sortedTerms() {
		ps := sb.terms[t]
		buf = encodePostings(buf[:0], ps)
		ns.rows = append(ns.rows, segRow{term: t, data: buf})
		buf = buf[len(buf):]
	}
	_, err := writeSegment(w.ctx, w.tx, ns)
	w.seg = newSegBuilder()
	return err
}

// writeSegment inserts a segment and its postings and returns its id.
func writeSegment(ctx context.Context, tx *sql.Tx, ns newSeg) (int64, error) {
	d := ns.docs
	var packed []byte
	limit := packLimit
	if ns.packBelow != 0 {
		limit = ns.packBelow
	}
	if d.len() < limit {
		packed = pack(encodePacked(ns.rows))
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO segments (level, lo, hi, ndocs, docs, packed) VALUES (?, ?, ?, ?, ?, ?)`,
		ns.level, d.ids[0], d.ids[len(d.ids)-1], d.len(), pack(d.encode()), packed)
	if err != nil {
		return 0, err
	}
	id, err := res.LastInsertId()
	if err != nil || packed != nil {
		return id, err
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO postings (seg, term, data) VALUES (?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	for _, r := range ns.rows {
		if _, err := st.ExecContext(ctx, id, r.term, r.data); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// mergeSmall merges, within the Index transaction, what has become due and is small.
func (w *writer) mergeSmall() error {
	for range 4 { // a merge can make the next level due; more waits for the next call
		segs, err := listSegments(w.ctx, w.tx)
		if err != nil {
			return err
		}
		due := mergeDue(segs)
		if due == nil || sumDocs(due) >= smallMerge {
			return nil
		}
		ns, err := buildMerge(w.ctx, w.tx, due)
		if err != nil {
			return err
		}
		if err := replaceSegments(w.ctx, w.tx, due, ns); err != nil {
			return err
		}
	}
	return nil
}

func sumDocs(segs []segMeta) int {
	n := 0
	for _, s := range segs {
		n += s.ndocs
	}
	return n
}

// Merge runs the merges that are due (those too large for an Index transaction), each
// built from a read snapshot and committed in a short write transaction; a merge whose
// segments another process merged meanwhile is dropped. Queues call it after indexing; it
// is cheap when nothing is due.
func (ix *Index) Merge(ctx context.Context) error {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	for {
		done, err := db.mergeOnce(ctx, mergeDue, 0)
		if err != nil {
			return classify(err)
		}
		if !done {
			break
		}
	}
	for {
		done, err := db.mergeOnce(ctx, packedDue(ix.packBudget), -1)
		if err != nil || !done {
			return classify(err)
		}
	}
}

// mergeOnce builds and commits one merge of the segments pick chooses (packBelow as in
// newSeg); done is false when pick chose none.
func (db *database) mergeOnce(ctx context.Context, pick func([]segMeta) []segMeta, packBelow int) (bool, error) {
	tx, err := db.m.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, err
	}
	segs, err := listSegments(ctx, tx)
	if err != nil {
		tx.Rollback()
		return false, err
	}
	due := pick(segs)
	if due == nil {
		tx.Rollback()
		return false, nil
	}
	ns, err := buildMerge(ctx, tx, due)
	tx.Rollback()
	if err != nil {
		return false, err
	}
	if ns != nil {
		ns.packBelow = packBelow
	}
	err = db.write(ctx, func(tx *sql.Tx) error {
		ids := make([]any, len(due))
		for i, s := range due {
			ids[i] = s.id
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM segments WHERE id IN (?`+strings.Repeat(`, ?`, len(ids)-1)+`)`, ids...).Scan(&n); err != nil {
			return err
		}
		if n != len(due) {
			return nil // merged by another process meanwhile
		}
		return replaceSegments(ctx, tx, due, ns)
	})
	return true, err
}

// replaceSegments writes ns (nil: nothing survived) and deletes the segments it replaces.
func replaceSegments(ctx context.Context, tx *sql.Tx, old []segMeta, ns *newSeg) error {
	for _, s := range old {
		if _, err := tx.ExecContext(ctx, `DELETE FROM postings WHERE seg = ?`, s.id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM segments WHERE id = ?`, s.id); err != nil {
			return err
		}
	}
	if ns == nil {
		return nil
	}
	_, err := writeSegment(ctx, tx, *ns)
	return err
}

// buildMerge reads segs (consecutive, in id order) and returns their merge without the docs
// of deleted sessions, or nil when none is left.
func buildMerge(ctx context.Context, q querier, segs []segMeta) (*newSeg, error) {
	live, err := liveSessions(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &newSeg{docs: &segDocs{}}
	remap := make([][]int32, len(segs))
	ndocs := make([]int, len(segs))
	level := 0
	packs := make([]*packedSeg, len(segs))
	for i, s := range segs {
		d, p, err := readSegment(ctx, q, s.id)
		if err != nil {
			return nil, err
		}
		packs[i] = p
		ndocs[i] = d.len()
		remap[i] = make([]int32, d.len())
		for o := range d.len() {
			if _, ok := live[d.sess[o]]; ok {
				remap[i][o] = int32(out.docs.copyFrom(d, o))
			} else {
				remap[i][o] = -1
			}
		}
		level = max(level, s.level)
	}
	if out.docs.len() == 0 {
		return nil, nil
	}
	out.level = max(level+1, levelFor(out.docs.len()))
	if out.docs.len() >= capDocs {
		out.level = finalLevel
	}
	// Every segment's rows in term order, merged: for each term, the lists one after the
	// other (segments are in id order, so ordinals stay ascending).
	cursors := make([]*termCursor, len(segs))
	for i, s := range segs {
		it, err := termSource{ctx: ctx, q: q, seg: s.id, packed: packs[i]}.iter("", "")
		if err != nil {
			return nil, err
		}
		defer it.close()
		c := &termCursor{it: it}
		if err := c.next(); err != nil {
			return nil, err
		}
		cursors[i] = c
	}
	var ps []posting
	var buf []byte
	for {
		term, ok := "", false
		for _, c := range cursors {
			if c.ok && (!ok || c.term < term) {
				term, ok = c.term, true
			}
		}
		if !ok {
			break
		}
		ps = ps[:0]
		for i, c := range cursors {
			if !c.ok || c.term != term {
				continue
			}
			it, err := newPostingIter(c.data, ndocs[i])
			if err != nil {
				return nil, fmt.Errorf("%w: segment %d term %q: %w", ErrCorrupt, segs[i].id, term, err)
			}
			for p, ok := it.next(); ok; p, ok = it.next() {
				if o := remap[i][p.ord]; o >= 0 {
					ps = append(ps, posting{ord: uint32(o), tf: p.tf})
				}
			}
			if err := it.err(); err != nil {
				return nil, fmt.Errorf("%w: segment %d term %q: %w", ErrCorrupt, segs[i].id, term, err)
			}
			if err := c.next(); err != nil {
				return nil, err
			}
		}
		if len(ps) > 0 {
			buf = encodePostings(buf[:0], ps)
			out.rows = append(out.rows, segRow{term: term, data: buf})
			buf = buf[len(buf):]
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// termCursor is a termIter with its current term at hand.
type termCursor struct {
	it   termIter
	ok   bool
	term string
	data []byte
}

func (c *termCursor) next() error {
	ok, err := c.it.next()
	c.ok = ok && err == nil
	if c.ok {
		c.term, c.data = c.it.term(), c.it.data()
	}
	return err
}

// liveSessions returns the session rows that exist: a doc whose session row is gone is dead.
func liveSessions(ctx context.Context, q querier) (map[int64]sessRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, sid, working_dir FROM sessions`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]sessRow{}
	for rows.Next() {
		var id int64
		var r sessRow
		if err := rows.Scan(&id, &r.sid, &r.dir); err != nil {
			return nil, err
		}
		r.dir = normDir(r.dir)
		out[id] = r
	}
	return out, rows.Err()
}

// sessRow is what searches need of a sessions row.
type sessRow struct {
	sid, dir string
}

// addCounts moves the live docs' count and total length.
func addCounts(ctx context.Context, tx *sql.Tx, docs, terms int64) error {
	if docs == 0 && terms == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE counters SET v = v + CASE k WHEN 'docs' THEN ? ELSE ? END WHERE k IN ('docs', 'terms')`, docs, terms)
	return err
}

// bumpSessions marks a change of the sessions table's rows (added or removed), which
// readers reload then.
func bumpSessions(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE counters SET v = v + 1 WHERE k = 'sessions'`)
	return err
}

// clipText is the part of a doc's text that is indexed: at most max bytes, cut at a rune
// boundary.
func clipText(text string, max int) string {
	if len(text) <= max {
		return text
	}
	i := max
	for i > 0 && text[i]&0xC0 == 0x80 {
		i--
	}
	return text[:i]
}
