package local

import (
	"context"
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

func lastSeq(t *testing.T, s *Store, id string) uint64 {
	t.Helper()
	m, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m.LastSeq
}

// Index lines that only move counters are held back for up to indexDelay: the writing store
// sees them at once, another store within indexDelay, and a held-back line written late never
// replaces a newer one.
func TestIndexLinesHeldBack(t *testing.T) {
	dir := t.TempDir()
	a := mustOpen(t, dir, Options{})
	b := mustOpen(t, dir, Options{})
	mustCreate(t, a, "s")
	appendOne(t, a, "s", storage.Meta{Name: "n-s", Messages: 1}) // first append after create: written at once? held: same listing
	appendOne(t, a, "s", storage.Meta{Name: "n-s", Messages: 2})
	if got := lastSeq(t, a, "s"); got != 2 {
		t.Fatalf("writer sees last_seq %d, want 2", got)
	}
	// A change of what listings show is written at once.
	appendOne(t, a, "s", storage.Meta{Name: "renamed", Messages: 3})
	if m, _ := b.Get(context.Background(), "s"); m.Name != "renamed" || m.LastSeq != 3 {
		t.Fatalf("other store sees %q/%d right after a rename", m.Name, m.LastSeq)
	}
	appendOne(t, a, "s", storage.Meta{Name: "renamed", Messages: 4}) // held back
	// b appends too, writing its line at once (it wrote none for this session recently).
	appendOne(t, b, "s", storage.Meta{Name: "renamed", Messages: 5})
	// a's held-back line (last_seq 4) lands after b's (5): it must not win.
	deadline := time.Now().Add(3 * indexDelay)
	for {
		c := mustOpen(t, dir, Options{})
		m, err := c.Get(context.Background(), "s")
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if m.LastSeq != 5 {
			t.Fatalf("fresh store sees last_seq %d, want 5", m.LastSeq)
		}
		a.idx.mu.Lock()
		flushed := len(a.idx.pending) == 0
		a.idx.mu.Unlock()
		if flushed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("held-back index line never written")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := lastSeq(t, b, "s"); got != 5 {
		t.Fatalf("after the late line, last_seq %d, want 5", got)
	}
	// Close writes what is still held back.
	appendOne(t, b, "s", storage.Meta{Name: "renamed", Messages: 6})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, dir, Options{})
	if got := lastSeq(t, c, "s"); got != 6 {
		t.Fatalf("after close, last_seq %d, want 6", got)
	}
}
