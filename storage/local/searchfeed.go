package local

import (
	"context"
	"errors"
	"iter"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/ftsindex"
)

// What a pass found missing is read from the session files, a chunk per shared lock, and
// indexed in large transactions.

// feed is one session to index from seq from on.
type feed struct {
	meta storage.Meta
	from uint64
}

// feed indexes the sessions' missing records in large transactions (IndexAll), reading
// each session a chunk at a time under its shared lock.
func (x *searchIdx) feed(ctx context.Context, ix *ftsindex.Index, todo []feed, progress func(sessions, total int, bytes int64)) error {
	var fed []known
	var bytes int64
	x.mu.Lock()
	gen := x.gen
	x.mu.Unlock()
	batches := func(yield func(ftsindex.Batch, error) bool) {
		guard := func(b ftsindex.Batch, err error) bool {
			x.mu.Lock()
			rewritten := x.gen != gen
			x.mu.Unlock()
			// What was read may be text a redaction removed: the reset redoes it all.
			return !rewritten && yield(b, err)
		}
		for i, f := range todo {
			through, ok := x.readSession(ctx, f, &bytes, guard)
			if !ok {
				return
			}
			fed = append(fed, known{created: f.meta.Created, through: through})
			if progress != nil {
				progress(i+1, len(todo), bytes)
			}
		}
	}
	if err := ix.IndexAll(ctx, prefetch(iter.Seq2[ftsindex.Batch, error](batches), 4), nil); err != nil {
		return err
	}
	for i, k := range fed {
		if k.through > 0 {
			x.setKnown(todo[i].meta.ID, k.created, k.through)
		}
	}
	return nil
}

// readSession yields f's records from f.from on as batches of at most a chunk each, and
// returns the last seq covered (0 when the session was gone or unreadable: skipped). ok is
// false when yield asked to stop.
func (x *searchIdx) readSession(ctx context.Context, f feed, bytes *int64, yield func(ftsindex.Batch, error) bool) (uint64, bool) {
	from, through := f.from, uint64(0)
	for {
		var b ftsindex.Batch
		var last uint64
		err := x.s.viewUncached(ctx, f.meta.ID, func(r *Reader) error {
			h := r.Header()
			last = r.LastSeq()
			if from > last {
				return nil
			}
			b = ftsindex.Batch{Session: ftsindex.Session{ID: h.ID, Created: h.Created, WorkingDir: h.WorkingDir, Name: f.meta.Name}, From: from}
			size := 0
			for rec, err := range r.Records(from) {
				if err != nil {
					return err
				}
				b.Docs = append(b.Docs, x.docs(h, rec)...)
				b.Through = rec.Seq
				size += len(rec.Data)
				if b.Through-from+1 >= chunkRecords || size >= chunkBytes {
					break
				}
			}
			*bytes += int64(size)
			return nil
		})
		switch {
		case err != nil && (ctx.Err() != nil || errors.Is(err, storage.ErrClosed)):
			return through, false
		case err != nil:
			if !errors.Is(err, storage.ErrNotFound) {
				x.s.log.Warn("search: cannot index session; skipping it", "session", f.meta.ID, "err", err)
				return f.meta.LastSeq, true // not retried every poll; a rebuild tries again
			}
			return 0, true
		case b.Through == 0:
			return through, true
		}
		if !yield(b, nil) {
			return through, false
		}
		through, from = b.Through, b.Through+1
		if through >= last {
			return through, true
		}
	}
}

// viewUncached is View for a read that decodes each frame once (the catch-up): its frames
// stay out of the store's frame cache.
func (s *Store) viewUncached(ctx context.Context, id string, fn func(r *Reader) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return s.view(ctx, id, func(r *Reader) error {
		r.uncached = true
		return fn(r)
	})
}
