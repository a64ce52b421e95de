package ftsindex

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// TestCloseTidiesIndex: Close merges the small segments the last saves made into one and
// gives the pages that frees back to the file system, and the index reads the same
// afterwards.
func TestCloseTidiesIndex(t *testing.T) {
	longTidy(t)
	dir := t.TempDir()
	ix, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// What a queue's flushes make of saves to many sessions: an Index call of a few
	// sessions' messages every 100 ms, each a segment, every eighth a merge that frees the
	// pages of the ones before.
	rng := rand.New(rand.NewPCG(1, 2))
	for call := range 30 {
		batches := fiveDocSessions(rng, call*10, call*10+10, 100, func(id string, seq uint64) string {
			if seq == 5 {
				return "unique" + id
			}
			return ""
		})
		if _, err := ix.Index(context.Background(), batches...); err != nil {
			t.Fatal(err)
		}
	}
	path := ix.File()
	stat := func() (segs, pages, free int64) {
		t.Helper()
		v := fileInts(t, path, `SELECT count(*) FROM segments`, `PRAGMA page_count`, `PRAGMA freelist_count`)
		return v[0], v[1], v[2]
	}
	segs0, pages0, free0 := stat()
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	segs1, pages1, free1 := stat()
	t.Logf("before Close %d segments, %d pages (%d free); after %d segments, %d pages (%d free)", segs0, pages0, free0, segs1, pages1, free1)
	if segs1 != 1 || free1 != 0 || 10*pages1 > 7*pages0 {
		t.Fatalf("after Close %d segments, %d pages with %d free; want one segment, under 70%% of the %d pages, none free", segs1, pages1, free1, pages0)
	}
	ix = openTest(t, dir)
	for _, id := range []string{"s0000", "s0150", "s0299"} {
		if got := search(t, ix, Query{Match: mustParse(t, "unique"+id)}); len(got) != 1 {
			t.Fatalf("search for %s after Close: %v", id, got)
		}
	}
}

// longTidy gives Close's tidy a minute for the rest of the test: a loaded machine may take
// more than its second for the merge (then left for a later Close), and these tests are
// about what it does.
func longTidy(t *testing.T) {
	d := closeTidyTimeout
	closeTidyTimeout = time.Minute
	t.Cleanup(func() { closeTidyTimeout = d })
}

// fiveDocSessions returns a batch for each of the sessions s<from>..s<to-1> (four digits),
// each of 5 user docs of words random words from rng followed by unique(id, seq), and keeps
// their texts for Query.Text as feed does.
func fiveDocSessions(rng *rand.Rand, from, to, words int, unique func(id string, seq uint64) string) []Batch {
	var batches []Batch
	for k := from; k < to; k++ {
		id := fmt.Sprintf("s%04d", k)
		var docs []fts.Doc
		for seq := uint64(1); seq <= 5; seq++ {
			var text strings.Builder
			for range words {
				fmt.Fprintf(&text, "w%d ", rng.IntN(20000))
			}
			text.WriteString(unique(id, seq))
			docs = append(docs, doc(id, seq, "user", text.String()))
			texts.Store(textKey{id, seq}, text.String())
		}
		batches = append(batches, Batch{Session: sess(id), From: 1, Through: 5, Docs: docs})
	}
	return batches
}

// fileInts runs queries of one integer each on the index file at path, opened read-only.
func fileInts(t *testing.T, path string, queries ...string) []int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+escapePath(path)+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := make([]int64, len(queries))
	for i, q := range queries {
		if err := db.QueryRow(q).Scan(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestCloseRun: Close merges the newest run of two or more packed, non-final segments that
// fit in a packed segment together, even when the newest segment is too large to join them.
func TestCloseRun(t *testing.T) {
	seg := func(id int64, ndocs int) segMeta {
		return segMeta{id: id, level: 1, ndocs: ndocs, packed: 100}
	}
	final, rows := seg(9, 10), seg(8, 10)
	final.level, rows.packed = finalLevel, 0
	for _, tt := range []struct {
		name string
		segs []segMeta
		want []int64
	}{
		{"newest run", []segMeta{seg(1, closeMergeDocs-500), seg(2, 500), seg(3, 400)}, []int64{2, 3}},
		{"all of them", []segMeta{seg(1, 300), seg(2, 500), seg(3, 400)}, []int64{1, 2, 3}},
		{"newest too large to join", []segMeta{seg(1, 550), seg(2, 435), seg(3, closeMergeDocs-400)}, []int64{1, 2}},
		{"one alone", []segMeta{seg(1, 550), seg(2, closeMergeDocs-500)}, nil},
		// What a store of 1,000 5-message sessions is left with after its saves: two packed
		// segments that make one larger than packLimit, which Close's merge still packs.
		{"past packLimit", []segMeta{seg(1, 1320), seg(2, 3680)}, []int64{1, 2}},
		{"exactly closeMergeDocs", []segMeta{seg(1, closeMergeDocs-1000), seg(2, 1000)}, []int64{1, 2}},
		{"behind a final one", []segMeta{seg(1, 20), seg(2, 30), final}, []int64{1, 2}},
		{"not across rows", []segMeta{seg(1, 20), rows, seg(3, 30)}, nil},
		{"none", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			for _, s := range closeRun(tt.segs) {
				got = append(got, s.id)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("closeRun picked %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCloseMergePacksPastPackLimit: Close's merge keeps its segment packed up to
// closePackLimit docs, more than a segment the saves or the level merges pack, and the
// index reads the same afterwards.
func TestCloseMergePacksPastPackLimit(t *testing.T) {
	longTidy(t)
	dir := t.TempDir()
	ix, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	unique := func(id string, seq uint64) string { return fmt.Sprintf("unique%s%d", id, seq) }
	// Two segments of 1,320 and 3,680 docs (levels 1 and 2: no merge is due), 5,000 together.
	for _, r := range [][2]int{{0, 264}, {264, 1000}} {
		if _, err := ix.Index(context.Background(), fiveDocSessions(rng, r[0], r[1], 20, unique)...); err != nil {
			t.Fatal(err)
		}
	}
	path := ix.File()
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	v := fileInts(t, path, `SELECT count(*) FROM segments`, `SELECT sum(ndocs) FROM segments`, `SELECT sum(packed IS NOT NULL) FROM segments`)
	segs, ndocs, packed := v[0], v[1], v[2]
	if segs != 1 || ndocs != 5000 || packed != 1 || ndocs < packLimit {
		t.Fatalf("after Close: %d segments of %d docs, %d packed; want one packed segment of 5000", segs, ndocs, packed)
	}
	ix = openTest(t, dir)
	for _, want := range []string{"uniques00001", "uniques02635", "uniques02645", "uniques09995"} {
		if got := search(t, ix, Query{Match: mustParse(t, want)}); len(got) != 1 {
			t.Fatalf("search for %s after Close: %v", want, got)
		}
	}
}
