// Package ftsindex is the local store's full-text index: SQLite FTS5 through modernc.org/sqlite
// (pure Go, no cgo), fed with the terms of storage/fts and queried with its Query.
//
// # Why SQLite FTS5
//
// Several server processes share one store, so the index must take writers and readers from
// several processes at once. SQLite in WAL mode does (one writer at a time, readers never
// blocked, a busy timeout instead of errors), and FTS5 brings BM25 ranking, phrases and
// prefixes. bleve (v2.6.3, scorch) was checked first and rejected: its Open takes bolt's
// exclusive flock, so a second process's Open, even read_only, blocks until the first closes
// the index (or fails after bolt_timeout).
//
// # What it owns
//
// A directory (the store's "search" directory) holding one SQLite database,
// fts-<unix nanoseconds>.db with its -wal and -shm files. The table fts is a contentless FTS5
// table (empty content option, contentless_delete=1): it keeps the inverted index only, no
// copy of the text; snippets are cut from text read back from the store. Its tokenizer is
// FTS5's ascii tokenizer with '_' as a token character, fed with the space-separated terms of
// fts.AppendTerms, so FTS5 sees exactly the terms storage/fts defines (and PostgreSQL gets
// the same ones). It has two columns: body, the doc's terms, and meta, one term per filter
// value (session, working directory, role, kind, each file touched; a prefix letter and a
// 64-bit hash), weighted 0 in bm25. Filters are thus FTS5 terms intersected with the words,
// skipping through posting lists, instead of a join that tests every match. Beside it:
// sessions (id, created, working_dir, name, and through: every record with seq <= through is
// indexed), docs (one row per indexed record: session, seq, entry id, kind, role, time; its
// id is the FTS5 rowid) and tombstones (deleted sessions).
//
// # Ranking
//
// bm25 over the body column, then newest, then last indexed. FTS5 computes bm25 for every
// match before sorting, about 3 µs each (it reads each match's length), and counts each
// term's matches over the whole index for its rarity. A query matching more than
// Options.RankWindow entries (10,000 by default, about 30 ms) therefore ranks only the newest of them, by
// index order, and says so (Result.Windowed); ranking is exact below that.
//
// # Derived data
//
// The session files are the truth and this index is rebuilt from them whenever it is missing,
// damaged or of another format, so nothing here is ever fsynced on a save's path:
// synchronous=NORMAL in WAL mode syncs only at checkpoints, which the writer runs after a
// commit that grew the WAL past 4 MB (1,000 pages). A power loss can roll the index back by a
// few transactions, never corrupt it; progress (through) lives in the same transactions as
// the rows, so catching up from it loses and duplicates nothing.
//
// A rebuild never reuses a file name: it creates a new fts-<nanoseconds>.db and deletes the
// older ones. SQLite deletes a database's -wal and -shm files by name when its last
// connection closes, so a process still holding the old database open must never find a new
// database under the old name. Each call stats the database it uses (about 1 µs) and, when
// the file is gone or replaced, reopens the newest.
//
// # Concurrency
//
// An Index is safe for concurrent use by goroutines and by processes sharing the directory.
// Writes run in short IMMEDIATE transactions on one connection per process and wait for other
// processes' writers (busy timeout); reads use a pool of connections and see every
// transaction committed before they start, from any process: a record indexed by one process
// is found by the next Search of any other.
//
// # Imports
//
// Standard library, modernc.org/sqlite, storage/fts and internal/buildinfo (the version an
// index file records, writer.go). It knows nothing of sessions' records: callers (the local
// store, through memory's Doc hook) hand it fts.Docs.
package ftsindex
