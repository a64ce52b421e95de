package local

import (
	"github.com/sessionmem/sessionmem/storage"
)

var _ storage.IndexLagger = (*Store)(nil)

// IndexLag implements storage.IndexLagger: Behind is what the syncer's last pass (every
// searchPoll, 400 ms) found missing from the index, Queued what this process's queue holds.
// It reads no file but the rebuild marker's existence. A store without an index (no
// Options.Docs) reports it Unavailable.
func (s *Store) IndexLag() storage.IndexLag {
	x := s.search
	if x == nil {
		return storage.IndexLag{Unavailable: true}
	}
	x.mu.Lock()
	lag := storage.IndexLag{Behind: x.lag.records, BehindSessions: x.lag.sessions, Unavailable: x.ix == nil}
	q := x.q
	x.mu.Unlock()
	if q != nil {
		lag.Queued = int64(q.Pending())
	}
	lag.Rebuilding = !lag.Unavailable && x.rebuilding()
	return lag
}
