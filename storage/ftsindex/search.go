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
}

// Search returns the best matches first (BM25 over the terms, then the newest, then the
// latest indexed), or with only File the newest first. Paging is by offset within a
// snapshot: the first page notes the highest doc id, and later pages ignore docs indexed
// after it, so new entries cannot push already seen hits onto the next page. A cursor from
// another query, or from before a Reset, fails with ErrInvalid.
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
	if q.Cursor == "" {
		cur = cursor{stamp: stamp, hash: fp}
		err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'docs'), 0)`).Scan(&cur.snap)
		if err != nil {
			return Result{}, classify(err)
		}
	}
	hits, more, err := runSearch(ctx, tx, q, cur, limit)
	if err != nil {
		return Result{}, classify(err)
	}
	res := Result{Hits: hits}
	if more {
		next := cur
		next.off += limit
		res.NextCursor = next.String()
	}
	return res, nil
}

// runSearch builds and runs the SQL for one page.
func runSearch(ctx context.Context, tx *sql.Tx, q Query, cur cursor, limit int) ([]Hit, bool, error) {
	var where []string
	var args []any
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	var sqlText string
	if q.Match != nil {
		sqlText = `SELECT d.seq, s.sid, s.name, s.working_dir, d.entry_id, d.kind, d.role, d.time, -bm25(fts) AS score
			FROM fts JOIN docs d ON d.id = fts.rowid JOIN sessions s ON s.id = d.session`
		add(`fts MATCH ?`, MatchExpr(q.Match))
		add(`fts.rowid <= ?`, cur.snap)
	} else {
		sqlText = `SELECT d.seq, s.sid, s.name, s.working_dir, d.entry_id, d.kind, d.role, d.time, 0.0 AS score
			FROM docs d JOIN sessions s ON s.id = d.session`
		add(`d.id <= ?`, cur.snap)
	}
	if q.SessionID != "" {
		add(`s.sid = ?`, q.SessionID)
	}
	if q.WorkingDir != "" {
		add(`s.working_dir = ?`, q.WorkingDir)
	}
	if q.Role != "" {
		add(`d.role = ?`, q.Role)
	}
	if q.Kind != "" {
		add(`d.kind = ?`, q.Kind)
	}
	if !q.Since.IsZero() {
		add(`d.time >= ?`, q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		add(`d.time <= ?`, q.Until.UnixNano())
	}
	if q.File != "" {
		cond, fargs, err := fileCondition(ctx, tx, q)
		if err != nil {
			return nil, false, err
		}
		if cond == "" {
			return []Hit{}, false, nil // no session knows this file
		}
		add(cond, fargs...)
	}
	sqlText += " WHERE " + strings.Join(where, " AND ")
	if q.Match != nil {
		sqlText += ` ORDER BY score DESC, d.time DESC, d.id DESC`
	} else {
		sqlText += ` ORDER BY d.time DESC, d.id DESC`
	}
	sqlText += ` LIMIT ? OFFSET ?`
	args = append(args, limit+1, cur.off)
	rows, err := tx.QueryContext(ctx, sqlText, args...)
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

// fileCondition turns the File filter into SQL. An absolute path is one path id; a relative
// one is resolved against every working directory in scope, giving (working_dir, path id)
// pairs. "" means no entry can match.
func fileCondition(ctx context.Context, tx *sql.Tx, q Query) (string, []any, error) {
	lookup := func(p string) (int64, bool, error) {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM paths WHERE path = ?`, p).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		return id, err == nil, err
	}
	if path.IsAbs(q.File) {
		id, ok, err := lookup(path.Clean(q.File))
		if err != nil || !ok {
			return "", nil, err
		}
		return `d.id IN (SELECT doc FROM doc_files WHERE path = ?)`, []any{id}, nil
	}
	rel := path.Clean(q.File)
	dirs := `SELECT DISTINCT working_dir FROM sessions`
	var dargs []any
	switch {
	case q.SessionID != "":
		dirs += ` WHERE sid = ?`
		dargs = append(dargs, q.SessionID)
	case q.WorkingDir != "":
		dirs += ` WHERE working_dir = ?`
		dargs = append(dargs, q.WorkingDir)
	}
	rows, err := tx.QueryContext(ctx, dirs, dargs...)
	if err != nil {
		return "", nil, err
	}
	var wds []string
	for rows.Next() {
		var wd string
		if err := rows.Scan(&wd); err != nil {
			rows.Close()
			return "", nil, err
		}
		wds = append(wds, wd)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", nil, err
	}
	var conds []string
	var args []any
	for _, wd := range wds {
		if !path.IsAbs(wd) {
			continue
		}
		id, ok, err := lookup(path.Join(wd, rel))
		if err != nil {
			return "", nil, err
		}
		if ok {
			conds = append(conds, `(s.working_dir = ? AND d.id IN (SELECT doc FROM doc_files WHERE path = ?))`)
			args = append(args, wd, id)
		}
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return "(" + strings.Join(conds, " OR ") + ")", args, nil
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

// cursor is a page position: offset within the snapshot of doc ids <= snap, of the index
// file stamp, for the query with hash.
type cursor struct {
	stamp int64
	snap  int64
	off   int
	hash  uint64
}

func (c cursor) String() string {
	s := fmt.Sprintf("1.%d.%d.%d.%x", c.stamp, c.snap, c.off, c.hash)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func parseCursor(s string) (cursor, error) {
	bad := fmt.Errorf("%w: cursor %.40q is not one this search returned; search again without cursor", ErrInvalid, s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, bad
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 5 || parts[0] != "1" {
		return cursor{}, bad
	}
	var c cursor
	var e [4]error
	c.stamp, e[0] = strconv.ParseInt(parts[1], 10, 64)
	c.snap, e[1] = strconv.ParseInt(parts[2], 10, 64)
	c.off, e[2] = strconv.Atoi(parts[3])
	c.hash, e[3] = strconv.ParseUint(parts[4], 16, 64)
	if errors.Join(e[:]...) != nil || c.off < 0 || c.off > 1_000_000 {
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
