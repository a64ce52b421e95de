package postgres

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// Top-k by BM25 without reading every match (MaxScore, after Turtle and Flood, 1995).
//
// Each ranked term t can add at most ub(t) = IDF(t)·(K1+1) to a document's score. The
// query's optional terms (ranked, not required) are evaluated rarest first, in rounds: a
// round fetches, through the GIN index, the documents that match the query and hold the
// round's terms but none of the earlier rounds' (so no document is fetched twice), scores
// each in full (every ranked term, from the lexemes of its tsvector), and keeps the best H in
// a heap. A document not fetched yet holds only terms of later rounds (and the required
// ones), so it scores less than rest, the sum of their ub: once the heap holds H documents
// and the H-th best scores at least rest, no later round can change the top H, and the
// search stops. Common words, the terms with the most documents, come last and are seldom
// read at all: a question's rare words fill the heap first. With required terms (+word,
// "phrase"), every round also requires them, and a last round fetches the documents holding
// only the required terms (they score less than the required terms' ub).
//
// The work is bounded by Options.ScoreBudget documents fetched per page (20,000): a round
// that would pass it is not used (its partial fetch is dropped, so the work stays under twice
// the budget), the documents it and later rounds would have brought are left out of this
// and later pages of the query (they score less than every hit shown, see rest), and the
// result says Windowed. When even the first round would pass the budget (every word of the
// query is in more than ScoreBudget documents: "the error"), the search ranks the newest
// ScoreBudget matches, as the window of earlier versions did. Below the budget the ranking
// is exact: a query whose matches number less than the budget is never cut.

// rankTerm is one ranked term of a query with its statistics.
type rankTerm struct {
	term   fts.Term
	tsq    string // term.TSQuery()
	df     int64
	idf    float64
	ub     float64 // the most it can add to a score
	needed bool    // Required
}

// round is a group of optional terms evaluated together (rarest first); a round with no
// terms fetches the documents holding only the required terms.
type round struct {
	terms []int // indices into ranker.terms
	rest  float64
}

// roundDocs: consecutive optional terms share a round while their df add up to at most this,
// which saves round trips for rare words at little cost in pruning.
const roundDocs = 1000

// cand is a scored candidate document.
type cand struct {
	doc, sid, seq, time int64
	n                   int16
	own                 float64
}

// key orders hits: score, then newer, then later written; a higher key ranks first.
type key struct {
	score     float64
	time, doc int64
}

func compareKeys(a, b key) int {
	if c := cmp.Compare(a.score, b.score); c != 0 {
		return c
	}
	if c := cmp.Compare(a.time, b.time); c != 0 {
		return c
	}
	return cmp.Compare(a.doc, b.doc)
}

func (c *cand) ownKey() key { return key{c.own, c.time, c.doc} }

// ranker scores the documents of one page.
type ranker struct {
	ctx     context.Context
	tx      pgx.Tx
	q       *fts.Query
	b       *searchSQL // the filters
	terms   []rankTerm
	rounds  []round
	st      corpusStats
	lexemes []string // lexemes of the ranked terms whose positions are read (scoreSQL)
	ranked  []int    // the ranked terms whose frequency ts_rank_cd counts (countedByRank)
	budget  int      // documents a page may fetch (< 0: no bound)
	fetched int
	counted func(docs int) // called after each fetch with the documents it read
	scorer  *scorer
	saved   []cand // fetch's copy of the heap, reused
}

// newRanker prepares the ranking of q with the statistics st and dfs (one per ranked term).
func newRanker(ctx context.Context, tx pgx.Tx, q *fts.Query, b *searchSQL, st corpusStats, dfs []int64, budget, perRound int) *ranker {
	r := &ranker{ctx: ctx, tx: tx, q: q, b: b, st: st, budget: budget}
	seen := map[string]bool{}
	addLexeme := func(x string) {
		if x != "" && !seen[x] {
			seen[x] = true
			r.lexemes = append(r.lexemes, x)
		}
	}
	var optional []int
	var requiredUB float64
	for i, t := range q.Ranked() {
		idf := fts.IDF(int(st.n), int(dfs[i]))
		r.terms = append(r.terms, rankTerm{term: t, tsq: t.TSQuery(), df: dfs[i], idf: idf, ub: idf * (fts.K1 + 1), needed: t.Required})
		if countedByRank(t) {
			r.ranked = append(r.ranked, i)
		} else {
			for _, x := range t.Terms {
				addLexeme(x)
			}
		}
		if t.Required {
			requiredUB += r.terms[i].ub
		} else {
			optional = append(optional, i)
		}
	}
	slices.SortStableFunc(optional, func(a, b int) int { return cmp.Compare(r.terms[a].df, r.terms[b].df) })
	// rest after each round: the optional terms of later rounds, and the required ones.
	for i := 0; i < len(optional); {
		rd := round{terms: []int{optional[i]}}
		sum := r.terms[optional[i]].df
		for i++; i < len(optional) && sum+r.terms[optional[i]].df <= int64(perRound); i++ {
			sum += r.terms[optional[i]].df
			rd.terms = append(rd.terms, optional[i])
		}
		r.rounds = append(r.rounds, rd)
	}
	if requiredUB > 0 {
		r.rounds = append(r.rounds, round{})
	}
	r.scorer = newScorer(r.terms, r.lexemes, st.avgdl)
	rest := requiredUB
	for i := len(r.rounds) - 1; i >= 0; i-- {
		r.rounds[i].rest = rest
		for _, t := range r.rounds[i].terms {
			rest += r.terms[t].ub
		}
	}
	return r
}

// firstRoundDocs predicts how many documents the first round fetches at most.
func (r *ranker) firstRoundDocs() int64 {
	n := int64(-1)
	if len(r.rounds[0].terms) > 0 {
		n = 0
		for _, t := range r.rounds[0].terms {
			n += r.terms[t].df
		}
	}
	for _, t := range r.terms {
		if t.needed && (n < 0 || t.df < n) {
			n = t.df
		}
	}
	return max(n, 0)
}

// roundQuery is the tsquery of round i: the required terms, one of the round's terms, none
// of the earlier rounds' terms (nor, for the last round of required terms only, any optional
// term), none of the excluded terms.
func (r *ranker) roundQuery(i int) string {
	var parts []string
	for _, t := range r.terms {
		if t.needed {
			parts = append(parts, t.tsq)
		}
	}
	var these, earlier []string
	for _, t := range r.rounds[i].terms {
		these = append(these, r.terms[t].tsq)
	}
	for _, rd := range r.rounds[:i] {
		for _, t := range rd.terms {
			earlier = append(earlier, r.terms[t].tsq)
		}
	}
	if len(these) > 0 {
		parts = append(parts, "("+strings.Join(these, " | ")+")")
	}
	if len(earlier) > 0 {
		parts = append(parts, "!("+strings.Join(earlier, " | ")+")")
	}
	for _, t := range r.q.Exclude {
		parts = append(parts, "!"+t.TSQuery())
	}
	return strings.Join(parts, " & ")
}

// fetch scores the documents that match tsq (and the filters, floor < doc <= snap), at most
// limit of them (< 0: all), into top. It returns how many there were: limit+1 when there
// were more, and then top is left as it was.
func (r *ranker) fetch(tsq string, snap, floor int64, limit int, top *topH) (int, error) {
	saved := len(r.b.args)
	defer func() { r.b.args = r.b.args[:saved] }()
	extra := []string{"d.terms @@ " + r.b.arg(tsq) + "::tsquery", "d.doc <= " + r.b.arg(snap)}
	if floor > 0 {
		extra = append(extra, "d.doc > "+r.b.arg(floor))
	}
	cols := r.scoreSQL("d", r.b.arg)
	sql := `SELECT d.doc, d.sid, d.seq, d.n, d.time_ns, coalesce(d.len, -1), ` + cols + r.b.from() + r.b.where(extra...)
	if limit >= 0 {
		sql += ` LIMIT ` + r.b.arg(limit+1)
	}
	rows, err := r.tx.Query(r.ctx, sql, r.b.customPlan()...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if err := textRows(rows); err != nil {
		return 0, err
	}
	before := append(r.saved[:0], top.items...)
	r.saved = before
	count := 0
	for rows.Next() {
		count++
		if limit >= 0 && count > limit {
			top.items = append(top.items[:0], before...)
			break
		}
		v := rows.RawValues()
		var c cand
		var e [5]error
		c.doc, e[0] = parseInt(v[0])
		c.sid, e[1] = parseInt(v[1])
		c.seq, e[2] = parseInt(v[2])
		var n int64
		n, e[3] = parseInt(v[3])
		c.n = int16(n)
		c.time, e[4] = parseInt(v[4])
		if err := errors.Join(e[:]...); err != nil {
			return 0, err
		}
		if c.own, err = r.scorer.score(v[6], v[7], v[5]); err != nil {
			return 0, err
		}
		top.keep(&c)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if r.counted != nil {
		r.counted(count)
	}
	return count, nil
}

// topH keeps the best h candidates that pass a filter.
type topH struct {
	h     int
	items []cand // a min-heap by ownKey
	pass  func(*cand) bool
}

func (t *topH) Len() int           { return len(t.items) }
func (t *topH) Less(i, j int) bool { return compareKeys(t.items[i].ownKey(), t.items[j].ownKey()) < 0 }
func (t *topH) Swap(i, j int)      { t.items[i], t.items[j] = t.items[j], t.items[i] }
func (t *topH) Push(x any)         { t.items = append(t.items, x.(cand)) }
func (t *topH) Pop() any {
	x := t.items[len(t.items)-1]
	t.items = t.items[:len(t.items)-1]
	return x
}

func (t *topH) keep(c *cand) {
	if t.pass != nil && !t.pass(c) {
		return
	}
	if len(t.items) < t.h {
		heap.Push(t, *c)
	} else if compareKeys(c.ownKey(), t.items[0].ownKey()) > 0 {
		t.items[0] = *c
		heap.Fix(t, 0)
	}
}

// full reports whether the heap holds h candidates and the worst of them scores more than
// bound.
func (t *topH) beats(bound float64) bool {
	return len(t.items) >= t.h && t.items[0].own > bound*(1+1e-12)
}

// sorted returns the kept candidates, best first.
func (t *topH) sorted() []cand {
	out := slices.Clone(t.items)
	slices.SortFunc(out, func(a, b cand) int { return compareKeys(b.ownKey(), a.ownKey()) })
	return out
}

// evaluate runs the rounds of the universe u into top, stopping as soon as no later round can
// change it. It returns how many rounds u holds from now on: fewer than before when a round
// passed the budget (u.rounds is lowered and u.windowed set by the caller).
func (r *ranker) evaluate(u *universe, top *topH) (int, error) {
	if u.floor > 0 || u.rounds < 0 {
		// The newest matches only, all at once (their number is within the budget).
		_, err := r.fetch(r.q.TSQuery(), u.snap, u.floor, -1, top)
		return u.rounds, err
	}
	for i := 0; i < u.rounds; i++ {
		if i > 0 && top.beats(r.rounds[i-1].rest) {
			return u.rounds, nil
		}
		left := -1
		if r.budget >= 0 {
			left = max(r.budget-r.fetched, 0)
			if i > 0 && r.surelyMore(i, left) {
				return i, nil
			}
		}
		n, err := r.fetch(r.roundQuery(i), u.snap, 0, left, top)
		if err != nil {
			return 0, err
		}
		if left >= 0 && n > left {
			return i, nil
		}
		r.fetched += n
	}
	return u.rounds, nil
}

// surelyMore reports whether round i certainly brings more than left documents, so that
// fetching them (to drop them) can be spared: without filters, required or excluded terms,
// every document holding one of the round's terms is fetched by it or was by an earlier
// round, so it brings at least df - fetched of them (df with a margin for estimates).
func (r *ranker) surelyMore(i, left int) bool {
	if len(r.b.conds) > 0 || len(r.q.Exclude) > 0 {
		return false
	}
	for _, t := range r.terms {
		if t.needed {
			return false
		}
	}
	for _, t := range r.rounds[i].terms {
		if float64(r.terms[t].df)*0.9-float64(r.fetched) > float64(left) {
			return true
		}
	}
	return false
}

// windowFloor returns the newest document that falls outside a window of the newest
// matches of q, or 0 when at most window documents match.
func (r *ranker) windowFloor(snap int64, window int) (int64, error) {
	saved := len(r.b.args)
	defer func() { r.b.args = r.b.args[:saved] }()
	sql := `SELECT d.doc` + r.b.from() + r.b.where("d.terms @@ "+r.b.arg(r.q.TSQuery())+"::tsquery", "d.doc <= "+r.b.arg(snap)) +
		` ORDER BY d.doc DESC OFFSET ` + r.b.arg(window) + ` LIMIT 1`
	var floor int64
	err := r.tx.QueryRow(r.ctx, sql, r.b.customPlan()...).Scan(&floor)
	if err == pgx.ErrNoRows {
		return 0, nil
	}
	return floor, err
}

func itoa(n int) string { return strconv.Itoa(n) }
