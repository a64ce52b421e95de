package postgres

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
)

// Search documents are written after the save that stored their records committed, not in
// its transaction: a message's tsvector row and its GIN entries cost a save about a third of
// its time (docs/BENCHMARKS.md), and a save is acknowledged as soon as its records are
// durable. Each Store queues the records it committed and a goroutine writes their documents
// Options.DocsDelay later, many at once, in short transactions with synchronous_commit off
// (a lost one is rebuilt, see below), so one WAL flush and one round trip serve a batch.
//
//   - Read your writes: Search first writes this Store's queued documents (flushDocs), so a
//     search right after a save finds it.
//   - Other servers find a message once the writer ran: DocsDelay (50 ms) plus the write.
//   - A crash (or a write that failed) between the commit and the documents loses nothing for
//     good: the session's docs_through stays behind its last_seq, and the backfill (docs.go)
//     of any server with Docs builds what is missing, at start and every BackfillInterval.
//   - A Rewrite (redaction) or a Delete racing with queued documents: a batch is written only
//     while the session row still exists with the docs_gen the save read, checked under a
//     lock on that row in the batch's own transaction (a Rewrite increments docs_gen under
//     the row lock and rebuilds the documents itself; a Delete removes the row, and a session
//     created again gets a new sid). So old text never returns to the index, and a deleted
//     session's documents are never written back.
//   - Two servers writing one session's documents duplicate nothing (primary key (sid, seq,
//     n), ON CONFLICT DO NOTHING) and docs_through only moves forward over records that
//     have their documents.
//   - Close writes what is queued before it closes the pool.

// DefaultDocsDelay is how long after a save its documents are written (other servers find
// it after that; this one at once).
const DefaultDocsDelay = 50 * time.Millisecond

// maxQueuedRecords bounds the queue: beyond it (the database unreachable for long), the
// oldest batches are dropped and left to the backfill.
const maxQueuedRecords = 20000

// maxDocAttempts: a batch whose write failed this many times is left to the backfill.
const maxDocAttempts = 3

// docBatch is the records of one committed Update whose documents are not written yet.
type docBatch struct {
	sid      int64
	id       string
	gen      int64 // the session's docs_gen when the records were written
	hdr      storage.Header
	recs     []storage.Record
	attempts int
}

func (b docBatch) from() uint64    { return b.recs[0].Seq }
func (b docBatch) through() uint64 { return b.recs[len(b.recs)-1].Seq }

// docQueue is a Store's queue of documents to write.
type docQueue struct {
	mu      sync.Mutex
	pending []docBatch
	records int
	wake    chan struct{} // a batch was queued (buffered 1)
	// writing serialises writes: the writer goroutine's, Search's and Close's. Holding it
	// while taking the pending batches means that once a flush returns, every batch queued
	// before it began was written (or failed).
	writing sync.Mutex
	stop    context.CancelFunc
	done    chan struct{}
	// abandoned (tests): the queue drops everything, as a process killed before its writer
	// ran would.
	abandoned bool
}

func (q *docQueue) enqueue(b docBatch) {
	q.mu.Lock()
	if q.abandoned {
		q.mu.Unlock()
		return
	}
	q.pending = append(q.pending, b)
	q.records += len(b.recs)
	for q.records > maxQueuedRecords && len(q.pending) > 1 {
		q.records -= len(q.pending[0].recs)
		q.pending = q.pending[1:]
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take removes and returns the pending batches.
func (q *docQueue) take() []docBatch {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pending
	q.pending, q.records = nil, 0
	return out
}

// requeue puts back batches whose write failed, in front of what was queued meanwhile.
func (q *docQueue) requeue(bs []docBatch) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.abandoned {
		return
	}
	n := 0
	for _, b := range bs {
		n += len(b.recs)
	}
	if q.records+n > maxQueuedRecords {
		return // left to the backfill
	}
	q.pending = append(bs, q.pending...)
	q.records += n
}

// startDocWriter starts the goroutine that writes queued documents, once.
func (s *Store) startDocWriter() {
	q := &s.docs
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stop != nil || s.opts.Docs == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	q.stop, q.done = cancel, make(chan struct{})
	go func() {
		defer close(q.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-q.wake:
			}
			// Let more saves join the batch.
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.opts.DocsDelay):
			}
			if err := s.flushDocs(ctx); err != nil && ctx.Err() == nil {
				// Failed batches were requeued: try again a little later.
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				select {
				case q.wake <- struct{}{}:
				default:
				}
			}
		}
	}()
}

// stopDocWriter stops the writer goroutine, then writes what is still queued (Close).
func (s *Store) stopDocWriter() {
	q := &s.docs
	q.mu.Lock()
	stop, done := q.stop, q.done
	q.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	// Bounded: with the database unreachable, Close should not wait a statement timeout per
	// session; what is not written is left to the backfill.
	ctx, cancel := context.WithTimeout(context.Background(), closeFlushTimeout)
	defer cancel()
	for {
		err := s.flushDocs(ctx)
		left := s.docs.take()
		if err == nil && len(left) == 0 {
			return
		}
		if ctx.Err() != nil || len(left) == 0 {
			if n := len(left); n > 0 {
				s.log.Warn("storage: closing before the search documents of some saves were written; the backfill of the next process with this store builds them",
					"store", s.label, "batches", n, "err", err)
			}
			return
		}
		// A failed write was requeued: try again within the bound, as the writer would.
		s.docs.requeue(left)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// closeFlushTimeout bounds the writing of the queue at Close.
const closeFlushTimeout = 10 * time.Second

// flushDocs writes the documents of every batch queued so far, one transaction per session
// (sessions in sid order), and returns the first error. Failed batches are queued again up
// to maxDocAttempts; the backfill builds whatever is dropped.
func (s *Store) flushDocs(ctx context.Context) error {
	q := &s.docs
	q.writing.Lock()
	defer q.writing.Unlock()
	batches := q.take()
	if len(batches) == 0 {
		return nil
	}
	var first error
	var failed []docBatch
	for _, g := range groupBatches(batches) {
		if err := s.writeDocs(ctx, g); err != nil {
			if first == nil {
				first = err
			}
			switch {
			case ctx.Err() != nil:
				// Stopped, not failed: Close cancels the writer goroutine, maybe mid-write,
				// and then writes what is queued itself (stopDocWriter). Dropping the batch
				// here left the last sessions a migrate copied unsearchable until a server's
				// backfill ran.
				failed = append(failed, g)
			case g.attempts+1 < maxDocAttempts:
				g.attempts++
				failed = append(failed, g)
			default:
				s.log.Warn("storage: writing search documents failed; the backfill will build them",
					"store", s.label, "session", g.id, "err", err)
			}
		}
	}
	if len(failed) > 0 {
		q.requeue(failed)
	}
	return first
}

// groupBatches sorts batches by session (sid, so two servers' writers lock rows in the same
// order) and then seq, and merges consecutive batches of one session and generation.
func groupBatches(bs []docBatch) []docBatch {
	slices.SortStableFunc(bs, func(a, b docBatch) int {
		if a.sid != b.sid {
			return cmp.Compare(a.sid, b.sid)
		}
		return cmp.Compare(a.from(), b.from())
	})
	var out []docBatch
	for _, b := range bs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.sid == b.sid && last.gen == b.gen && last.through()+1 == b.from() {
				last.recs = append(slices.Clip(last.recs), b.recs...)
				last.hdr = b.hdr
				last.attempts = max(last.attempts, b.attempts)
				continue
			}
		}
		out = append(out, b)
	}
	return out
}

// lockedInsertDocs is insertDocs, inserting only while the session row exists with the
// generation the records were read at ($10), and locking that row (FOR KEY SHARE, as the
// foreign key would; a Rewrite's or Delete's lock conflicts with it) until the transaction
// ends.
const lockedInsertDocs = `WITH s AS (SELECT sid FROM sessionmem_sessions WHERE sid = $1 AND docs_gen = $10 FOR KEY SHARE)
	INSERT INTO sessionmem_documents (sid, seq, n, entry_id, kind, role, time_ns, files, terms, len)
	SELECT s.sid, u.seq, u.n, u.entry_id, u.kind, u.role, u.time_ns, u.files::text[], u.terms::tsvector, u.len
	FROM s, unnest($2::bigint[], $3::smallint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $11::int[])
		AS u(seq, n, entry_id, kind, role, time_ns, files, terms, len)
	ON CONFLICT DO NOTHING`

// advanceDocs moves docs_through over records from..through ($3..$4) once they have their
// documents, if every record before them has too (docs_through >= from-1); otherwise the
// backfill moves it later.
const advanceDocs = `UPDATE sessionmem_sessions SET docs_through = $4
	WHERE sid = $1 AND docs_gen = $2 AND docs_through >= $3 - 1 AND docs_through < $4`

// writeDocs writes the documents of one session's batch in one round trip: a transaction
// with synchronous_commit off (a commit lost in a crash leaves docs_through behind, and the
// backfill rebuilds what it held), the guarded insert, and docs_through.
func (s *Store) writeDocs(ctx context.Context, b docBatch) error {
	var c docColumns
	for _, rec := range b.recs {
		c.add(s.opts.Docs, b.hdr, rec, s.opts.MaxTextBytes)
	}
	conn, err := s.acquire(ctx)
	if err != nil {
		return s.wrap(ctx, "write search documents of session "+b.id, err)
	}
	defer conn.Release()
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	batch := &pgx.Batch{}
	batch.Queue("BEGIN")
	batch.Queue("SET LOCAL synchronous_commit = off")
	if c.count > 0 {
		batch.Queue(lockedInsertDocs, b.sid, c.seq, c.n, c.entry, c.kind, c.role, c.time, c.files, c.terms, b.gen, c.length)
	}
	batch.Queue(advanceDocs, b.sid, b.gen, int64(b.from()), int64(b.through()))
	batch.Queue("COMMIT")
	// Close reads every result and returns the first error.
	if err = conn.SendBatch(sctx, batch).Close(); err != nil {
		// A connection left inside a failed transaction is closed on release.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), s.stmt)
		_, _ = conn.Exec(rctx, "ROLLBACK")
		rcancel()
		return s.wrap(ctx, "write search documents of session "+b.id, err)
	}
	return nil
}

// abandonDocs (tests) drops the queued documents and every later one, as a process killed
// between its saves' commits and their documents would.
func (s *Store) abandonDocs() {
	q := &s.docs
	q.mu.Lock()
	q.abandoned = true
	q.pending, q.records = nil, 0
	q.mu.Unlock()
}
