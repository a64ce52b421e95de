package ftsindex

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Queue indexes batches in the background, a few at a time: each transaction writes a new
// segment (a row per distinct term) and commits, so batching the saves of 100 ms costs far
// less than a transaction per save. Add never waits for SQLite. After each flush, merges
// that became due run on another goroutine (Index.Merge), so the next flush never waits
// for one.
//
// A Queue is not a durable log: batches added but not indexed when the process dies are
// found missing by the next catch-up (Progress), and a failed flush is reported to OnError
// and dropped for the same reason.
type Queue struct {
	ix   *Index
	opts QueueOptions

	mu      sync.Mutex
	pending []Batch
	docs    int
	bytes   int           // what pending holds (Batch.Size)
	wake    chan struct{} // buffered 1: something was added
	flushed *sync.Cond    // signalled after each flush; guarded by mu
	gen     uint64        // batches added so far (counter)
	done    uint64        // batches indexed (or dropped) so far
	want    uint64        // a Flush waits for gen to reach this: do not wait for company
	closed  bool
	stopped chan struct{}
}

// QueueOptions configure a Queue.
type QueueOptions struct {
	// Delay is how long a batch may wait for others to share its transaction (default
	// 100 ms; the contract wants a save found within 1 s).
	Delay time.Duration
	// MaxDocs flushes at once when this many docs are waiting (default 1,024).
	MaxDocs int
	// OnError is told about a failed flush (default: ignored); the batches are dropped and
	// the next catch-up indexes them.
	OnError func(error)
	// OnIndexed, when set, receives each flush's progress results (a session whose
	// Through stayed below its batch's needs catching up).
	OnIndexed func([]Progress)
	// MaxPendingBytes bounds what waits for indexing (Batch.Size; default 16 MiB): while
	// more waits, Add refuses batches with ErrQueueFull, so a process saving faster than it
	// indexes keeps a bounded amount of memory, and the caller's catch-up indexes the
	// refused ranges from the session files later.
	MaxPendingBytes int
}

// ErrQueueFull is Add's answer when MaxPendingBytes wait already.
var ErrQueueFull = errors.New("search index queue is full")

// NewQueue starts a background indexer for ix. Close it before closing ix.
func (ix *Index) NewQueue(opts QueueOptions) *Queue {
	if opts.Delay <= 0 {
		opts.Delay = 100 * time.Millisecond
	}
	if opts.MaxDocs <= 0 {
		opts.MaxDocs = 1024
	}
	if opts.MaxPendingBytes <= 0 {
		opts.MaxPendingBytes = 16 << 20
	}
	q := &Queue{ix: ix, opts: opts, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	q.flushed = sync.NewCond(&q.mu)
	go q.run()
	return q
}

// Add queues batches; it returns at once. Batches are checked when indexed, not here. With
// MaxPendingBytes waiting already it queues none of them and returns ErrQueueFull.
func (q *Queue) Add(batches ...Batch) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if q.bytes >= q.opts.MaxPendingBytes {
		q.mu.Unlock()
		return ErrQueueFull
	}
	wasEmpty := len(q.pending) == 0
	for _, b := range batches {
		size := b.Size
		if size == 0 {
			for _, d := range b.Docs {
				size += len(d.Text)
			}
		}
		q.bytes += size
		q.pending = append(q.pending, b)
		if b.Build != nil {
			q.docs += int(b.Through - b.From + 1) // at most one doc per record, usually
		} else {
			q.docs += len(b.Docs)
		}
	}
	q.gen += uint64(len(batches))
	// Wake the indexer only when it has something new to time (the first batch since the
	// last flush) or must not wait (MaxDocs): waking a goroutine costs about ten times the
	// rest of Add. Under the lock: Close closes wake under it, and a send on a closed
	// channel panics.
	if wasEmpty || q.docs >= q.opts.MaxDocs {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	q.mu.Unlock()
	return nil
}

// Flush waits until every batch added before the call is indexed (or dropped after an
// error), or ctx ends (ctx.Err(), also when it had ended before the call).
func (q *Queue) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	target := q.gen
	if q.done < target && !q.closed {
		q.want = max(q.want, target)
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	q.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.flushed.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.done < target {
		if err := ctx.Err(); err != nil {
			return err
		}
		if q.closed && q.pending == nil && q.done < target {
			return ErrClosed
		}
		q.flushed.Wait()
	}
	return nil
}

// Close indexes what is queued and stops the background goroutine.
func (q *Queue) Close(ctx context.Context) error {
	err := q.Flush(ctx)
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.wake)
	}
	q.mu.Unlock()
	select {
	case <-q.stopped:
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	}
	return err
}

func (q *Queue) run() {
	defer close(q.stopped)
	for {
		_, ok := <-q.wake
		// Wait for company unless enough is waiting already.
		deadline := time.NewTimer(q.opts.Delay)
	wait:
		for ok {
			q.mu.Lock()
			full := q.docs >= q.opts.MaxDocs || q.want > q.done
			q.mu.Unlock()
			if full {
				break
			}
			select {
			case <-deadline.C:
				break wait
			case _, ok = <-q.wake:
			}
		}
		deadline.Stop()
		q.flush()
		if !ok {
			q.flush() // anything added between the last flush and Close
			return
		}
	}
}

// flush indexes everything pending in one transaction.
func (q *Queue) flush() {
	q.mu.Lock()
	batches, n := q.pending, uint64(len(q.pending))
	q.pending, q.docs, q.bytes = nil, 0, 0
	q.mu.Unlock()
	if len(batches) > 0 {
		for i := range batches {
			if b := &batches[i]; b.Build != nil {
				b.Docs, b.Build = b.Build(), nil
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		p, err := q.ix.Index(ctx, batches...)
		cancel()
		if err != nil && q.opts.OnError != nil {
			q.opts.OnError(err)
		}
		if err == nil && q.opts.OnIndexed != nil {
			q.opts.OnIndexed(p)
		}
	}
	q.mu.Lock()
	q.done += n
	q.flushed.Broadcast()
	q.mu.Unlock()
	if len(batches) > 0 {
		q.ix.mergeInBackground()
	}
}
