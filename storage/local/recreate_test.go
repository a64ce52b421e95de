package local

import (
	"context"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestRecreatedSessionIsReadAfresh: a store that read a session reads the new one after
// another process deleted it and created one under the same id, with records of the same
// size, at once: the new .zst may reuse the old one's inode and have its size and (coarse)
// modification time, and must still not be taken for the file the store read before.
func TestRecreatedSessionIsReadAfresh(t *testing.T) {
	dir := t.TempDir()
	a := mustOpen(t, dir, Options{IdleSeal: -1})
	b := mustOpen(t, dir, Options{IdleSeal: -1})
	lines := testLines(t)
	for i := range 200 {
		id := "s"
		mustCreate(t, a, id)
		appendBatches(t, a, id, [][]storage.Record{recordsOf(lines[:3])})
		var old storage.Header
		if err := a.View(context.Background(), id, func(r storage.Reader) error { old = r.Header(); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, b, id)
		appendBatches(t, b, id, [][]storage.Record{recordsOf(lines[:3])})
		var got storage.Header
		if err := a.View(context.Background(), id, func(r storage.Reader) error { got = r.Header(); return nil }); err != nil {
			t.Fatal(err)
		}
		if got.Nonce == old.Nonce {
			t.Fatalf("round %d: after the session was deleted and created again, a still reads the old one (nonce %s)", i, got.Nonce)
		}
		if err := b.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
}
