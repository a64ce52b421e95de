package memory

import (
	"context"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/storage"
)

// entryKey is the idempotency key memory stores with an entry (storage.Record.Key): the
// client's message id, or an imported compaction's key. memory de-duplicates both itself,
// under the session's write lock; a backend that enforces keys (PostgreSQL) turns a repeat
// that slipped past that into a failed, rolled-back save instead of a duplicate.
func entryKey(e Entry) string {
	switch {
	case e.Type == KindMessage && e.Message != nil:
		return e.Message.ID
	case e.Type == KindCompaction && e.Compaction != nil:
		return e.Compaction.Key
	}
	return ""
}

// RecordKey is entryKey for a stored record, and RecordBarrier whether memory started a new
// chunk at it (compactions do): copying a session to another store (sessionmem migrate)
// stores each record with the key and barrier memory would have given it.
func RecordKey(rec storage.Record) string {
	switch rec.Kind {
	case KindMessage:
		return gjson.GetBytes(rec.Data, "message.id").String()
	case KindCompaction:
		return gjson.GetBytes(rec.Data, "compaction.key").String()
	}
	return ""
}

// RecordBarrier reports whether memory starts a new compressed chunk at rec.
func RecordBarrier(rec storage.Record) bool { return rec.Kind == KindCompaction }

// update is store.Update that forgets the session's cached state when the update fails:
// the state may hold entries a rolled-back transaction (or a COMMIT whose connection broke)
// did not store, with as many records as another writer's did.
func (s *Service) update(ctx context.Context, id string, fn func(w storage.Writer) error) error {
	err := s.store.Update(ctx, id, fn)
	if err != nil {
		s.forget(id)
	}
	return err
}
