// Package memory is the session model and the service the tools call.
//
// A session is a tree of entries (messages, compactions, branch summaries, labels, renames,
// model changes) stored as one append-only log per session in package storage. The leaf, the
// current tip, is always the newest entry: saving with a parent_id appends a new branch and
// moves the leaf there. Every entry has a server-assigned id unique in its session; a message
// may also carry the client's own id, which makes saving it again a no-op.
//
// The Service validates every request completely before it writes anything, so a rejected call
// changes nothing. The message itself (model, decoders, encoder) is package message's;
// memory's Message, Block and DecodeInputMessage are its names for them. Everything it writes passes one redaction gate first (gate.go): every string
// of every entry, found by reflection, and a new session's header and metadata; RedactStore
// applies today's gate to what older versions stored (scrub.go). See docs/REDACTION.md. Errors a caller can act on are *Error values wrapping the sentinels
// ErrInvalid, ErrNotFound, ErrStale and ErrUnavailable, with a message saying what to do.
//
// State: the Service caches, per session (64 at most), a state with one small node per entry:
// its parent, kind, token estimate and the running totals along its path (context tokens,
// messages, the conversation's tokens, the newest compaction), as if that entry were the leaf.
// A save therefore costs O(batch) whatever the session's length, and a resume page knows from
// the state which entries form the context and how much of it prune protects, then reads only
// its own records from the store: the cursor carries the next entry's seq. A state is built
// from the log once per process and then kept current by applying only what other processes
// appended since (a session deleted and created again is told apart by its header nonce).
// Where the store keeps snapshots (storage.Snapshots, the local store), a long session's state
// is written as a snapshot once it is idle and on Close (snapshot.go, snapshot_writer.go), so
// a process that starts cold restores it and applies only the newer records.
//
// Search: Docs (docs.go) says what a store's full-text index receives from each record, so
// every backend indexes the same text and files; Search (search.go) asks the store's index
// (storage.Searcher) and cuts snippets from the records read back, or scans the sessions with
// the same query semantics when the store has no index or it is being rebuilt
// (search_scan.go).
//
// Concurrency: a Service is safe for concurrent use, and several processes may share one store.
// Every write runs under the session's cross-process lock (storage.Store.Update) and first
// brings the process's cached view of the session up to date with what other processes wrote;
// reads (storage.Store.View) do the same under the state's own mutex.
//
// Imports: memory uses compaction, fileops, prompts (through compaction), redact-style hooks
// (a function in Options), storage, internal/jsonscan (the strict JSON reader it shares with
// compaction) and internal/buildinfo (to name the version a newer session needs). It never
// imports mcp-go or mcpserver.
package memory
