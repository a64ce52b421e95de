// Package postgres is a storage.Store on PostgreSQL: one store that any number of sessionmem
// servers on any number of machines share. What a call wrote is visible to every server as
// soon as it returned.
//
// # Tables
//
// The program creates and migrates its tables itself, from the versioned SQL embedded in
// schema/ (schema/001_init.sql documents every column). sessionmem_schema holds the version;
// a database at a newer version than this build knows is refused with storage.ErrNewerFormat.
//
//	sessionmem_sessions  one row per session: header, listing metadata, last_seq, and which
//	                     records sit in which level of chunk; indexes (dir_key, updated_ns,
//	                     id) and (updated_ns, id) serve List's filters and keyset paging
//	sessionmem_chunks    the records: (sid, first_seq, last_seq, raw_bytes, level, data), data
//	                     one zstd frame of the records' JSONL lines; primary key
//	                     (sid, first_seq), so Records(from) seeks to the chunk holding from
//	sessionmem_keys      (sid, key_hash): Record.Key, unique within a session
//
// # Writes
//
// Update is one transaction on one pooled connection, in two round trips: BEGIN with SELECT
// ... FOR UPDATE on the session row (every writer on every server queues there, and sequence
// numbers are assigned under that lock), then, after fn, the statements its Appends queued
// (the new chunk, the keys, the session row) with COMMIT. Nothing of an Update that failed is
// stored.
//
// Chunks come in three levels (append.go). An Append adds a level-0 chunk holding its batch;
// when the level-0 chunks reach Options.TailRecords or TailBytes (32 records or 32 KiB) they
// are merged into one level-1 chunk; every MergeChunks (4) level-1 chunks are merged into the
// session's open level-2 chunk, which grows up to ChunkRecords or ChunkBytes (1,024 records
// or 1 MiB) and is compressed at zstd's better level. A single message compresses about 2x,
// a level-2 chunk 6-7x on the corpus, so almost everything ends up several times smaller,
// while a save writes only its own small chunk and, now and then, one merge. Merges delete
// the rows they replace: autovacuum reclaims them (the schema lowers its thresholds for the
// chunks table). A Barrier record merges what is below level 2 and closes the open level-2
// chunk first, so it starts a chunk. A batch as large as a merge goes to level 2 at once.
//
// Times are Unix nanoseconds (bigint), so what was stored comes back Equal. The list text
// filter compares columns lower-cased by Go's strings.ToLower with the lower-cased query, so
// it matches exactly what storage.MatchText matches, whatever the database's locale.
//
// # Reads
//
// View reads the session row, then records page by page (pageRows chunks per statement) as
// its callback iterates, bounded by the last_seq it read first: no connection is held while
// the callback works, and a seal running meanwhile replaces chunks by chunks holding the same
// records, so consecutive pages still fit together.
//
// # Faults
//
// Every statement has a server-side statement_timeout (15 s unless the URL sets one) and a
// client-side deadline a few seconds longer; connection attempts time out after 5 s;
// pooled connections idle for a second are pinged before use. Connection failures, timeouts,
// a server shutting down or starting up, and refused credentials are returned as errors
// wrapping storage.ErrUnavailable, within seconds; the pool reconnects by itself on a later
// call. A COMMIT whose connection broke may or may not have been applied: the caller gets
// ErrUnavailable and retries, and memory's idempotent client ids make the retry harmless.
// No error text contains the URL's password.
//
// # Imports
//
// postgres imports storage, pgx and klauspost/compress; nothing imports it but cmd and tests.
package postgres
