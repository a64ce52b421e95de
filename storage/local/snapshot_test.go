package local

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// snapshotOf loads id's snapshot the way memory does: through a View.
func snapshotOf(t *testing.T, s *Store, id string) (gen string, data []byte) {
	t.Helper()
	err := s.View(context.Background(), id, func(r storage.Reader) error {
		gen, data = s.Generation(r), s.LoadSnapshot(r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return gen, data
}

func TestSnapshotStoreAndLoad(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, t.TempDir(), Options{})
	id := "snap"
	mustCreate(t, s, id)
	appendBatches(t, s, id, [][]storage.Record{recordsOf(testLines(t)[:3])})
	gen, data := snapshotOf(t, s, id)
	if gen == "" || data != nil {
		t.Fatalf("new session: generation %q, snapshot %q", gen, data)
	}
	want := bytes.Repeat([]byte("state "), 1000)
	if err := s.SaveSnapshot(ctx, id, gen, want); err != nil {
		t.Fatal(err)
	}
	if _, got := snapshotOf(t, s, id); !bytes.Equal(got, want) {
		t.Fatalf("loaded %d bytes, saved %d", len(got), len(want))
	}
	// Appends and seals keep the generation, so the snapshot stays usable.
	appendBatches(t, s, id, [][]storage.Record{recordsOf(testLines(t)[3:5])})
	if err := s.updateW(ctx, id, func(w *Writer) error { return w.Seal() }); err != nil {
		t.Fatal(err)
	}
	if g, got := snapshotOf(t, s, id); g != gen || !bytes.Equal(got, want) {
		t.Fatalf("after appends and a seal: generation %q (was %q), snapshot kept: %v", g, gen, bytes.Equal(got, want))
	}
	// Another generation's snapshot is not stored.
	if err := s.SaveSnapshot(ctx, id, gen+"x", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if _, got := snapshotOf(t, s, id); !bytes.Equal(got, want) {
		t.Fatal("a snapshot of another generation replaced the current one")
	}
	// A damaged file is no snapshot.
	path := s.statePath(id)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(bytes.Clone(b[:20]), b[21:]...), {}, []byte(stateMagic)} {
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, got := snapshotOf(t, s, id); got != nil {
			t.Fatalf("a damaged snapshot (%d bytes) was loaded", len(bad))
		}
	}
}

func TestSnapshotGoesWithDeleteAndRewrite(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, t.TempDir(), Options{})
	id := "snap"
	mustCreate(t, s, id)
	appendBatches(t, s, id, [][]storage.Record{recordsOf(testLines(t)[:3])})
	gen, _ := snapshotOf(t, s, id)
	if err := s.SaveSnapshot(ctx, id, gen, []byte("old")); err != nil {
		t.Fatal(err)
	}
	changed, err := s.Rewrite(ctx, id, func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		data := make([][]byte, len(recs))
		data[0] = []byte(`{"id":"rewritten"}`)
		return h, data, storage.Meta{}, nil
	})
	if err != nil || !changed {
		t.Fatalf("rewrite: %v %v", changed, err)
	}
	if _, err := os.Stat(s.statePath(id)); err == nil {
		t.Fatal("the rewrite left the snapshot of the old records")
	}
	gen2, _ := snapshotOf(t, s, id)
	if gen2 == gen {
		t.Fatal("a rewrite kept the generation")
	}
	// A process that still holds the old state cannot write it back.
	if err := s.SaveSnapshot(ctx, id, gen, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.statePath(id)); err == nil {
		t.Fatal("a snapshot of the old generation was written after the rewrite")
	}
	if err := s.SaveSnapshot(ctx, id, gen2, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.statePath(id)); err == nil {
		t.Fatal("delete left the snapshot")
	}
	// Saving for a deleted session stores nothing and is no error.
	if err := s.SaveSnapshot(ctx, id, gen2, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.statePath(id)); err == nil {
		t.Fatal("a snapshot was written for a deleted session")
	}
}
