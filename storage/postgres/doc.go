// Package postgres is a storage.Store on PostgreSQL: one store that any number of sessionmem
// servers on any number of machines share. What a call wrote is visible to every server as
// soon as it returned.
//
// # Tables
//
// The program creates and migrates its tables itself, from the versioned SQL embedded in
// schema/ (schema/001_init.sql documents every column). sessionmem_schema holds the version
// (and written_by, the sessionmem version that migrated to it: schema.go, recordWriter);
// a database at a newer version than this build knows is refused with storage.ErrNewerFormat.
//
//	sessionmem_sessions  one row per session: header, listing metadata, last_seq, and which
//	                     records sit in which level of chunk; indexes (dir_key, updated_ns,
//	                     id) and (updated_ns, id) serve List's filters and keyset paging
//	sessionmem_chunks    the records: (sid, first_seq, last_seq, raw_bytes, level, data), data
//	                     one zstd frame of the records' JSONL lines; primary key
//	                     (sid, first_seq), so Records(from) seeks to the chunk holding from
//	sessionmem_keys      (sid, key_hash): Record.Key, unique within a session
//	sessionmem_documents (schema 2) the search documents: one row per message or summary,
//	                     (sid, seq, n), entry id, kind, role, time, files (text[]) and the
//	                     text's terms (tsvector); GIN indexes on terms and files
//	sessionmem_settings  (schema 2) store-wide key/value settings (storage.Settings)
//	sessionmem_doc_stats (schema 4) the documents' count and total length, in 16 rows
//	                     that writers on different connections update (BM25's N and
//	                     average length)
//
// Schema 3 adds docs_gen to sessionmem_sessions (see Search). Schema 4 adds what BM25 needs:
// len (the document's number of terms) to sessionmem_documents, and sessionmem_doc_stats
// (document count and total length, kept by triggers on the documents table).
//
// # Writes
//
// Update is one transaction on one pooled connection, in two round trips: BEGIN with SELECT
// ... FOR NO KEY UPDATE on the session row (every writer on every server queues there, and
// sequence numbers are assigned under that lock), then, after fn, the statements its Appends
// queued (the new chunk, the keys, the session row) with COMMIT. Nothing of an Update that
// failed is stored.
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
// Times are Unix nanoseconds (bigint), so what was stored comes back Equal. PostgreSQL's text
// cannot hold U+0000, which JSON (so a message) may: the records are bytea and keep it; the
// listing's text columns (name, model, provider, preview) hold U+FFFD in its place (pgText). The list text
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
// # Search
//
// With Options.Docs (memory.Docs), the records of every committed Update are turned into
// documents and inserted right after the commit, not in the save's transaction
// (docqueue.go): each Store queues them and writes them Options.DocsDelay (50 ms) later, a
// batch per session in one round trip, which keeps them off the save's path (they were a
// third of a save's time). A Search on the Store that saved writes its queue first, so it
// finds the save at once; other servers find it once the batch is written (about 60 ms); a
// save that failed leaves no document; a process killed in between leaves the session's
// docs_through behind its last_seq, and the backfill (below) builds what is missing. A
// redaction or a deletion racing with a queued batch never lets it write the old text back:
// the batch is written under a lock on the session row only if its docs_gen, which every
// Rewrite increments, is unchanged. A document keeps no text: its
// terms column is a tsvector built in Go from fts.TSVector (sessionmem's own tokenizer, not
// to_tsvector's parser, which would split max_tokens into max and tokens), and snippets are cut
// by memory from the record, read back by seq (Records(from) seeks the chunk holding it). The
// session's name and working directory are joined from sessionmem_sessions at search time, so
// a rename reaches every hit at once. Deleting a session deletes its documents (ON DELETE
// CASCADE, the same statement).
//
// Search (contract v3) matches with fts.Query.TSQuery against the GIN index (to_tsquery
// syntax built by fts, which TestPostgresOracle checks against Query.Matches on a real
// server): an entry matches when it holds one of the query's ranked words, every required
// one and no excluded one. Matches are ranked by BM25 with storage/fts's parameters (K1, B,
// IDF, TermScore) and context (fts.ContextScore: the own scores of the messages right before
// and after it in its session), then newer first, then later written; TestSearchOracle checks
// the order and the scores against a brute-force computation in Go over the same texts.
//
//   - Statistics (search_stats.go): N and the average document length from
//     sessionmem_doc_stats (schema 4), which triggers keep exact in the documents' own
//     transactions; each document's length in terms in its len column; a term's df counted
//     through the GIN index (up to 5,000), or, for a lexeme that PostgreSQL's statistics
//     (ANALYZE's most_common_elems) put in 1,000 documents or more, estimated from them, and
//     remembered per process for Options.StatsMaxAge (a minute).
//   - Scoring (search_score.go): a candidate's row gives only the part of its tsvector that
//     holds the query's words (ts_filter of setweight), read as text and scored in Go, with
//     frequencies from positions; a prefix's and a phrase's (or path's) frequency is
//     ts_rank_cd's count with unit weights (every position of every lexeme a prefix covers;
//     every occurrence of a phrase, as fts.Term.Count counts them, except that a phrase
//     ending in a prefix counts overlapping occurrences; the few phrases whose occurrences
//     can overlap are counted from positions).
//   - Top k (search_rank.go): MaxScore over the GIN index, rarest words first, stopping as
//     soon as the words left cannot bring a document into the page; latency follows the
//     documents that must be scored, not the matches. A page scores at most
//     Options.ScoreBudget (20,000) documents: below that the ranking is exact; past it the
//     words in the most documents are left out, or, when even the rarest word passes it, only
//     the newest 20,000 matches are ranked, and the result says Windowed.
//   - Context (search_context.go): computed for the best max(200, 10·limit) documents by own
//     score, which are ranked by score with context; the rest follow by own score.
//
// It differs from the local index in these ways:
//
//   - The statistics are exact for N and lengths; df of common words are estimates.
//     Documents written before schema 4 rank as of average length until the background fill
//     (docslen.go) has read their length off their tsvector.
//   - Phrases are not found past term position 16,383 of a document (PostgreSQL's position
//     limit; single words still are), a term keeps at most 256 positions (so frequencies
//     stop there), and a document whose distinct terms would exceed a tsvector's 1 MB is
//     indexed from its beginning only (the local index has no such limit; both index at most
//     the first MaxTextBytes, 1 MiB, of a document's text).
//   - Paging is keyset within a snapshot, not an offset: the cursor holds the snapshot, the
//     statistics of the first page (so a document scores the same on every page whatever is
//     saved meanwhile) and the last hit's (score, time, document); a later page never repeats
//     a hit of an earlier one even if documents were deleted meanwhile.
//   - A cursor stays valid across processes and restarts (the local index's is tied to its
//     index file).
//
// Records stored without documents (before schema 2, by a handle without Docs, or by a
// process that died before it wrote them) are found once the backfill built theirs: a background job of every store with Docs (at start, then
// every Options.BackfillInterval) or Reindex. It reads backfillBatch records of a session
// without a lock, builds their documents, and inserts them in a short transaction under the
// session's row lock, moving the session's docs_through, so it is resumable, several servers
// may run it at once, and saves wait at most for one insert. Progress reports how far it is.
// The same job, and Reindex, fill the length of documents written before schema 4
// (docslen.go).
//
// # Rewriting
//
// Rewrite (storage.Rewriter, used by "sessionmem redact") re-encodes a session's changed
// chunks, its header fields, metadata and every document in one transaction under the row
// lock. PostgreSQL's MVCC does not overwrite rows: the old chunk, document and session row
// versions stay in the table files as dead tuples until VACUUM (autovacuum, soon for the
// chunks table, whose thresholds the schema lowers) marks their space free, and their bytes
// stay on disk until new rows reuse that space. To make sure nothing of the old text is left
// in the data files, run VACUUM FULL sessionmem_chunks, sessionmem_documents,
// sessionmem_sessions after a redaction (it rewrites the tables, taking an exclusive lock for
// the duration); WAL segments, archives, replicas' files and backups keep old bytes as long as
// they are kept. CompactMeta has nothing to do: there is no older copy of the metadata that a
// statement could drop.
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
