package local

import (
	"context"
	"errors"
	"iter"
	"runtime"
	"sync"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/ftsindex"
)

// What a pass found missing is read from the session files, a chunk per shared lock, by
// several sessions at once, and indexed in large transactions.

// catchUpBytes bounds the segment a catch-up outside Reindex builds in memory (IndexAll's
// budget; about 18,000 docs of ~2 KB messages): a saving server catches up whenever its queue
// is full, and a rebuild's 32 MiB took a loaded server past 100 MB of RSS.
const catchUpBytes = 4 << 20

// errReadStopped and errRewrittenMeanwhile end a pass that could not index all it found
// missing: the store began closing, or a session was rewritten (redaction) while it was being
// read. Neither is a failure to report; the next pass (in this process or the next one) does
// the work again, and a rebuild stays marked incomplete meanwhile.
var (
	errReadStopped        = errors.New("search: the pass stopped before it read every session (the store is closing)")
	errRewrittenMeanwhile = errors.New("search: a session was rewritten during the pass; the index is replaced and filled again")
)

// feed is one session to index from seq from on.
type feed struct {
	meta storage.Meta
	from uint64
}

// feed indexes the sessions' missing records in large transactions (IndexAll), reading
// each session a chunk at a time under its shared lock, up to GOMAXPROCS sessions at once
// (decompressing and building the docs is most of a rebuild's work); the chunks reach
// the index in todo's order all the same, so docs get the ids one reader would give them.
func (x *searchIdx) feed(ctx context.Context, ix *ftsindex.Index, todo []feed, progress func(sessions, total int, bytes int64)) error {
	fed := make([]known, len(todo))
	var bytes int64
	x.mu.Lock()
	gen := x.gen
	x.mu.Unlock()
	batches := func(yield func(ftsindex.Batch, error) bool) {
		for i, r := range x.readAll(ctx, todo) {
			for b := range r.chunks {
				x.mu.Lock()
				rewritten := x.gen != gen
				x.mu.Unlock()
				// What was read may be text a redaction removed: the reset redoes it all.
				if rewritten {
					yield(ftsindex.Batch{}, errRewrittenMeanwhile)
					return
				}
				if !yield(b, nil) {
					return
				}
			}
			if !r.ok {
				// The read stopped before the session's end (the store is closing, or ctx
				// ended): the pass is incomplete and must say so, or a rebuild would be
				// taken for complete (its marker removed) with sessions missing from it.
				yield(ftsindex.Batch{}, errReadStopped)
				return
			}
			fed[i] = known{created: todo[i].meta.Created, through: r.through}
			bytes += r.bytes
			if progress != nil {
				progress(i+1, len(todo), bytes)
			}
		}
	}
	// A rebuild (progress set) affords IndexAll's large segments; a server's catch-up keeps
	// a small one, like the queue's transactions.
	opts := ftsindex.BulkOptions{MaxBytes: catchUpBytes}
	if progress != nil {
		opts.MaxBytes = 0
	}
	if err := ix.IndexAll(ctx, batches, opts); err != nil {
		return err
	}
	for i, k := range fed {
		if k.through > 0 {
			x.setKnown(todo[i].meta.ID, k.created, k.through)
		}
	}
	return nil
}

// sessionRead is one session being read by readAll: its chunks, then (once chunks is
// closed) the last seq they cover, the bytes of records read and whether it was read to
// the end (false: stopped).
type sessionRead struct {
	chunks  chan ftsindex.Batch
	through uint64
	bytes   int64
	ok      bool
}

// readAll reads the sessions of todo, up to GOMAXPROCS at once, and yields them in todo's
// order (with their index): the caller takes each one's chunks until the channel closes,
// then reads its result. Every reader has stopped when the sequence returns.
func (x *searchIdx) readAll(ctx context.Context, todo []feed) iter.Seq2[int, *sessionRead] {
	return func(yield func(int, *sessionRead) bool) {
		workers := runtime.GOMAXPROCS(0)
		stop := make(chan struct{})
		work := make(chan int)
		order := make(chan *sessionRead, workers)
		reads := make([]*sessionRead, len(todo))
		var wg sync.WaitGroup
		// Readers take sessions in order, so the first one the caller waits for is always
		// being read: a reader blocked on a later session's chunks never holds it up.
		for range workers {
			wg.Go(func() {
				for i := range work {
					r := reads[i]
					r.through, r.ok = x.readSession(ctx, todo[i], &r.bytes, func(b ftsindex.Batch, _ error) bool {
						select {
						case r.chunks <- b:
							return true
						case <-stop:
							return false
						}
					})
					close(r.chunks)
				}
			})
		}
		go func() {
			defer close(order)
			defer close(work)
			for i := range todo {
				reads[i] = &sessionRead{chunks: make(chan ftsindex.Batch)}
				select {
				case order <- reads[i]:
				case <-stop:
					return
				}
				select {
				case work <- i:
				case <-stop:
					close(reads[i].chunks) // never read: the caller stopped
					return
				}
			}
		}()
		defer func() {
			close(stop)
			wg.Wait()
		}()
		i := 0
		for r := range order {
			if !yield(i, r) {
				return
			}
			i++
		}
	}
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
