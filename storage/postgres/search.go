package postgres

import (
	"context"
	"errors"
	"fmt"
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

// pgxExec sends a statement unprepared, planned for the values bound (see customPlan).
const pgxExec = pgx.QueryExecModeExec

// Search implements storage.Searcher (contract v3) with PostgreSQL's full-text index: an
// entry matches when its tsvector matches fts.Query.TSQuery (exactly what fts.Query.Matches
// matches), and the matches are ranked by BM25 with storage/fts's parameters and context
// (fts.ContextScore), then newer first, then later written first. With only File, the
// newest entries first.
//
// The ranking reads only what the best hits need (search_rank.go: MaxScore over the GIN
// index, rarest words first), within Options.ScoreBudget documents per page; past it the
// result says Windowed. N, the average length and the terms' df are described in
// search_stats.go, context in search_context.go.
//
// Paging is by keyset: the cursor holds the snapshot (the newest document when the first
// page was asked), the statistics the first page ranked with, and the last hit's (score,
// time, document), so later pages neither repeat nor skip what earlier pages ranked, whatever
// is saved meanwhile. A cursor of another query fails with an error wrapping
// fts.ErrBadQuery.
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
	var cur *searchCursor
	if q.Cursor != "" {
		ranked := 0
		if q.Match != nil {
			ranked = len(q.Match.Ranked())
		}
		c, err := parseSearchCursor(q.Cursor, ranked)
		if err != nil {
			return storage.SearchResult{}, err
		}
		if c.hash != fp {
			return storage.SearchResult{}, badQuery("the cursor belongs to another query; search again without cursor")
		}
		cur = &c
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
	err = pgx.BeginTxFunc(sctx, s.db(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		sq := &searchSQL{}
		ok, err := sq.filters(sctx, tx, q)
		if err != nil || !ok {
			return err
		}
		if q.Match == nil {
			res, err = sq.filePage(sctx, tx, fp, cur, limit)
		} else {
			res, err = s.rankedPage(sctx, tx, sq, q.Match, fp, cur, limit)
		}
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

// searchSQL builds the statements of one Search: the conditions on the documents d that
// every statement shares.
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
	// The session filters as sids, not a join: joined, the planner looped over the
	// sessions and scanned the GIN index once for each (14 scans of a common word's postings
	// for one working directory of the benchmark); this way one GIN scan is ANDed with the
	// primary key's entries of those sessions.
	if q.SessionID != "" {
		b.conds = append(b.conds, "d.sid = (SELECT sid FROM sessionmem_sessions WHERE id = "+b.arg(q.SessionID)+")")
	}
	if q.WorkingDir != "" {
		b.conds = append(b.conds, "d.sid = ANY (ARRAY(SELECT sid FROM sessionmem_sessions WHERE dir_key = "+b.arg(dirKey(q.WorkingDir))+"))")
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
		"EXISTS (SELECT 1 FROM unnest("+b.arg(keys)+"::text[], "+pa+"::text[]) AS p(dir, f) WHERE p.f = ANY (d.files)"+
			" AND p.dir = (SELECT dir_key FROM sessionmem_sessions WHERE sid = d.sid))")
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

// from is the statements' FROM.
func (b *searchSQL) from() string { return ` FROM sessionmem_documents d` }

func (b *searchSQL) where(extra ...string) string {
	all := append(append([]string{}, b.conds...), extra...)
	if len(all) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(all, " AND ")
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
