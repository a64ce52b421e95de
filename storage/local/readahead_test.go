package local

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// TestReadAhead: ReadAhead starts decoding the frame holding its seq and the one after it,
// each once; the read that follows waits for them rather than decoding them again, and sees
// every record as it was stored. Frames already cached are not decoded again, and a store
// closed right after a ReadAhead waits for it (no decode on a closed decoder; -race).
func TestReadAhead(t *testing.T) {
	dir := t.TempDir()
	opts := Options{IdleSeal: -1, MaxPlainBytes: -1, SealRecords: 3}
	a := mustOpen(t, dir, opts)
	mustCreate(t, a, "s")
	lines := testLines(t)
	var batches [][]storage.Record
	for p := range slices.Chunk(recordsOf(lines), 3) {
		batches = append(batches, p)
	}
	want := appendBatches(t, a, "s", batches)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	b := mustOpen(t, dir, opts)
	var frames []frameInfo
	var zino uint64
	if err := b.viewR(context.Background(), "s", func(r *Reader) error {
		frames, zino = r.v.frames, r.v.zstID.ino
		r.ReadAhead(frames[1].first + 1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(frames) < 4 {
		t.Fatalf("want a session of at least 4 frames, got %d", len(frames))
	}
	if got := b.frames.decoded.Load(); got != readAheadFrames {
		t.Fatalf("ReadAhead claimed %d frames, want %d", got, readAheadFrames)
	}
	for _, fr := range frames[1 : 1+readAheadFrames] {
		key := frameKey{ino: zino, off: fr.off, sum: fr.sum}
		for deadline := time.Now().Add(10 * time.Second); b.frames.get(key) == nil; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("frame at %d not in the cache 10 s after ReadAhead", fr.off)
			}
		}
	}
	from := frames[1].first
	got, err := readAll(t, b, "s", from)
	if err != nil || !slices.Equal(got, want[from-1:]) {
		t.Fatalf("read from %d after ReadAhead: %d records (%v), want %d", from, len(got), err, len(want[from-1:]))
	}
	if got, want := b.frames.decoded.Load(), int64(len(frames)-1); got != want {
		t.Fatalf("%d frames decoded reading %d frames after ReadAhead, want each once (%d)", got, len(frames)-1, want)
	}
	// Cached frames are left alone.
	if err := b.viewR(context.Background(), "s", func(r *Reader) error { r.ReadAhead(from); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := b.frames.decoded.Load(); got != int64(len(frames)-1) {
		t.Fatalf("ReadAhead of cached frames decoded again: %d", got)
	}

	for range 20 {
		c, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.viewR(context.Background(), "s", func(r *Reader) error { r.ReadAhead(1); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
