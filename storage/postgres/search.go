package postgres

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// Limits of Search (the same as the local index's).
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
)

var _ storage.Searcher = (*Store)(nil)

// rankNorm is ts_rank_cd's normalization: the rank divided by 1 + log(document length), so a
// short entry that mentions the words ranks above a long tool output mentioning them as
// often (BM25, which the local index uses, also normalizes by length).
const rankNorm = 1

// Search implements storage.Searcher with PostgreSQL's full-text search: the query's tsquery
// (fts.Query.TSQuery, matching exactly what fts.Query.Matches matches) against the documents'
// tsvectors through their GIN index, ranked by ts_rank_cd (normalized by length), then newer
// first, then later written first. With only File, the newest entries first.
//
// A query matching more than Options.RankWindow documents ranks only the newest of them (by
// the order they were written) and sets Windowed, as the local index does: ts_rank_cd reads
// each match's tsvector.
//
// Paging is by keyset: the cursor holds the last hit's (score, time, document) and the
// snapshot (the newest document when the first page was asked, and the window's floor), so
// later pages neither repeat nor skip what earlier pages ranked, whatever is saved meanwhile.
// A cursor of another query fails with an error wrapping fts.ErrBadQuery.
func (s *Store) Search(ctx context.Context, q storage.SearchQuery) (storage.SearchResult, error) {
	limit := q.Limit
	if limit == 0 {
		limit = DefaultSearchLimit
	}
	if limit < 1 || limit > MaxSearchLimit {
		return storage.SearchResult{}, badQuery("limit %d is outside 1..%d", q.Limit, MaxSearchLimit)
	}
	if q.Match == nil && q.File == "" {
		return storage.SearchResult{}, badQuery("give a query or a file")
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until) {
		return storage.SearchResult{}, badQuery("since %s is after until %s", q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339))
	}
	fp := searchFingerprint(q)
	var cur searchCursor
	if q.Cursor != "" {
		var err error
		if cur, err = parseSearchCursor(q.Cursor); err != nil {
			return storage.SearchResult{}, err
		}
		if cur.hash != fp {
			return storage.SearchResult{}, badQuery("the cursor belongs to another query; search again without cursor")
		}
	}
	done, err := s.start(ctx)
	if err != nil {
		return storage.SearchResult{}, err
	}
	defer done()
	// Read your writes: what this Store saved is searchable now, not after DocsDelay. A
	// failure is logged and left to the writer's retry and the backfill.
	_ = s.flushDocs(ctx)
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	var res storage.SearchResult
	err = pgx.BeginTxFunc(sctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		sq := &searchSQL{}
		ok, err := sq.filters(sctx, tx, q)
		if err != nil || !ok {
			return err
		}
		if q.Cursor == "" {
			cur = searchCursor{hash: fp}
			if err := tx.QueryRow(sctx, `SELECT coalesce(max(doc), 0) FROM sessionmem_documents`).Scan(&cur.snap); err != nil {
				return err
			}
			if q.Match != nil && s.opts.RankWindow > 0 {
				if cur.floor, err = sq.windowFloor(sctx, tx, cur.snap, s.opts.RankWindow); err != nil {
					return err
				}
			}
		}
		res, err = sq.page(sctx, tx, q.Match != nil, cur, limit)
		return err
	})
	if err != nil {
		return storage.SearchResult{}, s.wrap(ctx, "search", err)
	}
	if res.Hits == nil {
		res.Hits = []storage.SearchHit{}
	}
	return res, nil
}

func badQuery(format string, a ...any) error {
	return fmt.Errorf("%w: %s", fts.ErrBadQuery, fmt.Sprintf(format, a...))
}

// searchSQL builds the statements of one Search: the documents d joined with their sessions
// s, and the conditions every statement shares.
type searchSQL struct {
	conds []string
	args  []any
}

func (b *searchSQL) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// filters adds the query and the filters. ok is false when nothing can match (a relative
// file in no known working directory).
func (b *searchSQL) filters(ctx context.Context, tx pgx.Tx, q storage.SearchQuery) (bool, error) {
	if q.Match != nil {
		b.conds = append(b.conds, "d.terms @@ "+b.arg(q.Match.TSQuery())+"::tsquery")
	}
	if q.SessionID != "" {
		b.conds = append(b.conds, "s.id = "+b.arg(q.SessionID))
	}
	if q.WorkingDir != "" {
		b.conds = append(b.conds, "s.dir_key = "+b.arg(dirKey(q.WorkingDir)))
	}
	if q.Role != "" {
		b.conds = append(b.conds, "d.role = "+b.arg(q.Role))
	}
	if q.Kind != "" {
		b.conds = append(b.conds, "d.kind = "+b.arg(q.Kind))
	}
	if !q.Since.IsZero() {
		b.conds = append(b.conds, "d.time_ns >= "+b.arg(clampNanos(q.Since)))
	}
	if !q.Until.IsZero() {
		b.conds = append(b.conds, "d.time_ns <= "+b.arg(clampNanos(q.Until)))
	}
	if q.File == "" {
		return true, nil
	}
	if path.IsAbs(q.File) {
		b.conds = append(b.conds, "d.files @> ARRAY["+b.arg(path.Clean(q.File))+"::text]")
		return true, nil
	}
	// Relative: the file under each candidate working directory, and a document matches the
	// path under its own session's directory (the && finds candidates through the GIN index).
	dirs, err := workingDirs(ctx, tx, q)
	if err != nil {
		return false, err
	}
	rel := path.Clean(q.File)
	var keys, paths []string
	for _, wd := range dirs {
		if path.IsAbs(wd) {
			keys = append(keys, dirKey(wd))
			paths = append(paths, path.Join(wd, rel))
		}
	}
	if len(paths) == 0 {
		return false, nil
	}
	pa := b.arg(paths)
	b.conds = append(b.conds, "d.files && "+pa+"::text[]",
		"EXISTS (SELECT 1 FROM unnest("+b.arg(keys)+"::text[], "+pa+"::text[]) AS p(dir, f) WHERE p.dir = s.dir_key AND p.f = ANY (d.files))")
	return true, nil
}

// workingDirs lists the working directories a relative File is resolved against: the
// session's, the WorkingDir filter, or every session's.
func workingDirs(ctx context.Context, tx pgx.Tx, q storage.SearchQuery) ([]string, error) {
	switch {
	case q.SessionID != "":
		var wd string
		err := tx.QueryRow(ctx, `SELECT working_dir FROM sessionmem_sessions WHERE id = $1`, q.SessionID).Scan(&wd)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		return []string{wd}, err
	case q.WorkingDir != "":
		return []string{q.WorkingDir}, nil
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT working_dir FROM sessionmem_sessions`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// customPlan returns the arguments of a statement to be planned with their values: sent
// unprepared (pgx.QueryExecModeExec), as an unnamed statement, which PostgreSQL plans for the
// values bound. A prepared statement switches to a generic plan after five runs, and a
// generic plan cannot know how many documents a tsquery matches: it walked the documents
// newest first and tested each (0.3 s per search on 100 MB of messages, whatever the words).
func (b *searchSQL) customPlan() []any {
	return append([]any{pgx.QueryExecModeExec}, b.args...)
}

const searchFrom = ` FROM sessionmem_documents d JOIN sessionmem_sessions s ON s.sid = d.sid`

func (b *searchSQL) where(extra ...string) string {
	all := append(append([]string{}, b.conds...), extra...)
	if len(all) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(all, " AND ")
}

// windowFloor returns the newest document that falls outside the ranking window (the
// window-th newest match but one), or 0 when at most window documents match.
func (b *searchSQL) windowFloor(ctx context.Context, tx pgx.Tx, snap int64, window int) (int64, error) {
	saved := len(b.args)
	defer func() { b.args = b.args[:saved] }()
	q := `SELECT d.doc` + searchFrom + b.where("d.doc <= "+b.arg(snap)) +
		` ORDER BY d.doc DESC OFFSET ` + b.arg(window) + ` LIMIT 1`
	var floor int64
	err := tx.QueryRow(ctx, q, b.customPlan()...).Scan(&floor)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return floor, err
}

// page runs the query for one page after cur.
func (b *searchSQL) page(ctx context.Context, tx pgx.Tx, ranked bool, cur searchCursor, limit int) (storage.SearchResult, error) {
	score := "0::real"
	if ranked {
		// The tsquery is the first argument ($1); reuse it rather than pass it twice.
		score = "ts_rank_cd(d.terms, $1::tsquery, " + strconv.Itoa(rankNorm) + ")"
	}
	extra := []string{"d.doc <= " + b.arg(cur.snap)}
	if cur.floor > 0 {
		extra = append(extra, "d.doc > "+b.arg(cur.floor))
	}
	inner := `SELECT d.doc, d.seq, s.id, s.name, s.working_dir, d.entry_id, d.kind, d.role, d.time_ns, ` + score + ` AS score` +
		searchFrom + b.where(extra...)
	q := `SELECT doc, seq, id, name, working_dir, entry_id, kind, role, time_ns, score FROM (` + inner + `) m`
	if cur.doc > 0 {
		q += ` WHERE (score, time_ns, doc) < (` + b.arg(cur.score) + `::real, ` + b.arg(cur.time) + `::bigint, ` + b.arg(cur.doc) + `::bigint)`
	}
	q += ` ORDER BY score DESC, time_ns DESC, doc DESC LIMIT ` + b.arg(limit+1)
	rows, err := tx.Query(ctx, q, b.customPlan()...)
	if err != nil {
		return storage.SearchResult{}, err
	}
	defer rows.Close()
	var hits []storage.SearchHit
	var last searchCursor
	for rows.Next() {
		var h storage.SearchHit
		var doc, seq, t int64
		var sc float32
		if err := rows.Scan(&doc, &seq, &h.SessionID, &h.SessionName, &h.WorkingDir, &h.EntryID, &h.Kind, &h.Role, &t, &sc); err != nil {
			return storage.SearchResult{}, err
		}
		if len(hits) == limit {
			next := cur
			next.doc, next.time, next.score = last.doc, last.time, last.score
			return storage.SearchResult{Hits: hits, NextCursor: next.String(), Windowed: cur.floor > 0}, rows.Err()
		}
		h.Seq, h.Score = uint64(seq), float64(sc)
		if t != 0 {
			h.Time = time.Unix(0, t).UTC()
		}
		hits = append(hits, h)
		last.doc, last.time, last.score = doc, t, sc
	}
	return storage.SearchResult{Hits: hits, Windowed: cur.floor > 0}, rows.Err()
}

// clampNanos is t in Unix nanoseconds, clamped to what int64 holds.
func clampNanos(t time.Time) int64 {
	if n, err := toNanos(t); err == nil {
		return n
	}
	if t.Year() < 1678 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// searchCursor is a page position: after the hit (score, time, doc), within the documents
// floor < doc <= snap, for the query with hash. doc 0: the first page.
type searchCursor struct {
	snap, floor int64
	score       float32
	time, doc   int64
	hash        uint64
}

func (c searchCursor) String() string {
	s := fmt.Sprintf("p1.%d.%d.%x.%d.%d.%x", c.snap, c.floor, math.Float32bits(c.score), c.time, c.doc, c.hash)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func parseSearchCursor(s string) (searchCursor, error) {
	bad := badQuery("cursor %.40q is not one this search returned; search again without cursor", s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return searchCursor{}, bad
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 7 || parts[0] != "p1" {
		return searchCursor{}, bad
	}
	var c searchCursor
	var e [6]error
	var bits uint64
	c.snap, e[0] = strconv.ParseInt(parts[1], 10, 64)
	c.floor, e[1] = strconv.ParseInt(parts[2], 10, 64)
	bits, e[2] = strconv.ParseUint(parts[3], 16, 32)
	c.time, e[3] = strconv.ParseInt(parts[4], 10, 64)
	c.doc, e[4] = strconv.ParseInt(parts[5], 10, 64)
	c.hash, e[5] = strconv.ParseUint(parts[6], 16, 64)
	c.score = math.Float32frombits(uint32(bits))
	if errors.Join(e[:]...) != nil || c.doc <= 0 || c.floor < 0 || c.snap < c.floor {
		return searchCursor{}, bad
	}
	return c, nil
}

// searchFingerprint hashes what a cursor must not change between pages (not the limit).
func searchFingerprint(q storage.SearchQuery) uint64 {
	h := fnv.New64a()
	match := ""
	if q.Match != nil {
		match = q.Match.String()
	}
	for _, s := range []string{match, q.SessionID, q.WorkingDir, q.Role, q.Kind, q.File,
		strconv.FormatInt(clampNanos(q.Since), 10), strconv.FormatInt(clampNanos(q.Until), 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
