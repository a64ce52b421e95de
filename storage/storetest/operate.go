package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// testOperate checks the optional interfaces an operator's commands read (storage.Sizer,
// Reindexer, IndexStatser, IndexVerifier), for stores that implement them: sizes that add up,
// a reindex whose progress ends done, and an index that then holds every message, intact.
func testOperate(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	create(t, s, "a", "/w", t0)
	const messages = 5
	for i := range messages {
		appendJSON(t, s, "a", storage.Meta{}, fmt.Sprintf(
			`{"type":"message","id":"m%d","message":{"role":"user","content":[{"type":"text","text":"operate %d"}]}}`, i, i))
	}
	offered := 0
	if sz, ok := s.(storage.Sizer); ok {
		offered++
		size, err := sz.Size(ctx)
		if err != nil || size.Sessions <= 0 || size.Index < 0 || size.Total < size.Sessions+size.Index {
			t.Fatalf("Size: %+v, %v", size, err)
		}
	}
	if rx, ok := s.(storage.Reindexer); ok {
		offered++
		var last storage.ReindexProgress
		calls := 0
		if err := rx.Reindex(ctx, func(p storage.ReindexProgress) { last, calls = p, calls+1 }); err != nil {
			t.Fatalf("Reindex: %v", err)
		}
		if calls == 0 || !last.Done() {
			t.Fatalf("Reindex: %d progress calls, the last %+v", calls, last)
		}
	}
	if st, ok := s.(storage.IndexStatser); ok {
		offered++
		stats, err := st.IndexStats(ctx)
		if err != nil || stats.Bytes <= 0 || stats.PerRecord && (stats.Records != messages || stats.TotalRecords != messages) ||
			!stats.PerRecord && (stats.Entries != messages || stats.Sessions != 1 || stats.Rebuilding) {
			t.Fatalf("IndexStats: %+v, %v", stats, err)
		}
	}
	if iv, ok := s.(storage.IndexVerifier); ok {
		offered++
		if err := iv.VerifyIndex(ctx); err != nil {
			t.Fatalf("VerifyIndex: %v", err)
		}
	}
	if offered == 0 {
		t.Skip("the store implements none of them")
	}
}
