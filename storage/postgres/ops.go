package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessionmem/sessionmem/storage"
)

// What an operator's readiness check and metrics read (cmd/sessionmem, /readyz and
// /metrics): each is cheap enough to call every few seconds.

var (
	_ storage.IndexLagger  = (*Store)(nil)
	_ storage.Pinger       = (*Store)(nil)
	_ storage.Reindexer    = (*Store)(nil)
	_ storage.IndexStatser = (*Store)(nil)
	_ storage.Sizer        = (*Store)(nil)
)

// Ping implements storage.Pinger: it checks that the database answers, on a connection of the pool, within ctx (and that
// the schema is usable, as every call does first). Errors wrap storage.ErrUnavailable when
// the database cannot be reached.
func (s *Store) Ping(ctx context.Context) error {
	done, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer done()
	if err := s.pool.Ping(ctx); err != nil {
		return s.wrap(ctx, "ping", err)
	}
	return nil
}

// PoolStat returns the connection pool's figures (connections in use and idle, waits for a
// connection and how long they took, connections made and closed).
func (s *Store) PoolStat() *pgxpool.Stat { return s.pool.Stat() }

// IndexLag implements storage.IndexLagger: Queued is what this process's document writer
// holds (records saved here whose search documents are not written yet, about DocsDelay),
// Behind what the last backfill pass (at start, then every BackfillInterval) found without
// documents when it ended. It reads nothing from the database.
func (s *Store) IndexLag() storage.IndexLag {
	var lag storage.IndexLag
	if s.opts.Docs == nil {
		lag.Unavailable = true
		return lag
	}
	s.docs.mu.Lock()
	lag.Queued = int64(s.docs.records)
	s.docs.mu.Unlock()
	p, _ := s.BackfillStatus()
	lag.Behind, lag.BehindSessions = max(p.Total-p.Records, 0), p.Sessions
	return lag
}
