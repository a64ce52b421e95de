package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/storetest"
)

// BenchmarkAppendSaves: what a stream of session_save calls of one ~2 KB corpus message asks
// of a store with Docs: one Update after the other into one session, each committed with
// fsync, the documents written as the store writes them (since schema 3 after the commit, by
// the store's writer, which competes for the same cores meanwhile). The median of the
// Updates is reported.
func BenchmarkAppendSaves(b *testing.B) {
	c := loadBenchCorpus(b)
	s := openStore(b, benchDB(b), Options{Docs: storetest.Docs, BackfillInterval: -1})
	ctx := context.Background()
	if err := s.Create(ctx, storage.Header{ID: "a", WorkingDir: "/home/dev/p"}, storage.Meta{}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var ds []time.Duration
	for i := 0; b.Loop(); i++ {
		m := c.message(rng, i, "/home/dev/p", time.Now())
		start := time.Now()
		err := s.Update(ctx, "a", func(w storage.Writer) error {
			_, err := w.Append([]storage.Record{{Kind: "message", Data: m, Key: fmt.Sprintf("k%d", i)}}, storage.Meta{Messages: i + 1})
			return err
		})
		ds = append(ds, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	medianOf(b, ds)
}
