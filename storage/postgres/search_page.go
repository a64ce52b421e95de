package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// rankedPage ranks one page of a query: the universe of the first page (or the cursor's),
// the best H documents of it after the cursor (search_rank.go), the tier's scores with
// context (search_context.go), then the page.
func (s *Store) rankedPage(ctx context.Context, tx pgx.Tx, b *searchSQL, q *fts.Query, fp uint64, cur *searchCursor, limit int) (storage.SearchResult, error) {
	var u universe
	if cur != nil {
		u = cur.u
	} else {
		var err error
		if u.st, u.snap, err = loadCorpusStats(ctx, tx); err != nil {
			return storage.SearchResult{}, err
		}
		if u.dfs, err = s.termDFs(ctx, tx, q.Ranked(), u.st.n); err != nil {
			return storage.SearchResult{}, err
		}
		u.tier = max(minTier, tierPerLimit*limit)
		if s.opts.tier > 0 {
			u.tier = s.opts.tier
		}
	}
	perRound := roundDocs
	if s.opts.roundDocs > 0 {
		perRound = s.opts.roundDocs
	}
	r := newRanker(ctx, tx, q, b, u.st, u.dfs, s.opts.ScoreBudget, perRound)
	r.counted = func(n int) {
		s.scored.Add(int64(n))
		s.rounds.Add(1)
	}
	phase, after := 1, key{}
	if cur != nil {
		phase, after = cur.phase, cur.last
	}
	top := &topH{h: u.tier + limit + 1}
	if phase == 2 {
		top = &topH{h: limit + 1, pass: func(c *cand) bool { return compareKeys(c.ownKey(), after) < 0 }}
	}
	if err := r.rank(&u, top, cur == nil); err != nil {
		return storage.SearchResult{}, err
	}
	items, err := r.pageItems(&u, top.sorted(), phase, cur != nil, after)
	if err != nil {
		return storage.SearchResult{}, err
	}
	res := storage.SearchResult{Windowed: u.windowed}
	if len(items) > limit {
		last := items[limit-1]
		res.NextCursor = searchCursor{hash: fp, u: u, phase: last.phase, last: last.key()}.String()
		items = items[:limit]
	}
	if res.Hits, err = hitDetails(ctx, tx, items); err != nil {
		return storage.SearchResult{}, err
	}
	return res, nil
}

// rank fills top from the universe u. On the first page it settles u: how many rounds it
// holds, or the window of the newest matches when the first round passes the budget
// (predicted from the df, or found so).
func (r *ranker) rank(u *universe, top *topH, first bool) error {
	if first {
		u.rounds = len(r.rounds)
		if r.budget >= 0 && r.firstRoundDocs() > int64(r.budget) {
			if err := r.window(u); err != nil {
				return err
			}
		}
	}
	n, err := r.evaluate(u, top)
	if err != nil || n >= u.rounds {
		return err
	}
	if !first || n > 0 {
		u.rounds, u.windowed = n, true
		return nil
	}
	if err := r.window(u); err != nil {
		return err
	}
	top.items = nil
	_, err = r.evaluate(u, top)
	return err
}

// pageItems places the best documents (best, in own order) on the page: in phase 1 the
// tier (the first u.tier, or on later pages those down to u.bound) ranked with context, then
// the rest by own score; in phase 2 the rest only. A later page starts after the hit after.
func (r *ranker) pageItems(u *universe, best []cand, phase int, later bool, after key) ([]hitItem, error) {
	var items []hitItem
	if phase == 1 {
		var tier []cand
		switch {
		case !later && len(best) > u.tier:
			u.bound = best[u.tier-1].ownKey()
			tier, best = best[:u.tier], best[u.tier:]
		case !later || u.bound.doc == 0:
			tier, best = best, nil
		default:
			i := 0
			for i < len(best) && compareKeys(best[i].ownKey(), u.bound) >= 0 {
				i++
			}
			tier, best = best[:i], best[i:]
		}
		scores, err := r.withContext(tier, u.snap)
		if err != nil {
			return nil, err
		}
		for i, c := range tier {
			items = append(items, hitItem{c: c, score: scores[i], phase: 1})
		}
		orderTier(items)
		if later {
			i := 0
			for i < len(items) && compareKeys(items[i].key(), after) >= 0 {
				i++
			}
			items = items[i:]
		}
	}
	for _, c := range best {
		items = append(items, hitItem{c: c, score: c.own, phase: 2})
	}
	return items, nil
}

// window makes the universe the newest ScoreBudget matches (all of them when there are not
// more).
func (r *ranker) window(u *universe) error {
	floor, err := r.windowFloor(u.snap, r.budget)
	if err != nil {
		return err
	}
	u.floor, u.rounds, u.windowed = floor, -1, floor > 0
	return nil
}

// hitDetails returns the hits of items, in their order, with what the documents and their
// sessions say of them.
func hitDetails(ctx context.Context, tx pgx.Tx, items []hitItem) ([]storage.SearchHit, error) {
	hits := make([]storage.SearchHit, len(items))
	if len(items) == 0 {
		return hits, nil
	}
	at := make(map[int64]int, len(items))
	docs := make([]int64, len(items))
	for i, it := range items {
		at[it.c.doc] = i
		docs[i] = it.c.doc
		h := &hits[i]
		h.Seq, h.Score = uint64(it.c.seq), it.score
		if it.c.time != 0 {
			h.Time = time.Unix(0, it.c.time).UTC()
		}
	}
	rows, err := tx.Query(ctx, `SELECT d.doc, s.id, s.name, s.working_dir, d.entry_id, d.kind, d.role
		FROM sessionmem_documents d JOIN sessionmem_sessions s ON s.sid = d.sid WHERE d.doc = ANY ($1::bigint[])`, docs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var doc int64
		var h storage.SearchHit
		if err := rows.Scan(&doc, &h.SessionID, &h.SessionName, &h.WorkingDir, &h.EntryID, &h.Kind, &h.Role); err != nil {
			return nil, err
		}
		if i, ok := at[doc]; ok {
			x := &hits[i]
			x.SessionID, x.SessionName, x.WorkingDir, x.EntryID, x.Kind, x.Role = h.SessionID, h.SessionName, h.WorkingDir, h.EntryID, h.Kind, h.Role
		}
	}
	return hits, rows.Err()
}

// filePage is one page of a search by file only: the newest entries first.
func (b *searchSQL) filePage(ctx context.Context, tx pgx.Tx, fp uint64, cur *searchCursor, limit int) (storage.SearchResult, error) {
	c := searchCursor{hash: fp}
	if cur != nil {
		c = *cur
	} else if err := tx.QueryRow(ctx, `SELECT coalesce(max(doc), 0) FROM sessionmem_documents`).Scan(&c.u.snap); err != nil {
		return storage.SearchResult{}, err
	}
	extra := []string{"d.doc <= " + b.arg(c.u.snap)}
	if cur != nil {
		extra = append(extra, "(d.time_ns, d.doc) < ("+b.arg(c.last.time)+"::bigint, "+b.arg(c.last.doc)+"::bigint)")
	}
	sql := `SELECT d.doc, d.seq, s.id, s.name, s.working_dir, d.entry_id, d.kind, d.role, d.time_ns
		FROM sessionmem_documents d JOIN sessionmem_sessions s ON s.sid = d.sid` + b.where(extra...) +
		` ORDER BY d.time_ns DESC, d.doc DESC LIMIT ` + b.arg(limit+1)
	rows, err := tx.Query(ctx, sql, b.customPlan()...)
	if err != nil {
		return storage.SearchResult{}, err
	}
	defer rows.Close()
	var res storage.SearchResult
	for rows.Next() {
		var h storage.SearchHit
		var doc, seq, t int64
		if err := rows.Scan(&doc, &seq, &h.SessionID, &h.SessionName, &h.WorkingDir, &h.EntryID, &h.Kind, &h.Role, &t); err != nil {
			return storage.SearchResult{}, err
		}
		if len(res.Hits) == limit {
			res.NextCursor = c.String() // after the last hit kept, set below
			break
		}
		h.Seq = uint64(seq)
		if t != 0 {
			h.Time = time.Unix(0, t).UTC()
		}
		res.Hits = append(res.Hits, h)
		c.last.doc, c.last.time = doc, t
	}
	return res, rows.Err()
}
