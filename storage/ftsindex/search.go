package ftsindex

import (
	"context"
	"database/sql"
	"fmt"
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
	// Text returns the texts of docs, as their Doc.Text was when indexed, for the words of
	// several terms (phrases, paths), which the index matches by their terms' co-occurrence
	// only and checks against the text before they become hits. nil accepts the
	// co-occurrence (tests of the index alone).
	Text TextFunc
}

// DocRef names an indexed doc.
type DocRef struct {
	SessionID string
	Seq       uint64
	Kind      string
}

// TextFunc returns the text of each doc ("" for one that is gone).
type TextFunc func(ctx context.Context, refs []DocRef) ([]string, error)

// Hit is one matching entry.
type Hit struct {
	SessionID string
	// SessionName and WorkingDir are as of the session's last Batch; the store has the
	// current name.
	SessionName, WorkingDir string
	Seq                     uint64
	EntryID, Kind, Role     string
	Time                    time.Time
	// Score is the hit's BM25 score with context (fts.ContextScore): higher is better; it
	// orders the hits of one query, nothing more. It is 0 for a File-only search.
	Score float64
}

// Result is one page of hits.
type Result struct {
	Hits []Hit
	// NextCursor continues with the next page; "" when there are no more hits.
	NextCursor string
	// Windowed is always false: every match is ranked. (It said, before version 2 of the
	// index, that only the newest matches of a very common word were.)
	Windowed bool
}

// Search returns the best matches first (contract v3: BM25 over the query's words with
// context from the neighbouring messages, then the newest, then the latest indexed), or with
// only File the newest first.
//
// Every match is ranked: scores are summed term at a time over the segments' postings (see
// eval.go), a few nanoseconds per posting, so the cost is that of reading the words' lists,
// not a per-match lookup. The best candidates by their own score (at least 500, more for
// deep pages) then get their neighbours' scores added (fts.ContextScore); those matched
// through words of several terms are checked against their text (Query.Text) in score order,
// as far as the page needs.
//
// Paging is by offset within a snapshot: the first page notes the highest doc id, and later
// pages ignore docs indexed after it, so new entries cannot push already seen hits onto the
// next page. A cursor from another query, or from before a Reset, fails with ErrInvalid.
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
	sn, err := db.view.load(ctx, tx)
	if err != nil {
		return Result{}, classify(err)
	}
	if q.Cursor == "" {
		cur = cursor{stamp: stamp, hash: fp, snap: sn.maxDoc}
	}
	f, ok := newFilter(q, sn, cur.snap)
	if !ok {
		return Result{Hits: []Hit{}}, nil
	}
	e := &evaluation{ctx: ctx, tx: tx, q: q, sn: sn, f: f, view: db.view, maxText: ix.opts.MaxTextBytes}
	var order []cand
	var more bool
	if q.Match == nil {
		order, more, err = e.byFile(cur.off, limit)
	} else {
		order, more, err = e.ranked(cur.off, limit)
	}
	if err != nil {
		return Result{}, classify(err)
	}
	hits, err := e.hits(order)
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

// evaluation is one Search's work.
type evaluation struct {
	ctx     context.Context
	tx      *sql.Tx
	q       Query
	sn      *snapshot
	f       *filter
	view    *view
	maxText int
	units   []*unit
	nreq    int
	lists   []segLists // per segment
	scores  []*scores  // per segment
}

// cand is a candidate hit.
type cand struct {
	seg      int
	ord      uint32
	own      float64
	score    float64 // own plus context
	needText bool
}
