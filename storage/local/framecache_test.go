package local

import (
	"context"
	"sync"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestFrameDecodedOnce: readers that want the same sealed frame at the same time (a server's
// warm-up and the client's first resume) decode it once: the others wait for it and read it
// from the cache. Each reader sees every record.
func TestFrameDecodedOnce(t *testing.T) {
	dir := t.TempDir()
	opts := Options{IdleSeal: -1, MaxPlainBytes: -1}
	a := mustOpen(t, dir, opts)
	mustCreate(t, a, "s")
	lines := testLines(t)
	want := appendBatches(t, a, "s", [][]storage.Record{recordsOf(lines)})
	a.sealer.wrote("s", 1, false)
	a.sealer.trySeal("s", (*Writer).sealIdle)
	var frames int
	if err := a.viewR(context.Background(), "s", func(r *Reader) error { frames = len(r.v.frames); return nil }); err != nil || frames == 0 {
		t.Fatalf("sealed frames: %d (%v)", frames, err)
	}
	for round := range 20 {
		b, err := Open(dir, opts) // an empty frame cache
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				got, err := readAll(t, b, "s", 1)
				if err == nil && len(got) != len(want) {
					err = context.DeadlineExceeded
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: a reader: %v", round, err)
		}
		if got := b.frames.decoded.Load(); got != int64(frames) {
			t.Fatalf("round %d: %d frames decoded for %d sealed frames read by 8 readers at once", round, got, frames)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
