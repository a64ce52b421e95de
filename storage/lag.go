package storage

// IndexLag is how far a store's full-text index is behind its records, as far as the store
// knows without reading anything: cheap enough for every metrics scrape.
type IndexLag struct {
	// Queued is how many records this process stored whose index entries it has not
	// written yet (it writes them within about 100 ms).
	Queued int64
	// Behind is how many records the index lacked at the store's last look, whichever
	// process stored them, and BehindSessions in how many sessions. How recent that look is
	// depends on the backend (the local store: every 400 ms; PostgreSQL: every backfill pass).
	Behind, BehindSessions int64
	// Rebuilding is true while the index is being rebuilt (searches scan the sessions
	// meanwhile, which is slower), Unavailable when it cannot be opened at all.
	Rebuilding, Unavailable bool
}

// IndexLagger is a Searcher that can tell how far its index is behind. It is an optional
// interface: callers check for it with a type assertion.
type IndexLagger interface {
	IndexLag() IndexLag
}
