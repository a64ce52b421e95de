package local

import (
	"context"
	"errors"
	"iter"
	"os"
	"sync/atomic"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestIdleSealRemovesTail: the idle seal (the background sealer's, and Close's) leaves a
// session with its .zst only; every reader, in this store and in another one with a cached
// view of the old tail, reads the same records; the next append writes the tail again; the
// index line matches the files, so the next Open summarises nothing again; Verify finds
// nothing torn.
func TestIdleSealRemovesTail(t *testing.T) {
	for _, tt := range []struct {
		name  string
		first int // records appended before the idle seal (0: a session never written to)
		then  int // appended after it, by the other store
	}{
		{"sealed, then appended to", 3, 2},
		{"sealed, left alone", 5, 0},
		{"never written, then appended to", 0, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var summaries atomic.Int64
			opts := Options{firstInTail: true, IdleSeal: -1, MaxPlainBytes: -1, Summarize: func(h storage.Header, recs iter.Seq2[storage.Record, error]) (storage.Meta, error) {
				summaries.Add(1)
				return storage.Meta{}, nil
			}}
			a, b := mustOpen(t, dir, opts), mustOpen(t, dir, opts)
			tail := a.tailPath("s")
			mustCreate(t, a, "s")
			lines := testLines(t)
			want := appendBatches(t, a, "s", [][]storage.Record{recordsOf(lines[:tt.first])})
			if got, err := readAll(t, b, "s", 1); err != nil || len(got) != tt.first {
				t.Fatalf("b reads %d records (%v), want %d", len(got), err, tt.first)
			}
			a.sealer.wrote("s", 1, false) // as an append would, so that the sealer takes it
			a.sealer.trySeal("s", (*Writer).sealIdle)
			if _, err := os.Stat(tail); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("tail after the idle seal: %v, want none", err)
			}
			for name, s := range map[string]*Store{"a": a, "b": b} {
				got, err := readAll(t, s, "s", 1)
				if err != nil {
					t.Fatal(err)
				}
				equalLines(t, got, want)
				if m, err := s.Get(t.Context(), "s"); err != nil || m.LastSeq != uint64(tt.first) {
					t.Fatalf("%s: Get: last seq %d (%v), want %d", name, m.LastSeq, err, tt.first)
				}
			}
			if rep, err := a.Verify(t.Context(), "s", false); err != nil || rep.Torn() || rep.Damaged() != nil {
				t.Fatalf("Verify without a tail: %+v, %v", rep, err)
			}
			if tt.then > 0 {
				want = append(want, appendBatches(t, b, "s", [][]storage.Record{recordsOf(lines[tt.first : tt.first+tt.then])})...)
				if _, err := os.Stat(tail); err != nil {
					t.Fatalf("tail after an append: %v", err)
				}
			}
			got, err := readAllWriter(a, "s")
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, got, want)
			// A stopped store: what Close left matches the index, and the next Open agrees.
			a.Close()
			b.Close()
			if _, err := os.Stat(tail); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("tail after Close: %v, want none", err)
			}
			summaries.Store(0)
			c := mustOpen(t, dir, opts)
			if n := summaries.Load(); n != 0 {
				t.Fatalf("Open summarised %d sessions again: the index does not match the files", n)
			}
			got, err = readAll(t, c, "s", 1)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, got, want)
			if rep, err := c.Verify(t.Context(), "s", true); err != nil || rep.Torn() || rep.Damaged() != nil || rep.Repaired {
				t.Fatalf("Verify(repair) without a tail: %+v, %v", rep, err)
			}
			if _, err := os.Stat(tail); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Verify(repair) made a tail: %v", err)
			}
		})
	}
}

// TestIdleSealKeepsStaleTail: a tail whose removal a crash undid (it still holds the sealed
// lines) reads as before, and a writer cuts it.
func TestIdleSealKeepsStaleTail(t *testing.T) {
	dir := t.TempDir()
	opts := Options{firstInTail: true, IdleSeal: -1, MaxPlainBytes: -1}
	s := mustOpen(t, dir, opts)
	mustCreate(t, s, "s")
	lines := testLines(t)
	want := appendBatches(t, s, "s", [][]storage.Record{recordsOf(lines[:4])})
	old, err := os.ReadFile(s.tailPath("s"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.updateW(context.Background(), "s", (*Writer).sealIdle); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(s.tailPath("s"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpen(t, dir, opts)
	got, err := readAll(t, s2, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, got, want)
	want = append(want, appendBatches(t, s2, "s", [][]storage.Record{recordsOf(lines[4:6])})...)
	got, err = readAllWriter(s2, "s")
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, got, want)
}
