package storage

import "context"

// RewriteFunc receives a session's header and every record, oldest first (Data as stored,
// with "seq"), and returns the header to keep, the new Data of each record (without "seq",
// like Append's; nil keeps the record as it is), and the session's metadata afterwards.
type RewriteFunc func(h Header, recs []Record) (Header, [][]byte, Meta, error)

// Rewriter is implemented by stores that can re-encode what they hold in place. sessionmem
// uses it to apply today's redaction to what an older version stored ("sessionmem redact"):
// the point is that nothing of the old bytes survives, so "in place" means that no copy of
// the old records is left behind (no history, no old index line).
//
// It is an optional interface: callers check for it with a type assertion.
type Rewriter interface {
	// Rewrite replaces session id's header and records with what fn returns, atomically (a
	// crash leaves the old session or the new one, never a mix) and under the session's
	// write lock. Records keep their seq, kind and order; only their Data changes. It
	// reports whether anything changed; fn's error is returned as is and changes nothing.
	Rewrite(ctx context.Context, id string, fn RewriteFunc) (bool, error)
	// CompactMeta drops every superseded copy of the listing metadata (for the local store,
	// the older lines of index.jsonl), so that only each session's current metadata is kept.
	CompactMeta(ctx context.Context) error
}
