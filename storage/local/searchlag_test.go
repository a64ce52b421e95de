package local

import (
	"fmt"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// TestIndexLag: the lag a store reports is what its syncer's last pass found missing. A store
// filled without an index opens behind by every record; the catch-up indexes them, and the
// next pass reports nothing behind.
func TestIndexLag(t *testing.T) {
	old := searchPoll
	searchPoll = time.Hour // only the passes this test asks for
	t.Cleanup(func() { searchPoll = old })

	dir := t.TempDir()
	plain := mustOpen(t, dir, Options{IdleSeal: -1})
	if lag := plain.IndexLag(); !lag.Unavailable {
		t.Fatalf("a store without an index reports %+v, want Unavailable", lag)
	}
	for i := range 3 {
		id := fmt.Sprintf("s%d", i)
		mustCreate(t, plain, id)
		for j := range 4 {
			appendBatches(t, plain, id, [][]storage.Record{{{Data: fmt.Appendf(nil, `{"text":"word%d"}`, j)}}})
		}
	}
	plain.Close()

	s := mustOpen(t, dir, searchOpts())
	// The first pass (the catch-up) measured before it indexed.
	waitFor(t, 30*time.Second, "the catch-up's lag", func() bool {
		lag := s.IndexLag()
		return lag.Behind == 12 && lag.BehindSessions == 3
	})
	waitFor(t, 30*time.Second, "the catch-up to finish", func() bool { return !s.IndexLag().Rebuilding })
	s.search.wake() // the next pass finds nothing missing
	waitFor(t, 30*time.Second, "a pass with nothing behind", func() bool {
		lag := s.IndexLag()
		return lag.Behind == 0 && lag.BehindSessions == 0 && !lag.Unavailable
	})
	// What this process saves is queued, then indexed; never behind.
	appendBatches(t, s, "s0", [][]storage.Record{{{Data: []byte(`{"text":"more"}`)}}})
	waitFor(t, 30*time.Second, "the queue to drain", func() bool {
		lag := s.IndexLag()
		return lag.Queued == 0 && lag.Behind == 0
	})
}
