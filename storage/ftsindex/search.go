package ftsindex

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"path"
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
}

// Hit is one matching entry.
type Hit struct {
	SessionID string
	// SessionName and WorkingDir are as of the session's last Batch; the store has the
	// current name.
	SessionName, WorkingDir string
	Seq                     uint64
	EntryID, Kind, Role     string
	Time                    time.Time
	// Score is -BM25: higher is better; it orders the hits of one query, nothing more. It is
	// 0 for a File-only search.
	Score float64
}

// Result is one page of hits.
type Result struct {
	Hits []Hit
	// NextCursor continues with the next page; "" when there are no more hits.
	NextCursor string
	// Windowed is true when more entries matched than Options.RankWindow and only the newest
	// of them were ranked: more words would narrow the search.
	Windowed bool
}

// Search returns the best matches first (BM25 over the words, then the newest, then the
// latest indexed), or with only File the newest first.
//
// Ranking costs about 3 µs per matching entry (FTS5's bm25 reads each match's length), so a
// query matching a large share of a big store (a common word) ranks only the newest
// Options.RankWindow matches, by index order; Result.Windowed says so. Filters other than
// time are terms of the index, intersected with the words before ranking.
//
// Paging is by offset within a snapshot: the first page notes the highest doc id (and the
// ranking window's floor), and later pages ignore docs indexed after it, so new entries
// cannot push already seen hits onto the next page. A cursor from another query, or from
// before a Reset, fails with ErrInvalid.
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
	expr, ok, err := ftsExpr(ctx, tx, q)
	if err != nil || !ok {
		return Result{Hits: []Hit{}}, classify(err)
	}
	s := searcher{ctx: ctx, tx: tx, q: q, expr: expr}
	if q.Cursor == "" {
		cur = cursor{stamp: stamp, hash: fp}
		if err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'docs'), 0)`).Scan(&cur.snap); err != nil {
			return Result{}, classify(err)
		}
		if q.Match != nil && ix.opts.RankWindow > 0 {
			if cur.floor, err = s.windowFloor(cur.snap, ix.opts.RankWindow); err != nil {
				return Result{}, classify(err)
			}
		}
	}
	hits, more, err := s.page(cur, limit)
	if err != nil {
		return Result{}, classify(err)
	}
	res := Result{Hits: hits, Windowed: cur.floor > 0}
	if more {
		next := cur
		next.off += limit
		res.NextCursor = next.String()
	}
	return res, nil
}

// searcher builds and runs the statements of one Search.
type searcher struct {
	ctx  context.Context
	tx   *sql.Tx
	q    Query
	expr string // the FTS5 expression: words and filter terms
}

// timeConds are the SQL conditions for Since and Until.
func (s *searcher) timeConds() ([]string, []any) {
	var conds []string
	var args []any
	if !s.q.Since.IsZero() {
		conds = append(conds, `d.time >= ?`)
		args = append(args, nanos(s.q.Since))
	}
	if !s.q.Until.IsZero() {
		conds = append(conds, `d.time <= ?`)
		args = append(args, nanos(s.q.Until))
	}
	return conds, args
}

// windowFloor returns the lowest doc id of the newest window matches, or 0 when fewer
// match. Walking a posting list without ranking costs about 0.1 µs per doc; the time
// filters, when given, cost a lookup per doc walked.
func (s *searcher) windowFloor(snap int64, window int) (int64, error) {
	conds, args := s.timeConds()
	q := `SELECT fts.rowid FROM fts`
	if len(conds) > 0 {
		q += ` JOIN docs d ON d.id = fts.rowid`
	}
	q += ` WHERE fts MATCH ? AND fts.rowid <= ?`
	for _, c := range conds {
		q += ` AND ` + c
	}
	q += ` ORDER BY fts.rowid DESC LIMIT 1 OFFSET ?`
	var floor int64
	err := s.tx.QueryRowContext(s.ctx, q, append(append([]any{s.expr, snap}, args...), window-1)...).Scan(&floor)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return floor, err
}

// page runs the query for one page.
func (s *searcher) page(cur cursor, limit int) ([]Hit, bool, error) {
	q := `SELECT d.seq, s.sid, s.name, s.working_dir, d.entry_id, d.kind, d.role, d.time, `
	if s.q.Match != nil {
		q += `-bm25(fts, 1.0, 0.0) AS score`
	} else {
		q += `0.0 AS score`
	}
	q += ` FROM fts JOIN docs d ON d.id = fts.rowid JOIN sessions s ON s.id = d.session WHERE fts MATCH ? AND fts.rowid <= ?`
	args := []any{s.expr, cur.snap}
	if cur.floor > 0 {
		q += ` AND fts.rowid >= ?`
		args = append(args, cur.floor)
	}
	conds, targs := s.timeConds()
	for _, c := range conds {
		q += ` AND ` + c
	}
	args = append(args, targs...)
	if s.q.Match != nil {
		q += ` ORDER BY score DESC, d.time DESC, d.id DESC`
	} else {
		q += ` ORDER BY d.time DESC, d.id DESC`
	}
	q += ` LIMIT ? OFFSET ?`
	args = append(args, limit+1, cur.off)
	rows, err := s.tx.QueryContext(s.ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	hits := []Hit{}
	for rows.Next() {
		var h Hit
		var t int64
		if err := rows.Scan(&h.Seq, &h.SessionID, &h.SessionName, &h.WorkingDir, &h.EntryID, &h.Kind, &h.Role, &t, &h.Score); err != nil {
			return nil, false, err
		}
		h.Time = unnanos(t)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(hits) > limit
	if more {
		hits = hits[:limit]
	}
	return hits, more, nil
}

// ftsExpr builds the FTS5 expression of a query: the words restricted to the body column,
// and the filters as terms of the meta column. ok is false when no entry can match (a
// relative file in no known working directory).
func ftsExpr(ctx context.Context, tx *sql.Tx, q Query) (string, bool, error) {
	var meta []string
	quote := func(t string) string { return `"` + t + `"` }
	if q.SessionID != "" {
		meta = append(meta, quote(metaTerm(metaSession, q.SessionID)))
	}
	if q.WorkingDir != "" {
		meta = append(meta, quote(metaTerm(metaDir, normDir(q.WorkingDir))))
	}
	if q.Role != "" {
		meta = append(meta, quote(metaTerm(metaRole, q.Role)))
	}
	if q.Kind != "" {
		meta = append(meta, quote(metaTerm(metaKind, q.Kind)))
	}
	if q.File != "" {
		if path.IsAbs(q.File) {
			meta = append(meta, quote(metaTerm(metaFile, path.Clean(q.File))))
		} else {
			dirs, err := workingDirs(ctx, tx, q)
			if err != nil {
				return "", false, err
			}
			rel := path.Clean(q.File)
			var pairs []string
			for _, wd := range dirs {
				if path.IsAbs(wd) {
					pairs = append(pairs, "("+quote(metaTerm(metaDir, normDir(wd)))+" AND "+quote(metaTerm(metaFile, path.Join(wd, rel)))+")")
				}
			}
			if len(pairs) == 0 {
				return "", false, nil
			}
			meta = append(meta, "("+strings.Join(pairs, " OR ")+")")
		}
	}
	var parts []string
	if q.Match != nil {
		parts = append(parts, "body : ("+MatchExpr(q.Match)+")")
	}
	if len(meta) > 0 {
		parts = append(parts, "meta : ("+strings.Join(meta, " AND ")+")")
	}
	return strings.Join(parts, " AND "), true, nil
}

// workingDirs lists the working directories a relative File filter is resolved against:
// the session's, the WorkingDir filter, or every indexed session's.
func workingDirs(ctx context.Context, tx *sql.Tx, q Query) ([]string, error) {
	switch {
	case q.SessionID != "":
		var wd string
		err := tx.QueryRowContext(ctx, `SELECT working_dir FROM sessions WHERE sid = ?`, q.SessionID).Scan(&wd)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		return []string{wd}, err
	case q.WorkingDir != "":
		return []string{q.WorkingDir}, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT working_dir FROM sessions`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var wd string
		if err := rows.Scan(&wd); err != nil {
			return nil, err
		}
		out = append(out, wd)
	}
	return out, rows.Err()
}

// MatchExpr renders a query in FTS5's syntax: every Include term as a quoted phrase (a
// trailing * for a prefix), ANDed, then NOT the ORed Exclude terms. Terms hold only word
// characters, so quoting needs no escapes.
func MatchExpr(q *fts.Query) string {
	term := func(t fts.Term) string {
		s := `"` + strings.Join(t.Terms, " ") + `"`
		if t.Prefix {
			s += "*"
		}
		return s
	}
	inc := make([]string, len(q.Include))
	for i, t := range q.Include {
		inc[i] = term(t)
	}
	expr := strings.Join(inc, " AND ")
	if len(q.Exclude) > 0 {
		exc := make([]string, len(q.Exclude))
		for i, t := range q.Exclude {
			exc[i] = term(t)
		}
		expr = "(" + expr + ") NOT (" + strings.Join(exc, " OR ") + ")"
	}
	return expr
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
