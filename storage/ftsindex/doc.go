// Package ftsindex is the local store's full-text index: an inverted index of its own,
// kept in one SQLite database (modernc.org/sqlite: pure Go, no cgo), fed with the terms of
// storage/fts and queried with its Query (contract v3: ranked words, BM25 with context).
//
// # Why SQLite, and why not FTS5
//
// Several server processes share one store, so the index must take writers and readers from
// several processes at once. SQLite in WAL mode does (one writer at a time, readers never
// blocked, a busy timeout instead of errors). bleve (v2.6.3, scorch) was rejected: its Open
// takes bolt's exclusive flock, so a second process's Open blocks until the first closes.
// Up to index format 1 the index was an FTS5 table; it was replaced because ranking many
// OR-ed words is what natural-language questions need and FTS5 does it slowly: its bm25
// costs about 3 µs per match (it reads each match's length through SQLite's row machinery)
// and counts every term's matches over the whole index for its rarity, so a question of ten
// words, some common, took hundreds of milliseconds at 1 GB, and v2's ranking window (only
// the newest 10,000 matches ranked) would have ranked a question's answers by age.
//
// # What it owns
//
// A directory (the store's "search" directory) holding one database, fts-<unix
// nanoseconds>.db with its -wal and -shm files, with these tables:
//   - sessions (id, sid, created, working_dir, name, through: every record with seq <=
//     through is indexed; gaps: the seqs indexed above through, by batches that came ahead of
//     a missing one; ndocs and nterms: what its docs add to the counters) and tombstones
//     (deleted sessions, so late batches are ignored);
//   - segments and postings: the inverted index (segment.go, terms.go). A segment holds the
//     docs of one or more Index calls, numbered 0..n-1 within it, with their attributes in one
//     blob (doc ids, session rows, seqs, times, kind, role, length, entry id) and, for each
//     term they contain, a list of ordinals and counts (varints: one or two bytes a posting;
//     no positions). A small segment keeps all its lists in one packed blob; a large one has a
//     postings row per term. The files a doc's tool calls touched are terms too (a hash of
//     the path after a byte no word has), which the file filter reads. A doc's id, given out
//     in increasing order (counters' last_doc), is its identity everywhere;
//   - counters: the live docs and their total length (BM25's N and average length) and a
//     generation of the sessions table.
//
// # Writing and merging
//
// Every Index call is one IMMEDIATE transaction that adds its docs rows and writes them as
// one new segment (merge.go). Segments of one level are merged eight at a time into one of
// the next; merges of fewer than 4,096 docs run in the Index transaction that made them due,
// larger ones are built from a read snapshot on a background goroutine (Merge) and
// committed in a short transaction, dropped if another process merged the same segments
// first. A segment of 65,536 docs or more is final: only Optimize merges it, so a merge
// never holds the write lock for long. A merge drops the postings of deleted sessions.
// Segments always cover disjoint, increasing ranges of doc ids.
//
// IndexAll (a rebuild, a large catch-up) writes no small segments to merge later: workers
// tokenize the stream (each remembering its words' terms, so stemming runs once per
// distinct word), and one goroutine adds the terms to a segment in memory until it holds
// 262,144 docs or its budget (BulkOptions.MaxBytes, 32 MiB by default), then writes it with
// the progress of every batch it holds in one transaction (bulk.go, bulkindex.go). Its
// memory is bounded whatever the store's size, and every posting is written once; a segment
// it writes of 32,768 docs or more is final.
//
// # Searching (search.go, eval.go)
//
// A search reads, in one read transaction, the counters, the segment list, and for every
// segment the lists of the query's words (a prefix's terms merged; the several terms of a
// phrase or path intersected, then checked against the doc's text, which the caller reads
// back from the store: Query.Text). It sums BM25 term at a time into arrays over each
// segment's docs (a few nanoseconds per posting, so every match is ranked, however common
// the words), keeps the best 500 by their own score (more for deep pages), adds the scores
// of each one's neighbouring messages in its session (fts.ContextScore), then confirms the
// candidates that need their text in score order until the page is certain. Function words
// that do not count (fts.Query.Ranked) are never read. Filters are checked per doc from the
// segment's attributes. Each process caches the segments' attributes and packed lists
// (immutable), the live sessions (reloaded when their generation moves) and each session's
// messages in order (for the neighbours). A doc whose session row is gone (deleted, or
// replaced by a new incarnation: session rows are never reused) is dead to every search at
// once, before any merge.
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
// Standard library, modernc.org/sqlite, cespare/xxhash, storage/fts and internal/buildinfo (the
// version an index file records). It knows nothing of sessions' records: callers (the local store,
// through memory's Doc hook) hand it fts.Docs.
package ftsindex
