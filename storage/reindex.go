package storage

import "context"

// Reindexer is a Searcher whose index can be brought up to date on request ("sessionmem
// reindex"): after a restore from a backup, or to catch up on records stored without index
// entries. It is an optional interface: callers check for it with a type assertion.
type Reindexer interface {
	// Reindex indexes what the index lacks, now, calling progress (when set) as it goes.
	// What "lacks" means is the backend's: the local store replaces its index by an empty
	// one and indexes every session again; PostgreSQL writes the documents of the records
	// that have none. Saves and reads keep working meanwhile.
	Reindex(ctx context.Context, progress func(ReindexProgress)) error
}

// IndexStatser is a Searcher that can describe its index (what "sessionmem reindex" and
// "sessionmem verify" report). It is an optional interface: callers check for it with a type
// assertion.
type IndexStatser interface {
	// IndexStats describes the index as it is now.
	IndexStats(ctx context.Context) (IndexStats, error)
}

// ReindexProgress is how far a Reindex has come. A backend fills what it counts and leaves
// the rest zero.
type ReindexProgress struct {
	// PerRecord is set by a backend that counts records (Records of TotalRecords), as in
	// IndexStats; without it the backend counts sessions and bytes.
	PerRecord bool
	// Sessions of TotalSessions are indexed (a backend that indexes session by session).
	Sessions, TotalSessions int
	// Bytes is how many bytes of records were read so far.
	Bytes int64
	// Records of TotalRecords have their index entries (a backend that tracks records).
	Records, TotalRecords int64
}

// Done reports whether every session and record counted is indexed.
func (p ReindexProgress) Done() bool {
	return p.Sessions >= p.TotalSessions && p.Records >= p.TotalRecords
}

// IndexStats describes a full-text index.
type IndexStats struct {
	// PerRecord is set by a backend that tracks which records have their index entries
	// (Records of TotalRecords); without it the backend counts what its index holds
	// (Entries, for Sessions sessions).
	PerRecord bool
	// Entries is how many entries the index holds, for Sessions sessions.
	Entries, Sessions int64
	// Records of TotalRecords have their index entries.
	Records, TotalRecords int64
	// Bytes is the index's size in storage.
	Bytes int64
	// Rebuilding is true while the index is incomplete after it was replaced (searches
	// answer ErrSearchUnavailable meanwhile, or scan the sessions).
	Rebuilding bool
}

// IndexVerifier is a Searcher that can check its whole index ("sessionmem verify"). It is an
// optional interface: callers check for it with a type assertion.
type IndexVerifier interface {
	// VerifyIndex checks the index completely: nil when it is intact. The index is derived
	// data, so a damaged one is rebuilt from the sessions (the backend starts it), never
	// counted as damage to the store; the error says what was found. It returns an error
	// wrapping ErrSearchUnavailable when there is no index to check.
	VerifyIndex(ctx context.Context) error
}
