package ftsindex

// Candidate scoring: ranking the words' matches, neighbours' context, and confirming the
// candidates that need their text, best first.

import (
	"container/heap"
	"slices"

	"github.com/sessionmem/sessionmem/storage/fts"
)

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
