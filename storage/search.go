package storage

import (
	"context"
	"errors"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// ErrSearchUnavailable is returned by Search when the store's full-text index cannot answer
// for now (being rebuilt after it was found missing or damaged); the message says what to do.
var ErrSearchUnavailable = errors.New("search index unavailable")

// DocsFunc turns one stored record of a session into what a full-text index receives: none,
// one (a message, or a compaction's summary) or more documents. memory provides it
// (memory.Docs) so that every backend indexes the same text and files. The record is the one
// the store keeps (already redacted); h is the session's header (its WorkingDir resolves
// relative paths).
type DocsFunc func(h Header, rec Record) []fts.Doc

// Searcher is a Store with a full-text index over its records. Both backends implement it
// with the same query semantics (storage/fts); the contract suite checks them alike.
//
// The index is derived data: the session logs stay the truth. A record appended by any user
// of the store is found by every other within a second of its Append returning; a deleted
// session is never found again.
type Searcher interface {
	// Search returns one page of the hits of q, best first (relevance, then newer first). It
	// returns an error wrapping fts.ErrBadQuery for a cursor that does not belong to q, and
	// ErrSearchUnavailable when the index cannot answer for now.
	Search(ctx context.Context, q SearchQuery) (SearchResult, error)
}

// SearchQuery is one search: Match and every filter that is set must hold.
type SearchQuery struct {
	// Match is the parsed query; nil searches by File alone (newest first).
	Match *fts.Query
	// SessionID, WorkingDir, Role and Kind keep entries with exactly these values ("" keeps
	// all). Kind is fts.KindMessage or fts.KindSummary.
	SessionID, WorkingDir, Role, Kind string
	// File keeps entries whose tool calls read or modified this file: an absolute path, or
	// one relative to each session's working directory.
	File string
	// Since and Until bound the entries' time, both inclusive; zero means unbounded.
	Since, Until time.Time
	// Limit is the most hits returned (1..100; 0 means 10).
	Limit int
	// Cursor continues a previous Search of the same query ("" for the first page).
	Cursor string
}

// SearchHit is one matching record.
type SearchHit struct {
	SessionID string
	// SessionName and WorkingDir are the session's as the index last saw them.
	SessionName, WorkingDir string
	// Seq is the record's sequence number in the session's log; EntryID its entry id (for a
	// summary, the compaction's).
	Seq                 uint64
	EntryID, Kind, Role string
	Time                time.Time
	// Score orders the hits of one query (higher is better), nothing more; 0 for a
	// File-only search.
	Score float64
}

// SearchResult is one page of hits.
type SearchResult struct {
	Hits []SearchHit
	// NextCursor continues with the next page; "" when there are no more hits.
	NextCursor string
	// Windowed is true when so many entries matched that only the newest of them were ranked:
	// more words would narrow the search.
	Windowed bool
}
