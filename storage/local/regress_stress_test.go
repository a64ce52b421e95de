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

// TestHeldLineAfterOtherSeal: a held-back index line (same last_seq, sizes from before a
// seal) written after another process's seal line replaces it, because index.apply lets a
// line with an equal last_seq win; the next Open then finds the sizes stale and summarises
// the session again. This is the cause of TestMultiProcessAppend's occasional "index
// incomplete after clean exits: 1 sessions re-summarized" (each helper's Close seals "pN"
// first, flushing its held "shared" line after another helper sealed "shared").
func TestHeldLineAfterOtherSeal(t *testing.T) {
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
	add() // within indexDelay of the first: its line is held back
	if err := b.updateW(t.Context(), "s", func(w *Writer) error { return w.Seal() }); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, a, "t") // any index write of a's carries the held line along
	calls := 0
	mustOpen(t, dir, Options{Summarize: func(storage.Header, iter.Seq2[storage.Record, error]) (storage.Meta, error) {
		calls++
		return storage.Meta{}, nil
	}})
	if calls != 0 {
		t.Fatalf("%d sessions summarised again after clean use, want 0", calls)
	}
}
