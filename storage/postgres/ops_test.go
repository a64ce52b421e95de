package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/storetest"
)

// TestOpsReadings: Ping answers, the pool's figures count connections, and IndexLag reports
// what the backfill found missing while it works and nothing once it is done.
func TestOpsReadings(t *testing.T) {
	u := newSchema(t)
	plain := openStore(t, u, Options{}) // stores records without search documents
	for _, id := range []string{"a", "b"} {
		mustCreate(t, plain, id)
		appendN(t, plain, id, 5, false)
	}
	if lag := plain.IndexLag(); !lag.Unavailable {
		t.Fatalf("a store without documents reports %+v", lag)
	}

	s := openStore(t, u, Options{Docs: storetest.Docs, BackfillInterval: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if st := s.PoolStat(); st.TotalConns() < 1 || st.MaxConns() < 1 || st.AcquireCount() < 1 {
		t.Fatalf("pool: %d conns of %d, %d acquires", st.TotalConns(), st.MaxConns(), st.AcquireCount())
	}
	var first bool
	err := s.Reindex(ctx, func(storage.ReindexProgress) {
		if first {
			return
		}
		first = true
		if lag := s.IndexLag(); lag.Behind != 10 || lag.BehindSessions != 2 || lag.Unavailable {
			t.Errorf("during the backfill: %+v, want 10 records of 2 sessions behind", lag)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "a", 3, false)
	deadline := time.Now().Add(10 * time.Second)
	for lag := s.IndexLag(); lag.Queued != 0 || lag.Behind != 0; lag = s.IndexLag() {
		if time.Now().After(deadline) {
			t.Fatalf("still %+v after 10 s", lag)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
