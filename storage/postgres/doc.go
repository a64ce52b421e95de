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
//	sessionmem_sessions  one row per session: header, listing metadata, last_seq, and where
//	                     the sealed records end; indexes (dir_key, updated_ns, id) and
//	                     (updated_ns, id) serve List's filters and keyset paging
//	sessionmem_chunks    the records: (sid, first_seq, last_seq, raw_bytes, sealed, data), data
//	                     one zstd frame of the records' JSONL lines; primary key
//	                     (sid, first_seq), so Records(from) seeks to the chunk holding from
//	sessionmem_keys      (sid, key): Record.Key, unique within a session
//
// # Writes
//
// Update is one transaction: BEGIN; SELECT ... FOR UPDATE on the session row (every writer on
// every server queues there, and sequence numbers are assigned under that lock); fn, whose
// Appends each send one batch (the new chunk, the keys, the session row); COMMIT. Nothing of
// an Update that failed is stored. An Append adds one unsealed chunk; when the unsealed
// records reach Options.SealRecords or SealBytes (512 records or 512 KiB) they are replaced
// by sealed chunks of that size, which compress several times better than one batch alone.
// A Barrier record seals what is unsealed first, so it starts a chunk.
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
