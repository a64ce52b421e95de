package local

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// TestStressCalls mixes every call that touches the locks and the cached views on a few ids:
// Update (append, seal, barrier), View (some nested), Delete and Create again, from one
// long-lived Store and from a second Store on the same directory (another process's stand-in)
// that is closed and opened again while calls run on it, with short context deadlines on a
// third of the calls and a view cache smaller than the number of ids. It checks:
// no deadlock (a watchdog dumps every goroutine), no error but the expected ones, an Update's
// callback never overlaps another callback on its id, every View sees a gap-free history of
// its incarnation only (told apart by the header nonce), and at the end each surviving
// session holds exactly the appends acknowledged for its incarnation, once each.
func TestStressCalls(t *testing.T) {
	dir := memTempDir(t)
	opts := Options{SealRecords: 4, MaxCachedSessions: 2}
	st := &stressRun{t: t, dir: dir, opts: opts, s1: mustOpen(t, dir, opts), ids: []string{"a", "b", "c", "d", "e"},
		attempted: map[string]string{}, acked: map[string][]string{}, active: map[string]*atomic.Int64{}}
	st.s2.Store(mustOpenNoCleanup(t, dir, opts))
	t.Cleanup(func() { st.s2.Load().Close() })
	for _, id := range st.ids {
		mustCreate(t, st.s1, id)
		st.active[id] = &atomic.Int64{}
	}

	const goroutines = 8
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() { st.worker(g, stop) })
	}
	wg.Go(func() { st.restarter(stop) })
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		// Exit rather than fail: the cleanups would block on the stuck calls.
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		fmt.Fprintln(os.Stderr, "TestStressHandles: calls still running 20 s after the end: deadlock")
		os.Exit(2)
	}
	for k, name := range []string{"append", "seal", "view", "delete", "create"} {
		t.Logf("%s: %d calls succeeded", name, st.counts[k].Load())
	}
	t.Logf("%d calls ran out of time, %d found their Store closed", st.expired.Load(), st.closed.Load())
	if t.Failed() {
		return
	}
	last := st.s2.Load()
	for _, s := range []*Store{st.s1, last} {
		st.checkFinal(s)
	}

	// Idle: no session descriptor is open between calls, once the waits abandoned by a
	// deadline have seen their flock return.
	checkOpen := func(max int) {
		t.Helper()
		abandonedWaits.Wait()
		if n, _, ok := openSessionFiles(t, dir); ok && n > max {
			t.Fatalf("%d session descriptors open, want at most %d", n, max)
		}
	}
	checkOpen(0)
	if err := last.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.s1.Close(); err != nil {
		t.Fatal(err)
	}
	checkOpen(0)
}

// stressRun is TestStressCalls' shared state: the two Stores, what was written where, and
// what the calls did.
type stressRun struct {
	t    *testing.T
	dir  string
	opts Options
	s1   *Store
	s2   atomic.Pointer[Store] // replaced while calls run on it
	ids  []string

	mu        sync.Mutex
	attempted map[string]string   // tag -> nonce of the incarnation it was written to
	acked     map[string][]string // nonce -> acknowledged tags
	// active counts the callbacks running on each id: 1 per View, 1000 per Update.
	active map[string]*atomic.Int64

	counts          [5]atomic.Int64 // per kind of call (append, seal, view, delete, create): how many did their work
	expired, closed atomic.Int64
}

// checkView checks that a View overlaps no Update and sees its incarnation's tags only, once
// each.
func (st *stressRun) checkView(ctx context.Context, r *Reader) error {
	if n := st.active[r.ID()].Add(1); n >= 1000 {
		return fmt.Errorf("view of %s overlaps an update", r.ID())
	}
	defer st.active[r.ID()].Add(-1)
	tags, err := tagsOf(ctx, r)
	if err != nil {
		return fmt.Errorf("view of %s: %w", r.ID(), err)
	}
	nonce := r.Header().Nonce
	st.mu.Lock()
	defer st.mu.Unlock()
	seen := map[string]bool{}
	for _, tag := range tags {
		if seen[tag] {
			return fmt.Errorf("view of %s: %s stored twice", r.ID(), tag)
		}
		seen[tag] = true
		if got := st.attempted[tag]; got != nonce {
			return fmt.Errorf("view of %s (nonce %s): %s was written to incarnation %q", r.ID(), nonce, tag, got)
		}
	}
	return nil
}

// worker g makes random calls until stop: odd workers on the Store that gets replaced.
func (st *stressRun) worker(g int, stop chan struct{}) {
	t := st.t
	rng := rand.New(rand.NewPCG(uint64(g), 42))
	var cur *Store
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		s, other := st.s1, false
		if g%2 == 1 {
			// Kept for a few calls, so that some run into Close.
			if i%8 == 0 || cur == nil {
				cur = st.s2.Load()
			}
			s, other = cur, true
		}
		id := st.ids[rng.IntN(len(st.ids))]
		ctx, cancel := t.Context(), context.CancelFunc(func() {})
		if rng.IntN(3) == 0 {
			ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(3000))*time.Microsecond)
		}
		op := rng.IntN(20)
		kind, err := st.call(ctx, s, other, id, op, fmt.Sprintf("g%d-%d", g, i))
		cancel()
		switch {
		case err == nil:
			st.counts[kind].Add(1)
		case errors.Is(err, context.DeadlineExceeded):
			st.expired.Add(1)
		case errors.Is(err, storage.ErrClosed):
			st.closed.Add(1)
		}
		if err != nil && !expectedErr(err, other) {
			t.Errorf("g%d op %d on %s: %v", g, op, id, err)
		}
	}
}

// call makes call op (0..19) on id and returns its kind (an index of counts).
func (st *stressRun) call(ctx context.Context, s *Store, other bool, id string, op int, tag string) (kind int, err error) {
	switch {
	case op < 8: // append, sometimes a barrier, sometimes two records
		return 0, st.appendCall(ctx, s, other, id, op, tag)
	case op < 9:
		return 1, s.updateW(ctx, id, func(w *Writer) error { return w.Seal() })
	case op < 15:
		return 2, st.viewCall(ctx, s, other, id, op)
	case op < 17:
		return 3, s.Delete(ctx, id)
	}
	err = s.Create(context.Background(), storage.Header{ID: id, WorkingDir: "/w"}, storage.Meta{})
	if errors.Is(err, storage.ErrExists) {
		err = nil
	}
	return 4, err
}

// appendCall appends tag (op 0: as a barrier; op 1: and tag+"x"), records it as acknowledged
// when the Update returns nil, and checks that the next View sees it.
func (st *stressRun) appendCall(ctx context.Context, s *Store, other bool, id string, op int, tag string) error {
	t := st.t
	var ackTags []string
	var ackNonce string
	err := s.updateW(ctx, id, func(w *Writer) error {
		if n := st.active[id].Add(1000); n != 1000 {
			st.active[id].Add(-1000)
			return fmt.Errorf("update of %s overlaps other callbacks (%d)", id, n)
		}
		defer st.active[id].Add(-1000)
		ackNonce = w.Header().Nonce
		recs := []storage.Record{{Kind: "message", Data: []byte(`{"tag":"` + tag + `"}`), Barrier: op == 0}}
		st.mu.Lock()
		st.attempted[tag] = ackNonce
		st.mu.Unlock()
		ackTags = []string{tag}
		if op == 1 {
			recs = append(recs, storage.Record{Kind: "message", Data: []byte(`{"tag":"` + tag + `x"}`)})
			ackTags = append(ackTags, tag+"x")
			st.mu.Lock()
			st.attempted[tag+"x"] = ackNonce
			st.mu.Unlock()
		}
		if _, err := w.Append(recs, storage.Meta{}); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.acked[ackNonce] = append(st.acked[ackNonce], ackTags...)
	st.mu.Unlock()
	// Read your own write, unless the session was deleted (and maybe created again) in
	// between.
	var nonce string
	var tags []string
	verr := s.viewR(t.Context(), id, func(r *Reader) error {
		nonce = r.Header().Nonce
		var err error
		tags, err = tagsOf(t.Context(), r)
		return err
	})
	if verr == nil && nonce == ackNonce && !contains(tags, tag) {
		t.Errorf("%s: acknowledged %s not seen by the next view", id, tag)
	} else if verr != nil && !expectedErr(verr, other) {
		t.Errorf("%s: view after update: %v", id, verr)
	}
	return nil
}

// viewCall checks a View of id (op 14, on the Store not being closed: with another View
// nested in it).
func (st *stressRun) viewCall(ctx context.Context, s *Store, other bool, id string, op int) error {
	return s.viewR(ctx, id, func(r *Reader) error {
		if err := st.checkView(ctx, r); err != nil {
			return err
		}
		if op != 14 || other {
			// Not on the Store being closed: a call nested in a running call
			// deadlocks against Close (see TestCloseDuringNestedCall).
			return nil
		}
		// Nested in a View of the same session: shares the lock.
		return s.viewR(ctx, id, func(r2 *Reader) error {
			if r2.LastSeq() != r.LastSeq() || r2.Header().Nonce != r.Header().Nonce {
				return fmt.Errorf("nested view of %s: LastSeq %d nonce %s, outer %d %s",
					id, r2.LastSeq(), r2.Header().Nonce, r.LastSeq(), r.Header().Nonce)
			}
			return nil
		})
	})
}

// restarter is another process restarting until stop: a new Store opens (reconciling the
// index while calls run) and the old one closes under the calls still using it.
func (st *stressRun) restarter(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(150 * time.Millisecond):
		}
		ns, err := Open(st.dir, st.opts)
		if err != nil {
			st.t.Errorf("reopen: %v", err)
			return
		}
		if err := st.s2.Swap(ns).Close(); err != nil {
			st.t.Errorf("close while in use: %v", err)
		}
	}
}

// checkFinal checks that each surviving session holds exactly the appends acknowledged for
// its incarnation, once each.
func (st *stressRun) checkFinal(s *Store) {
	t := st.t
	for _, id := range st.ids {
		var nonce string
		var tags []string
		err := s.viewR(t.Context(), id, func(r *Reader) error {
			if err := st.checkView(t.Context(), r); err != nil {
				return err
			}
			nonce = r.Header().Nonce
			var err error
			tags, err = tagsOf(t.Context(), r)
			return err
		})
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("final view of %s: %v", id, err)
		}
		st.mu.Lock()
		want := append([]string(nil), st.acked[nonce]...)
		st.mu.Unlock()
		sort.Strings(tags)
		sort.Strings(want)
		if strings.Join(tags, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: stored %v\nacknowledged %v", id, tags, want)
		}
	}
}

// expectedErr reports whether err is one the stress test allows: a missing or existing
// session, an expired deadline, or (for the Store that gets closed) ErrClosed.
func expectedErr(err error, closable bool) bool {
	return errors.Is(err, storage.ErrNotFound) || errors.Is(err, context.DeadlineExceeded) ||
		(closable && errors.Is(err, storage.ErrClosed))
}

func mustOpenNoCleanup(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}
