package storage

import "context"

// Snapshots is implemented by stores that keep, beside each session, a disposable snapshot of
// what a process derived from the session's log (memory's per-session state: the entry tree
// and its running totals, no message content). A process that starts cold then reads the
// snapshot and only the records after it, instead of the whole log, so the first call on a
// long session costs about as much as on a short one.
//
// A snapshot is a cache, never the truth: a missing, damaged or outdated one costs a read of
// the log and nothing else. It holds strings the log holds (entry ids, names, a preview), so
// the store removes it whenever it deletes or rewrites the session (Rewriter), and it never
// stores a snapshot for an older generation of a session than the one on disk.
//
// It is an optional interface: callers check for it with a type assertion.
type Snapshots interface {
	// Generation identifies the content r reads: it stays the same while records are
	// appended (or sealed) and changes when the session is rewritten, or deleted and created
	// again. It is cheap (no I/O).
	Generation(r Reader) string
	// LoadSnapshot returns the snapshot stored for r's session and generation, or nil when
	// there is none, it is damaged, or it was taken of another generation.
	LoadSnapshot(r Reader) []byte
	// SaveSnapshot stores data as the snapshot of session id, provided the session on disk
	// is still of generation gen (otherwise it does nothing and returns nil). Atomic: a
	// reader finds the old snapshot or the new one, never a part.
	SaveSnapshot(ctx context.Context, id, gen string, data []byte) error
}
