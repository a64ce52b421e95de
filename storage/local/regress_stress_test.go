package local

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// Regression tests for two bugs the stress review found.

// TestCloseDuringNestedCall: a call made inside a running call's callback (a View nested in
// a View, or memory's Get inside a View) must not deadlock against a concurrent Close.
// Store.enter takes s.life.RLock, so the nested call's RLock queues behind Close's pending
// Lock, which waits for the outer call: sync.RWMutex forbids recursive read locking.
func TestCloseDuringNestedCall(t *testing.T) {
	dir := memTempDir(t)
	s, err := Open(dir, Options{}) // no cleanup: on failure the Store stays stuck
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "a")
	done := make(chan error, 1)
	go func() {
		done <- s.viewR(context.Background(), "a", func(r *Reader) error {
			go s.Close()
			time.Sleep(50 * time.Millisecond) // let Close block in Lock
			if _, err := s.Get(context.Background(), "a"); err != nil && !errors.Is(err, storage.ErrClosed) {
				return err
			}
			return s.viewR(context.Background(), "a", func(*Reader) error { return nil })
		})
	}()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, storage.ErrClosed) {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nested call deadlocked against Close")
	}
}

// TestLineAfterOtherSeal: appends by one store and a seal by another leave an index whose last
// line for the session carries the sizes after the seal, so the next Open summarises nothing
// again. (Index lines held back for up to a second once broke this: a late line with the
// sizes from before the other store's seal replaced the seal's line, which made
// TestMultiProcessAppend flaky.)
func TestLineAfterOtherSeal(t *testing.T) {
	dir := memTempDir(t)
	a := mustOpen(t, dir, Options{})
	b := mustOpen(t, dir, Options{})
	mustCreate(t, a, "s")
	add := func() {
		t.Helper()
		err := a.updateW(t.Context(), "s", func(w *Writer) error {
			_, err := w.Append([]storage.Record{{Kind: "message", Data: []byte(`{"x":1}`)}}, storage.Meta{Name: "n-s"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	add()
	add()
	if err := b.updateW(t.Context(), "s", func(w *Writer) error { return w.Seal() }); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, a, "t")
	calls := 0
	mustOpen(t, dir, Options{Summarize: func(storage.Header, iter.Seq2[storage.Record, error]) (storage.Meta, error) {
		calls++
		return storage.Meta{}, nil
	}})
	if calls != 0 {
		t.Fatalf("%d sessions summarised again after clean use, want 0", calls)
	}
}
