package ftsindex

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// How a query is evaluated. Each word, phrase and prefix of the query is a unit; a unit is a
// sequence of slots (a word has one, a phrase or a path one per term), and a slot is an
// exact term or a prefix (the terms that start with it, and its stem). Per segment, a unit's
// list is its slots' postings (a prefix's merged) intersected: exact for one slot; for
// several (phrases, paths, which the index keeps no positions for) the docs holding all
// their terms, an over-estimate that is checked against the doc's text (Query.Text) before
// it becomes a hit. Scores are then summed term at a time into arrays over the segment's
// docs: a tight loop over varint lists, a few nanoseconds per posting, so that even a
// question of fifteen words that matches half of a gigabyte of messages ranks every match.

// unit is one term of the query.
type unit struct {
	t        fts.Term
	slots    []slot
	required bool
	excluded bool
	ranked   bool // counts in the score and makes a match
	df       int  // docs holding it (over-estimated for several slots), all segments
	idf      float64
}

func (u *unit) multi() bool { return len(u.slots) > 1 }

// slot is one term position of a unit.
type slot struct {
	term   string // exact term, or the prefix
	prefix bool
	alt    string // for a prefix: its stem, also matched ("" if none)
}

// buildUnits turns a query into units; function words that do not count (fts.Query.Ranked)
// are left out, so their long lists are never read.
func buildUnits(q *fts.Query) []*unit {
	allStop := true
	for _, t := range q.Include {
		allStop = allStop && t.Stop
	}
	var out []*unit
	for _, t := range q.Include {
		ranked := !t.Stop || allStop // as fts.Query.Ranked
		if !ranked && !t.Required {
			continue
		}
		out = append(out, &unit{t: t, slots: slotsOf(t), required: t.Required, ranked: ranked})
	}
	for _, t := range q.Exclude {
		out = append(out, &unit{t: t, slots: slotsOf(t), excluded: true})
	}
	return out
}

func slotsOf(t fts.Term) []slot {
	s := make([]slot, len(t.Terms))
	for i, term := range t.Terms {
		s[i] = slot{term: term}
	}
	if t.Prefix {
		last := &s[len(s)-1]
		last.prefix, last.alt = true, t.PrefixStem()
	}
	return s
}

// segLists are a segment's lists: per unit, the docs holding it, ascending, with their
// frequency (for several slots, the least of the slots').
type segLists [][]posting

// loadLists reads a segment's postings for every unit and builds their lists. Lists of exact
// terms of a segment with postings rows come from c when it has them, and go into it when
// read.
func loadLists(ctx context.Context, tx *sql.Tx, s *segment, units []*unit, c *listCache) (segLists, error) {
	if s.packed != nil {
		c = nil // a packed segment's lists are in memory already, and short
	}
	exact := map[string][]posting{}
	fetch := map[string]bool{}
	for _, u := range units {
		for _, sl := range u.slots {
			switch {
			case !sl.prefix:
				if _, seen := exact[sl.term]; seen || fetch[sl.term] {
					continue
				}
				if l, ok := c.get(s.id, sl.term); ok {
					exact[sl.term] = l
				} else {
					fetch[sl.term] = true
				}
			case sl.alt != "":
				fetch[sl.alt] = true // prefixList reads the stem's list as bytes
			}
		}
	}
	ts := s.source(ctx, tx)
	terms := make([]string, 0, len(fetch))
	for t := range fetch {
		terms = append(terms, t)
	}
	data, err := ts.get(terms)
	if err != nil {
		return nil, err
	}
	n := s.docs.len()
	for _, u := range units {
		for _, sl := range u.slots {
			if sl.prefix || !fetch[sl.term] {
				continue
			}
			if _, done := exact[sl.term]; done {
				continue
			}
			var l []posting
			if b := data[sl.term]; b != nil {
				if l, err = decodePostings(b, n); err != nil {
					return nil, fmt.Errorf("%w: segment %d term %q: %w", ErrCorrupt, s.id, sl.term, err)
				}
			}
			exact[sl.term] = l
			c.put(s.id, sl.term, l)
		}
	}
	out := make(segLists, len(units))
	for i, u := range units {
		var list []posting
		for k, sl := range u.slots {
			var l []posting
			var err error
			if sl.prefix {
				l, err = prefixList(ts, n, sl, data[sl.alt])
			} else {
				l = exact[sl.term]
			}
			if err != nil {
				return nil, fmt.Errorf("%w: segment %d term %q: %w", ErrCorrupt, s.id, sl.term, err)
			}
			if k == 0 {
				list = l
			} else {
				list = intersect(list, l)
			}
			if len(list) == 0 {
				break
			}
		}
		out[i] = list
	}
	return out, nil
}

// prefixList is the union of the lists of the terms starting with sl.term, and of its stem's
// (alt, already read), with their frequencies summed.
func prefixList(ts termSource, n int, sl slot, alt []byte) ([]posting, error) {
	it, err := ts.iter(sl.term, successor(sl.term))
	if err != nil {
		return nil, err
	}
	defer it.close()
	var lists [][]posting
	for {
		ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if it.term() == sl.alt {
			continue
		}
		l, err := decodePostings(it.data(), n)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	if alt != nil {
		l, err := decodePostings(alt, n)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	return union(lists, n), nil
}

// successor is the smallest string greater than every string starting with p (p is UTF-8
// and never ends with 0xff).
func successor(p string) string {
	b := []byte(p)
	b[len(b)-1]++
	return string(b)
}

// intersect keeps the docs in both lists, with the smaller frequency.
func intersect(a, b []posting) []posting {
	out := a[:0:0]
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].ord < b[j].ord:
			i++
		case a[i].ord > b[j].ord:
			j++
		default:
			out = append(out, posting{ord: a[i].ord, tf: min(a[i].tf, b[j].tf)})
			i++
			j++
		}
	}
	return out
}

// union merges lists, summing frequencies.
func union(lists [][]posting, n int) []posting {
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	tf := make([]uint32, n)
	for _, l := range lists {
		for _, p := range l {
			tf[p.ord] += p.tf
		}
	}
	out := make([]posting, 0, min(total, n))
	for o, f := range tf {
		if f > 0 {
			out = append(out, posting{ord: uint32(o), tf: f})
		}
	}
	return out
}

// Per-doc flags of one evaluation.
const (
	fRanked   = 1 << iota // holds a ranked unit
	fExcluded             // holds an excluded unit of one slot: out
	fVerify               // a unit of several slots took part: check against the text
	fMaybeOut             // holds the terms of an excluded unit of several slots
	fFile                 // passes the file filter
)

// scores are the per-doc results of scoring one segment.
type scores struct {
	own   []float32
	flags []uint8
	nreq  []uint8
	hits  []uint32 // ordinals with any flag, in the order first touched
}

func newScores(n int) *scores {
	return &scores{own: make([]float32, n), flags: make([]uint8, n), nreq: make([]uint8, n)}
}

// score sums the units' contributions over a segment's lists.
func (sc *scores) score(s *segment, units []*unit, lists segLists, n int, avgdl float64) {
	for i, u := range units {
		for _, p := range lists[i] {
			f := &sc.flags[p.ord]
			if *f == 0 {
				sc.hits = append(sc.hits, p.ord)
			}
			switch {
			case u.excluded && u.multi():
				*f |= fMaybeOut
			case u.excluded:
				*f |= fExcluded
			default:
				if u.ranked {
					sc.own[p.ord] += float32(fts.TermScore(u.idf, int(p.tf), float64(s.docs.lens[p.ord]), avgdl))
					*f |= fRanked
				}
				if u.required {
					sc.nreq[p.ord]++
				}
				if u.multi() {
					*f |= fVerify
				}
			}
		}
	}
}

// mark sets flag on the listed docs.
func (sc *scores) mark(list []posting, flag uint8) {
	for _, p := range list {
		f := &sc.flags[p.ord]
		if *f == 0 {
			sc.hits = append(sc.hits, p.ord)
		}
		*f |= flag
	}
}

// matches reports whether doc o can be a hit by its lists alone (before any check against
// its text): it holds a ranked unit and every required one, and no excluded word.
func (sc *scores) matches(o uint32, nreq int) bool {
	f := sc.flags[o]
	return f&fRanked != 0 && f&fExcluded == 0 && int(sc.nreq[o]) == nreq
}

// needsText reports whether doc o's match or score depends on units of several slots.
func (sc *scores) needsText(o uint32) bool {
	return sc.flags[o]&(fVerify|fMaybeOut) != 0
}

// rescore computes a doc's own score and whether it matches from its text's terms (the
// reference meaning, fts.Query.MatchesTerms), for docs that needsText.
func rescore(q *fts.Query, units []*unit, terms []string, avgdl float64) (float64, bool) {
	if !q.MatchesTerms(terms) {
		return 0, false
	}
	own := 0.0
	for _, u := range units {
		if u.ranked {
			own += fts.TermScore(u.idf, u.t.Count(terms), float64(len(terms)), avgdl)
		}
	}
	return own, true
}
