// Package storage defines what sessionmem needs from a session store and the types every
// backend shares: the Store, Reader and Writer interfaces, session headers, listing metadata,
// records, list queries, verify reports (verify.go: problems by kind, each worded by its
// backend) and the sentinel errors.
//
// # Backends
//
// Each backend lives in its own package and asserts at compile time that it implements Store:
//
//	storage/local     the local store: append-only JSONL logs compressed with zstd in a
//	                  directory, shared by the processes of one machine
//	storage/postgres  a PostgreSQL database shared by any number of processes on any
//	                  number of machines
//
// The contract suite in storage/storetest runs unchanged against every backend; a behaviour
// that differs between backends is a bug in one of them.
//
// # The model
//
// A session is a log of records numbered 1, 2, 3… (Record.Seq), plus an immutable Header and
// the listing metadata (Meta) its writer keeps current. A record is one JSON object whose
// meaning belongs to memory; the store only assigns sequence numbers, keeps records durable and
// exactly as written, and reads them back from any sequence number without reading what
// precedes it.
//
// Records are never changed in place by normal use. The one exception is the optional
// Rewriter interface, which re-encodes a session atomically so that redaction rules added later
// reach what older versions stored (memory.Service.RedactStore); a backend without it keeps
// working, and sessionmem then says that it cannot rewrite in place.
//
// Two more optional interfaces: Searcher (search.go), the full-text index both backends keep,
// and Settings, a few store-wide values kept in the store itself where no file beside it can
// hold them (the PostgreSQL store; the local store's callers keep files in its directory).
// IndexLagger (lag.go) says how far a Searcher's index is behind, for operators' metrics.
// Reindexer, IndexStatser and IndexVerifier (reindex.go) rebuild, describe and check it;
// Sizer and Pinger (operate.go) measure a store and check that its server answers. cmd asks
// for each of these by interface, never by a backend's type, and says so when a store lacks
// one. A Reader may be a ReadAheader (store.go): a resume page that ends with a cursor asks it
// to start fetching the next page's records while the client takes in this one.
//
// # Imports
//
// storage imports the standard library, internal/buildinfo (WriterVersion) and gjson
// (AppendRecord reads a record's "type" and "seq" with it, as every backend must). Backends
// import storage; memory imports storage and never a backend (cmd chooses the backend).
package storage
