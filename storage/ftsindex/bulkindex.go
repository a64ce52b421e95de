package ftsindex

import (
	"context"
	"errors"
	"iter"
	"runtime"
	"sync"
)

// Groups of IndexAll: what one tokenizing job holds. Small enough that a few in flight per
// worker stay a few megabytes, large enough that handing them over costs nothing.
const (
	groupDocs = 256
	groupText = 1 << 20
)

// BulkOptions configure IndexAll.
type BulkOptions struct {
	// Progress, when set, is called after each segment with the docs indexed so far.
	Progress func(docs int)
	// MaxBytes bounds what the segment being built holds in memory (default 32 MiB; about
	// 144,000 docs of ~2 KB messages): a rebuild affords it, a server catching up with what
	// its queue refused keeps less.
	MaxBytes int
}

// IndexAll indexes a stream of batches, the way to (re)build an index or catch up with
// much: the caller's iterator (reading the store, building Docs) runs in this goroutine,
// GOMAXPROCS workers tokenize what it yields, and one goroutine adds the tokens to a segment
// in memory (bulk.go) and writes it, with the progress of every batch it holds, in one
// transaction once it holds 262,144 docs or opts.MaxBytes, or the stream ends. Docs get their
// ids in the stream's order, as Index calls one batch after the other would give them. It
// stops at the first error of the iterator, of a batch (ErrInvalid) or of a write; the
// segments written before it stay, and so does the progress they carry. The batches are
// IndexAll's: it clears their docs' Text and Files once they are tokenized.
func (ix *Index) IndexAll(ctx context.Context, batches iter.Seq2[Batch, error], opts BulkOptions) error {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = bulkBudget
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *tokGroup, workers)
	order := make(chan *tokGroup, workers) // the builder takes groups in the stream's order
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			tk := newTokenizer(ix.opts.MaxTextBytes)
			for g := range jobs {
				if inner.Err() == nil {
					tk.group(g)
				}
				close(g.done)
			}
		})
	}
	// Groups go back to feedGroups once the builder is done with them: their term buffers are
	// most of what a rebuild allocates, and reusing them keeps the collector's work down.
	free := make(chan *tokGroup, 3*workers+2)
	result := make(chan error, 1)
	go func() {
		err := ix.buildAll(inner, order, free, opts)
		if err != nil {
			cancel()
		}
		result <- err
	}()
	iterErr := feedGroups(inner, batches, free, func(g *tokGroup) bool {
		g.done = make(chan struct{})
		select {
		case order <- g:
		case <-inner.Done():
			return false
		}
		jobs <- g // workers take every job, cancelled or not
		return true
	})
	close(order)
	close(jobs)
	err := <-result
	wg.Wait()
	if err := errors.Join(iterErr, err); err != nil {
		return err
	}
	return ctx.Err()
}

// feedGroups cuts the stream into groups and sends them, until the stream ends, fails, or
// send refuses (the build stopped). It returns the stream's error, or ErrInvalid for a
// malformed batch.
func feedGroups(ctx context.Context, batches iter.Seq2[Batch, error], free <-chan *tokGroup, send func(*tokGroup) bool) error {
	next := func() *tokGroup {
		select {
		case g := <-free:
			g.batches, g.docs, g.ents, g.arena = g.batches[:0], g.docs[:0], g.ents[:0], g.arena[:0]
			return g
		default:
			return &tokGroup{}
		}
	}
	g := next()
	docs, text := 0, 0
	for b, err := range batches {
		if err == nil {
			err = b.check()
		}
		if err != nil {
			if len(g.batches) > 0 {
				send(g)
			}
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		g.batches = append(g.batches, b)
		docs += len(b.Docs)
		for _, d := range b.Docs {
			text += len(d.Text)
		}
		if docs >= groupDocs || text >= groupText {
			if !send(g) {
				return nil
			}
			g, docs, text = next(), 0, 0
		}
	}
	if len(g.batches) > 0 && ctx.Err() == nil {
		send(g)
	}
	return nil
}

// buildAll adds the tokenized groups, in order, to segments and writes each when full and
// the last at the end.
func (ix *Index) buildAll(ctx context.Context, order <-chan *tokGroup, free chan<- *tokGroup, opts BulkOptions) error {
	bs := newBulkSeg(opts.MaxBytes)
	done, pending := 0, 0
	flush := func() error {
		if len(bs.batches) == 0 {
			return nil
		}
		db, release, err := ix.acquire(ctx)
		if err != nil {
			return err
		}
		_, err = bs.write(ctx, db)
		release()
		if err != nil {
			return err
		}
		bs = newBulkSeg(opts.MaxBytes)
		done, pending = done+pending, 0
		if opts.Progress != nil {
			opts.Progress(done)
		}
		return nil
	}
	for g := range order {
		<-g.done
		if err := ctx.Err(); err != nil {
			return err
		}
		k := 0
		for _, b := range g.batches {
			k = bs.addBatch(g, b, k)
			pending += len(b.Docs)
			if bs.full() {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		clear(g.batches) // the docs' attributes are the segment's now
		select {
		case free <- g:
		default:
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return flush()
}
