package ftsindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

func TestQueue(t *testing.T) {
	ix := openTest(t, "")
	var mu sync.Mutex
	var progress []Progress
	q := ix.NewQueue(QueueOptions{Delay: 20 * time.Millisecond, OnIndexed: func(p []Progress) {
		mu.Lock()
		progress = append(progress, p...)
		mu.Unlock()
	}})
	// Many small batches from several goroutines, as concurrent saves would add them.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			id := fmt.Sprintf("q%d", g)
			for seq := uint64(1); seq <= 50; seq++ {
				d := doc(id, seq, "user", fmt.Sprintf("queued doc g%dn%d", g, seq))
				if err := q.Add(Batch{Session: sess(id), From: seq, Through: seq, Docs: []fts.Doc{d}}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Everything added before Flush is searchable after it.
	if got := searchAll(t, ix, Query{Match: mustParse(t, "queued")}); len(got) != 200 {
		t.Fatalf("%d docs after Flush, want 200", len(got))
	}
	for g := 0; g < 4; g++ {
		if p, _ := ix.Progress(t.Context(), fmt.Sprintf("q%d", g)); p.Through != 50 {
			t.Fatalf("q%d progress %d", g, p.Through)
		}
	}
	mu.Lock()
	if len(progress) != 200 {
		t.Fatalf("OnIndexed saw %d results, want 200", len(progress))
	}
	mu.Unlock()
	// Without Flush, a doc is indexed within the delay.
	start := time.Now()
	if err := q.Add(Batch{Session: sess("late"), From: 1, Through: 1, Docs: []fts.Doc{doc("late", 1, "user", "eventually")}}); err != nil {
		t.Fatal(err)
	}
	for len(search(t, ix, Query{Match: mustParse(t, "eventually")})) == 0 {
		if time.Since(start) > time.Second {
			t.Fatal("not indexed within 1 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Close indexes what is left; Add after Close fails.
	if err := q.Add(Batch{Session: sess("last"), From: 1, Through: 1, Docs: []fts.Doc{doc("last", 1, "user", "final words")}}); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := search(t, ix, Query{Match: mustParse(t, "final")}); len(got) != 1 {
		t.Fatalf("after Close: %v", got)
	}
	if err := q.Add(Batch{Session: sess("x"), From: 1, Through: 1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if err := q.Flush(t.Context()); err != nil {
		t.Fatalf("Flush after Close: %v", err)
	}
}

func TestQueueErrors(t *testing.T) {
	ix := openTest(t, "")
	errs := make(chan error, 10)
	q := ix.NewQueue(QueueOptions{Delay: time.Hour, OnError: func(err error) { errs <- err }})
	defer q.Close(t.Context())
	// A bad batch fails its flush (and the good batch sharing it): reported, dropped, and
	// Flush does not hang.
	q.Add(Batch{Session: sess("g"), From: 1, Through: 1, Docs: []fts.Doc{doc("g", 1, "user", "good")}})
	q.Add(Batch{Session: sess("b"), From: 2, Through: 1})
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("OnError got %v", err)
		}
	default:
		t.Fatal("OnError not called")
	}
	// The next flush works: catch-up from Progress recovers the dropped batch.
	if p, _ := ix.Progress(t.Context(), "g"); p.Through != 0 {
		t.Fatalf("progress %d", p.Through)
	}
	q.Add(Batch{Session: sess("g"), From: 1, Through: 1, Docs: []fts.Doc{doc("g", 1, "user", "good")}})
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := search(t, ix, Query{Match: mustParse(t, "good")}); len(got) != 1 {
		t.Fatalf("%v", got)
	}
	// Flush honours its context.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	q.Add(Batch{Session: sess("g"), From: 2, Through: 2})
	if err := q.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Flush with a cancelled context: %v", err)
	}
}

func TestIndexAll(t *testing.T) {
	ix := openTest(t, "")
	gen := func(sessions, per int, failAt int) iter.Seq2[Batch, error] {
		return func(yield func(Batch, error) bool) {
			n := 0
			for k := 0; k < sessions; k++ {
				id := fmt.Sprintf("all%d", k)
				b := Batch{Session: sess(id), From: 1, Through: uint64(per)}
				for s := 1; s <= per; s++ {
					b.Docs = append(b.Docs, doc(id, uint64(s), "user", fmt.Sprintf("bulk text %d", s)))
				}
				if n++; n == failAt {
					if !yield(Batch{}, errors.New("store unreadable")) {
						return
					}
				}
				if !yield(b, nil) {
					return
				}
			}
		}
	}
	var last int
	if err := ix.IndexAll(t.Context(), gen(30, 100, -1), BulkOptions{Progress: func(d int) { last = d }}); err != nil {
		t.Fatal(err)
	}
	if last != 3000 {
		t.Fatalf("progress ended at %d", last)
	}
	if st, _ := ix.Stats(t.Context()); st.Docs != 3000 || st.Sessions != 30 {
		t.Fatalf("stats %+v", st)
	}
	// The iterator's error stops it and is returned.
	if err := ix.IndexAll(t.Context(), gen(30, 10, 5), BulkOptions{}); err == nil || err.Error() != "store unreadable" {
		t.Fatalf("IndexAll: %v", err)
	}
	// An Index error (a bad batch) is returned too.
	bad := func(yield func(Batch, error) bool) { yield(Batch{Session: sess("z"), From: 0, Through: 1}, nil) }
	if err := ix.IndexAll(t.Context(), bad, BulkOptions{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("IndexAll with a bad batch: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := ix.IndexAll(ctx, gen(3, 10, -1), BulkOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("IndexAll with a cancelled context: %v", err)
	}
}

// TestQueueAddDuringClose: Adds racing a Close either succeed (and are indexed) or fail with
// ErrClosed; none panics or is lost.
func TestQueueAddDuringClose(t *testing.T) {
	ix := openTest(t, "")
	q := ix.NewQueue(QueueOptions{Delay: time.Millisecond})
	var wg sync.WaitGroup
	var mu sync.Mutex
	added := 0
	started := make(chan struct{}, 4)
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			id := fmt.Sprintf("r%d", g)
			for seq := uint64(1); seq <= 300; seq++ {
				if seq == 20 {
					started <- struct{}{}
				}
				err := q.Add(Batch{Session: sess(id), From: seq, Through: seq, Docs: []fts.Doc{doc(id, seq, "user", "racing")}})
				if errors.Is(err, ErrClosed) {
					return
				}
				mu.Lock()
				added++
				mu.Unlock()
			}
		})
	}
	for range 4 {
		<-started
	}
	if err := q.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if st, _ := ix.Stats(t.Context()); st.Docs != int64(added) {
		t.Fatalf("%d docs indexed, %d added", st.Docs, added)
	}
}

// A batch with Build gets its docs in the queue's goroutine, not in Add.
func TestQueueBuild(t *testing.T) {
	ix := openTest(t, "")
	q := ix.NewQueue(QueueOptions{Delay: time.Hour}) // only Flush indexes
	defer q.Close(context.Background())
	built := make(chan struct{}, 10)
	for seq := uint64(1); seq <= 3; seq++ {
		b := Batch{Session: sess("lazy"), From: seq, Through: seq, Build: func() []fts.Doc {
			built <- struct{}{}
			return []fts.Doc{doc("lazy", seq, "user", fmt.Sprintf("built later %d", seq))}
		}}
		if err := q.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	if len(built) != 0 {
		t.Fatalf("Add called Build %d times", len(built))
	}
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(built) != 3 {
		t.Fatalf("Build called %d times, want 3", len(built))
	}
	if got := searchAll(t, ix, Query{Match: mustParse(t, "built")}); len(got) != 3 {
		t.Fatalf("%d docs, want 3", len(got))
	}
	if p, _ := ix.Progress(t.Context(), "lazy"); p.Through != 3 {
		t.Fatalf("progress %d, want 3", p.Through)
	}
}

// TestQueueBounded: with MaxPendingBytes waiting, Add refuses batches (the caller's catch-up
// indexes them later) until a flush took what waited; what it took is indexed.
func TestQueueBounded(t *testing.T) {
	ix := openTest(t, "")
	q := ix.NewQueue(QueueOptions{Delay: time.Hour, MaxDocs: 1 << 20, MaxPendingBytes: 1000})
	defer q.Close(t.Context())
	built := 0
	add := func(seq uint64, size int) error {
		d := doc("b", seq, "user", fmt.Sprintf("bounded doc %d", seq))
		return q.Add(Batch{Session: sess("b"), From: seq, Through: seq, Size: size, Build: func() []fts.Doc { built++; return []fts.Doc{d} }})
	}
	for _, tt := range []struct {
		seq  uint64
		size int
		want error
	}{
		{1, 600, nil},
		{2, 600, nil}, // 600 wait: under the bound, so it is taken whole
		{3, 10, ErrQueueFull},
	} {
		if err := add(tt.seq, tt.size); !errors.Is(err, tt.want) {
			t.Fatalf("Add(seq %d, %d bytes) = %v, want %v", tt.seq, tt.size, err, tt.want)
		}
	}
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := add(3, 10); err != nil {
		t.Fatalf("Add after a flush: %v", err)
	}
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p, err := ix.Progress(t.Context(), "b"); err != nil || p.Through != 3 || built != 3 {
		t.Fatalf("indexed through %d (%v), %d batches built; want 3 and 3", p.Through, err, built)
	}
}
