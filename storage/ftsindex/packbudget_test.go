package ftsindex

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// TestPackedBudget: once the packed segments pass the budget, Merge rewrites the oldest of
// them as rows, so what a searching process keeps decoded stays bounded however much is
// saved, and every search answers exactly as an index that never did so.
func TestPackedBudget(t *testing.T) {
	bounded, plain := openTest(t, ""), openTest(t, "")
	bounded.packBudget = 24 << 10
	rng := rand.New(rand.NewPCG(3, 4))
	for call := range 40 {
		var batches []Batch
		for k := range 6 {
			id := fmt.Sprintf("p%04d", call*6+k)
			var docs []fts.Doc
			for seq := uint64(1); seq <= 4; seq++ {
				var text strings.Builder
				for range 60 {
					fmt.Fprintf(&text, "w%d ", rng.IntN(30000))
				}
				fmt.Fprintf(&text, "common%d unique%s", call%7, id)
				docs = append(docs, doc(id, seq, "user", text.String()))
				texts.Store(textKey{id, seq}, text.String())
			}
			batches = append(batches, Batch{Session: sess(id), From: 1, Through: 4, Docs: docs})
		}
		for _, ix := range []*Index{bounded, plain} {
			if _, err := ix.Index(t.Context(), batches...); err != nil {
				t.Fatal(err)
			}
			if err := ix.Merge(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	segs := segmentsOf(t, bounded)
	packed, rowsSmall := 0, 0
	for _, s := range segs {
		packed += s.packed
		if s.packed == 0 && s.ndocs < packLimit {
			rowsSmall++
		}
	}
	if packed > bounded.packBudget || rowsSmall == 0 {
		t.Fatalf("packed postings %d bytes (budget %d), %d small segments as rows: %+v", packed, bounded.packBudget, rowsSmall, segs)
	}
	plainPacked := 0
	for _, s := range segmentsOf(t, plain) {
		plainPacked += s.packed
	}
	if plainPacked <= bounded.packBudget {
		t.Fatalf("the test saves too little to pass the budget: %d bytes packed without it", plainPacked)
	}
	for _, q := range []string{"common3", "unique p0100", "w17 w2001 w29999", `"w5 w6"`, "w123*", "common1 -common2", "p0007"} {
		a, b := searchHits(t, bounded, q), searchHits(t, plain, q)
		if !slices.Equal(a, b) {
			t.Errorf("%q: bounded index %v, plain %v", q, a, b)
		}
	}
}

// segmentsOf lists ix's segments through a connection of the test's own.
func segmentsOf(t *testing.T, ix *Index) []segMeta {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+escapePath(ix.File())+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	segs, err := listSegments(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// searchHits is every hit of q, as entry id and score, in order.
func searchHits(t *testing.T, ix *Index, q string) []string {
	t.Helper()
	res, err := ix.Search(t.Context(), Query{Match: mustParse(t, q), Limit: 50, Text: textOf})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range res.Hits {
		out = append(out, fmt.Sprintf("%s %.6f", h.EntryID, h.Score))
	}
	return out
}
