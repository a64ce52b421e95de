package storage

import "context"

// What an operator reads of a store besides its sessions: its size ("sessionmem stats",
// "sessionmem verify") and whether its server answers (a readiness check).

// Sizer is a Store that can measure how much storage it takes. It is an optional interface:
// callers check for it with a type assertion.
type Sizer interface {
	// Size measures the store now. It reads sizes, not records: cheap next to reading the
	// sessions, but not free on a large store.
	Size(ctx context.Context) (Size, error)
}

// Size is how much storage a store takes, in bytes, as its backend counts it (the local
// store: the files of its directory; PostgreSQL: its tables with their TOAST and indexes).
type Size struct {
	// Total is everything the store takes.
	Total int64
	// Sessions is the part of Total holding the sessions' records (the local store: its
	// sessions directory; PostgreSQL: the table of records).
	Sessions int64
	// Index is the part of Total holding the full-text index.
	Index int64
}

// Pinger is a Store whose data lives in a server that can stop answering while the process
// runs (a database). It is an optional interface: callers check for it with a type assertion,
// and check a store without it otherwise (cmd/sessionmem: that its directory is writable).
type Pinger interface {
	// Ping checks that the server answers within ctx. Errors wrap ErrUnavailable when it
	// cannot be reached.
	Ping(ctx context.Context) error
}
