package local

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

func appendOne(t *testing.T, s *Store, id string, m storage.Meta) {
	t.Helper()
	err := s.updateW(context.Background(), id, func(w *Writer) error {
		_, err := w.Append([]storage.Record{{Kind: "message", Data: []byte(`{"x":1}`)}}, m)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIndexAgreesAtOnce: every append writes its index line before it returns, so this store,
// another store on the directory and a store opened afterwards list exactly what a read
// returns, after every append and every seal (at 3 records), without re-summarising anything.
func TestIndexAgreesAtOnce(t *testing.T) {
	dir := t.TempDir()
	a := mustOpen(t, dir, Options{SealRecords: 3})
	b := mustOpen(t, dir, Options{SealRecords: 3})
	mustCreate(t, a, "s")
	for i := 1; i <= 20; i++ {
		w := a
		if i%4 == 0 {
			w = b
		}
		appendOne(t, w, "s", storage.Meta{Name: "n-s", Messages: i})
		for _, s := range []*Store{a, b} {
			m, err := s.Get(context.Background(), "s")
			if err != nil {
				t.Fatal(err)
			}
			l, err := s.List(context.Background(), storage.ListQuery{})
			if err != nil {
				t.Fatal(err)
			}
			var read uint64
			if err := s.viewR(context.Background(), "s", func(r *Reader) error { read = r.LastSeq(); return nil }); err != nil {
				t.Fatal(err)
			}
			if m.Messages != i || m.LastSeq != uint64(i) || len(l) != 1 || l[0].Messages != i || read != uint64(i) {
				t.Fatalf("after append %d: get %d/%d, list %+v, read %d", i, m.Messages, m.LastSeq, l, read)
			}
		}
	}
	calls := 0
	mustOpen(t, dir, Options{Summarize: func(storage.Header, iter.Seq2[storage.Record, error]) (storage.Meta, error) {
		calls++
		return storage.Meta{}, nil
	}})
	if calls != 0 {
		t.Fatalf("%d sessions summarised again after clean use, want 0", calls)
	}
}

// TestIndexRewrite: a store with few sessions and many appends rewrites its index (one line
// per session) instead of growing it without end, and every store keeps reading it.
func TestIndexRewrite(t *testing.T) {
	dir := t.TempDir()
	a := mustOpen(t, dir, Options{})
	b := mustOpen(t, dir, Options{})
	mustCreate(t, a, "s")
	for i := 1; i <= minRewriteLines+50; i++ {
		appendOne(t, a, "s", storage.Meta{Messages: i})
	}
	a.idx.mu.Lock()
	lines := a.idx.lines
	a.idx.mu.Unlock()
	if lines > minRewriteLines {
		t.Fatalf("index holds %d lines for one session", lines)
	}
	if m, err := b.Get(context.Background(), "s"); err != nil || m.Messages != minRewriteLines+50 {
		t.Fatalf("other store after rewrites: %+v, %v", m, err)
	}
}

// TestIndexCompactedWhenIdle: once this process stopped writing for IdleSeal, the background
// sealer rewrites an index whose lines are mostly superseded, one line per session.
func TestIndexCompactedWhenIdle(t *testing.T) {
	dir := t.TempDir()
	clk := newClock() // stands still while the appends run: the store is busy until it moves
	s := mustOpen(t, dir, Options{IdleSeal: time.Hour, Now: clk.now, sealTick: 20 * time.Millisecond})
	for _, id := range []string{"a", "b"} {
		mustCreate(t, s, id)
		for i := 1; i <= 60; i++ {
			appendOne(t, s, id, storage.Meta{Messages: i})
		}
	}
	time.Sleep(100 * time.Millisecond)
	s.idx.mu.Lock()
	if s.idx.lines != 122 {
		t.Errorf("index compacted while the store was busy: %d lines", s.idx.lines)
	}
	s.idx.mu.Unlock()
	clk.advance(2 * time.Hour)
	// 122 lines (a create and 60 appends per session) become one per session, plus at most a
	// seal's line each (the idle tails are sealed too, before or after).
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.idx.mu.Lock()
		lines, ents, bad, badHd := s.idx.lines, len(s.idx.ents), s.idx.bad, s.idx.badHd
		s.idx.mu.Unlock()
		if lines <= 4 {
			break
		}
		if time.Now().After(deadline) {
			s.sealer.mu.Lock()
			for id, tl := range s.sealer.tails {
				t.Logf("tail %s: %d bytes, last append %v ago", id, tl.bytes, time.Since(tl.last))
			}
			s.sealer.mu.Unlock()
			t.Fatalf("the index was not compacted: %d lines for %d sessions (%d bad, bad header %v)", lines, ents, bad, badHd)
		}
		time.Sleep(10 * time.Millisecond)
	}
	other := mustOpen(t, dir, Options{})
	for _, id := range []string{"a", "b"} {
		if m, err := other.Get(context.Background(), id); err != nil || m.Messages != 60 || m.LastSeq != 60 {
			t.Fatalf("%s after compaction: %+v, %v", id, m, err)
		}
	}
}
