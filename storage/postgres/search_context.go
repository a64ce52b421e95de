package postgres

import (
	"errors"
	"slices"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// Context (contract v3): a hit's score is fts.ContextScore(own, prev, next), prev and next
// being the own scores of the messages right before and after it in its session (by seq,
// among documents of kind message written before the search's snapshot; 0 when there is
// none or it does not match the query). The filters choose the hits, not their neighbours:
// an assistant's answer lends its weight to the user's question even when the search keeps
// only the user's messages. Only matches are hits; context re-ranks them.
//
// Context is computed for the best documents by own score only, a tier of
// max(minTier, tierPerLimit·limit) of them (200 for a page of 10): the tier is ranked by
// score with context, and the documents after it follow by own score. A document's score
// with context is at least its own, so scores still decrease along the pages. A document
// whose own score is below the tier's does not climb into it, however much its neighbours
// add: finding those would mean scoring the neighbours of every match.
const (
	minTier      = 200
	tierPerLimit = 10
)

// neighbourSQL finds, for each document (sid, seq, n) of $1-$3, the messages right before
// and after it in its session, written before $5, and the scoreSQL columns of those that
// match the query $4 (both NULL for the others: the side tells). The primary key
// (sid, seq, n) serves both lookups.
func (r *ranker) neighbourSQL(args *[]any) string {
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + itoa(len(*args)-1) // args[0] is the exec mode
	}
	side := func(dir, op, order string) string {
		return `(SELECT ` + dir + ` AS side, p.len, p.terms
			FROM sessionmem_documents p
			WHERE p.sid = c.sid AND (p.seq, p.n) ` + op + ` (c.seq, c.n) AND p.kind = '` + fts.KindMessage + `' AND p.doc <= $5
			ORDER BY p.seq ` + order + `, p.n ` + order + ` LIMIT 1)`
	}
	// The score's columns are computed only for the neighbours that match.
	return `SELECT c.i, x.side, coalesce(x.len, -1), ` + r.scoreSQL("x", arg) + `
		FROM unnest($1::bigint[], $2::bigint[], $3::smallint[]) WITH ORDINALITY AS c(sid, seq, n, i)
		CROSS JOIN LATERAL (` + side("-1", "<", "DESC") + ` UNION ALL ` + side("1", ">", "ASC") + `) AS x(side, len, terms)
		WHERE x.terms @@ $4::tsquery`
}

// withContext returns the scores with context of cands (their own scores being set).
func (r *ranker) withContext(cands []cand, snap int64) ([]float64, error) {
	out := make([]float64, len(cands))
	if len(cands) == 0 {
		return out, nil
	}
	sids := make([]int64, len(cands))
	seqs := make([]int64, len(cands))
	ns := make([]int16, len(cands))
	for i, c := range cands {
		sids[i], seqs[i], ns[i] = c.sid, c.seq, c.n
	}
	args := []any{pgxExec, sids, seqs, ns, r.q.TSQuery(), snap}
	sql := r.neighbourSQL(&args)
	rows, err := r.tx.Query(r.ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if err := textRows(rows); err != nil {
		return nil, err
	}
	prev := make([]float64, len(cands))
	next := make([]float64, len(cands))
	for rows.Next() {
		v := rows.RawValues()
		i, err1 := parseInt(v[0])
		side, err2 := parseInt(v[1])
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		own, err := r.scorer.score(v[3], v[4], v[2])
		if err != nil {
			return nil, err
		}
		if i < 1 || i > int64(len(cands)) {
			continue
		}
		if side < 0 {
			prev[i-1] = own
		} else {
			next[i-1] = own
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, c := range cands {
		out[i] = fts.ContextScore(c.own, prev[i], next[i])
	}
	return out, nil
}

// hitItem is a candidate placed on a page, with the score it is shown and ordered by.
type hitItem struct {
	c     cand
	score float64
	phase int
}

func (h hitItem) key() key { return key{h.score, h.c.time, h.c.doc} }

// orderTier sorts the tier by score with context, best first.
func orderTier(items []hitItem) {
	slices.SortFunc(items, func(a, b hitItem) int { return compareKeys(b.key(), a.key()) })
}
