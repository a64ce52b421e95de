package ftsindex

import (
	"context"
	"database/sql"
	"encoding/binary"
	"slices"
	"strings"
)

// IndexAll's segments (bulkindex.go drives it): docs are added, already tokenized, to one
// segment in memory until it holds bulkMaxDocs docs or its budget, then written in one
// transaction with the progress of every batch it holds. A rebuild so writes each posting
// once, in segments as large as merges make them, instead of writing segments of a few
// thousand docs and rewriting them through merges.

// bulkBudget is the default of BulkOptions.MaxBytes: what a segment being built holds in
// memory (its terms, posting lists and docs' attributes, as bulkSeg.mem counts them).
const bulkBudget = 32 << 20

// bulkMaxDocs is the most docs of a segment IndexAll writes: as many as a merge of eight
// segments of the level below final makes, so that a rebuilt index has no more segments
// than one its saves built (searches do some work per segment). On ~2 KB messages the
// budget is reached first, at about 100,000 docs.
const bulkMaxDocs = 4 * capDocs

// bulkFinalDocs: a segment IndexAll wrote with at least this many docs is final (only
// Optimize merges it), like one of capDocs: a segment cut by the budget is as large as the
// memory allows, and a merge of eight such would hold far more.
const bulkFinalDocs = capDocs / 2

// bulkSeg is a segment being built from tokenized groups.
type bulkSeg struct {
	docs    segDocs // ids and sess are set when the segment is written
	batches []bulkBatch
	dict    map[string]int32 // term → index in terms
	terms   []string
	lists   [][]byte // per term: listHead bytes, then encodePostings' entries
	count   []uint32 // per term: its postings
	last    []int32  // per term: the ordinal of its last posting
	mem     int
	budget  int // the segment is full at mem >= budget
}

// bulkBatch is a batch without its docs: theirs are the segment's ordinals lo..hi-1.
type bulkBatch struct {
	session       Session
	from, through uint64
	lo, hi        int
}

// listHead is the room left at the start of each list for its count (a uvarint of at most
// five bytes for a uint32), written when the segment is.
const listHead = binary.MaxVarintLen32

// Estimated bytes per term (its map slot, string header and list, count and last) and per
// doc (its attributes but the entry id), for bulkSeg.mem.
const (
	bulkTermBytes = 128
	bulkDocBytes  = 64
)

func newBulkSeg(budget int) *bulkSeg { return &bulkSeg{dict: map[string]int32{}, budget: budget} }

func (bs *bulkSeg) full() bool { return bs.docs.len() >= bulkMaxDocs || bs.mem >= bs.budget }

// addBatch adds b, a batch of g whose docs are g.docs[k:k+len(b.Docs)], and returns the
// index of the next batch's first doc. A batch is never split: a segment may pass
// bulkMaxDocs or the budget by one batch (at most a catch-up chunk).
func (bs *bulkSeg) addBatch(g *tokGroup, b Batch, k int) int {
	bb := bulkBatch{session: b.Session, from: b.From, through: b.Through, lo: bs.docs.len()}
	prev := int32(0)
	if k > 0 {
		prev = g.docs[k-1].end
	}
	for _, d := range b.Docs {
		td := g.docs[k]
		ord := int32(bs.docs.add(0, 0, d.Seq, nanos(d.Time), d.Kind, d.Role, d.EntryID, td.n)) // copies (tokenizer.group)
		bs.mem += bulkDocBytes + len(d.EntryID)
		for _, e := range g.ents[prev:td.end] {
			bs.post(g.term(e), ord, e.tf)
		}
		prev = td.end
		k++
	}
	bb.hi = bs.docs.len()
	bs.batches = append(bs.batches, bb)
	return k
}

// post appends (ord, tf) to term's list.
func (bs *bulkSeg) post(term []byte, ord int32, tf uint32) {
	id, ok := bs.dict[string(term)]
	if !ok {
		id = int32(len(bs.terms))
		t := string(term)
		bs.dict[t] = id
		bs.terms = append(bs.terms, t)
		bs.lists = append(bs.lists, make([]byte, listHead, listHead+4))
		bs.count = append(bs.count, 0)
		bs.last = append(bs.last, -1)
		bs.mem += bulkTermBytes + len(t) + listHead + 4
	}
	l := bs.lists[id]
	c := cap(l)
	gap := uint64(ord - bs.last[id] - 1)
	if tf > 1 {
		l = binary.AppendUvarint(l, gap<<1|1)
		l = binary.AppendUvarint(l, uint64(tf-2))
	} else {
		l = binary.AppendUvarint(l, gap<<1)
	}
	bs.mem += cap(l) - c
	bs.lists[id] = l
	bs.count[id]++
	bs.last[id] = ord
}

// list returns term id's list as encodePostings writes it, inside its buffer.
func (bs *bulkSeg) list(id int) []byte {
	l := bs.lists[id]
	var head [listHead]byte
	n := binary.PutUvarint(head[:], uint64(bs.count[id]))
	copy(l[listHead-n:], head[:n])
	return l[listHead-n:]
}

// write writes the segment in one transaction: every batch's session row and progress
// (Index's rules: docs indexed already, and batches of deleted sessions, are left out), then
// the docs it keeps as one segment. It returns the docs written.
func (bs *bulkSeg) write(ctx context.Context, db *database) (int, error) {
	written := 0
	err := db.write(ctx, func(tx *sql.Tx) error {
		w := writer{ctx: context.WithoutCancel(ctx), done: ctx.Err, tx: tx, stmts: map[string]*sql.Stmt{}}
		if err := tx.QueryRowContext(w.ctx, `SELECT v FROM counters WHERE k = 'last_doc'`).Scan(&w.nextDoc); err != nil {
			return err
		}
		keep, err := bs.sessions(&w)
		if err != nil {
			return err
		}
		seg := bs
		if keep != nil {
			seg = bs.without(keep)
		}
		written = seg.docs.len()
		if written == 0 {
			return nil
		}
		for i := range seg.docs.ids {
			w.nextDoc++
			seg.docs.ids[i] = w.nextDoc
		}
		if err := seg.insert(&w); err != nil {
			return err
		}
		return w.mergeSmall()
	})
	return written, err
}

// sessions runs the batches' session bookkeeping in w's transaction and sets each doc's
// session row. keep is nil when every doc is new to the index, else it says which are.
func (bs *bulkSeg) sessions(w *writer) ([]bool, error) {
	var keep []bool
	drop := func(o int) {
		if keep == nil {
			keep = make([]bool, bs.docs.len())
			for i := range keep {
				keep[i] = true
			}
		}
		keep[o] = false
	}
	for _, b := range bs.batches {
		if err := w.done(); err != nil {
			return nil, err
		}
		sr, err := w.sessionRow(b.session)
		if err != nil {
			return nil, err
		}
		for o := b.lo; o < b.hi; o++ {
			if sr.deleted || sr.has(bs.docs.seqs[o]) {
				drop(o)
				continue
			}
			bs.docs.sess[o] = sr.id
			sr.add(bs.docs.seqs[o], int(bs.docs.lens[o]))
		}
		if sr.deleted {
			continue
		}
		if _, err := w.finishBatch(&sr, b.from, b.through); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

// without returns the segment of the docs keep says, their lists renumbered (rare: a batch
// that overlapped what another process indexed meanwhile, or a deleted session's).
func (bs *bulkSeg) without(keep []bool) *bulkSeg {
	out := newBulkSeg(bs.budget)
	remap := make([]int32, bs.docs.len())
	for o := range remap {
		remap[o] = -1
		if keep[o] {
			remap[o] = int32(out.docs.copyFrom(&bs.docs, o))
		}
	}
	for id, t := range bs.terms {
		ps, err := decodePostings(bs.list(id), bs.docs.len())
		if err != nil {
			panic("ftsindex: a list built in memory does not decode: " + err.Error())
		}
		for _, p := range ps {
			if o := remap[p.ord]; o >= 0 {
				out.post([]byte(t), o, p.tf)
			}
		}
	}
	return out
}

// insert writes the docs and lists as a segment, with the counters; the docs' ids are set.
func (bs *bulkSeg) insert(w *writer) error {
	var total int64
	for _, n := range bs.docs.lens {
		total += int64(n)
	}
	if err := addCounts(w.ctx, w.tx, int64(bs.docs.len()), total); err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(w.ctx, `UPDATE counters SET v = ? WHERE k = 'last_doc'`, w.nextDoc); err != nil {
		return err
	}
	order := make([]int32, len(bs.terms))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(bs.terms[a], bs.terms[b]) })
	ns := newSeg{level: levelFor(bs.docs.len()), docs: &bs.docs}
	if bs.docs.len() >= bulkFinalDocs {
		ns.level = finalLevel
	}
	ns.rows = make([]segRow, len(order))
	for i, id := range order {
		ns.rows[i] = segRow{term: bs.terms[id], data: bs.list(int(id))}
	}
	_, err := writeSegment(w.ctx, w.tx, ns)
	return err
}
