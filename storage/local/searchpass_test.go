package local

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/ftsindex"
)

// The syncer's passes (searchpass.go, searchfeed.go) when they are cut short or race a
// rewrite, and the first pass's shortcut for sessions already indexed.

// TestSearchRebuildClosedPartWay: a store closed while its syncer rebuilds the index leaves
// the rebuild marked incomplete (searches then scan the sessions) until some process has
// indexed every session. Close stops the syncer's reads (the store refuses them) before it
// cancels the syncer, while it seals what it wrote; a read stopped so was once taken for the
// end of the rebuild, which left sessions out of the index for good.
func TestSearchRebuildClosedPartWay(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IdleSeal: -1})
	const n = 30
	want := map[string]uint64{}
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		mustCreate(t, s, id)
		for range 4 {
			appendText(t, s, id, strings.Repeat(fmt.Sprintf("rebuild%d words ", i), 200))
		}
		want[id] = 4
	}
	mustCreate(t, s, "w")
	s.Close()
	marker := filepath.Join(dir, searchDirName, rebuildName)
	// A pass stopped by Close is not a failure: nothing is logged about it (a CLI command
	// would print it on stderr).
	logs := &logCounter{}
	opts := searchOpts()
	opts.Logger = slog.New(logs)
	defer func() {
		if n := logs.count("catch-up failed"); n > 0 {
			t.Errorf("%d warnings about a stopped pass: %v", n, logs.msgs)
		}
	}()
	for round := 0; ; round++ {
		s := mustOpen(t, dir, opts)
		time.Sleep(time.Duration(round) * time.Millisecond / 2)
		// A save, so that Close has a session to seal (with its fsyncs) between refusing
		// reads and stopping the syncer.
		appendText(t, s, "w", "written")
		want["w"]++
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(marker); err == nil {
			if round > 400 {
				t.Fatal("the rebuild never completed")
			}
			continue
		}
		ix, err := ftsindex.Open(context.Background(), filepath.Join(dir, searchDirName), ftsindex.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ps, err := ix.Sessions(context.Background())
		ix.Close()
		if err != nil {
			t.Fatal(err)
		}
		var short []string
		for _, p := range ps {
			if p.Through != want[p.SessionID] && p.SessionID != "w" {
				short = append(short, fmt.Sprintf("%s through %d of %d", p.SessionID, p.Through, want[p.SessionID]))
			}
		}
		if len(ps) < n || len(short) > 0 {
			t.Fatalf("round %d: no rebuild marker, but the index has %d of %d sessions, short: %v", round, len(ps), n+1, short)
		}
		return
	}
}

// TestSearchFirstPassNewIncarnation: a session deleted and created again with as many records
// by a process without the index is indexed to the same seq under another Created; the next
// open's first pass must not take it for up to date (it reads only Created for that), and its
// first search finds the new text, not the old.
func TestSearchFirstPassNewIncarnation(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, searchOpts())
	mustCreate(t, s, "r")
	appendText(t, s, "r", "oldlife words")
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "oldlife")}, 1, 2*time.Second)
	s.Close()
	s = mustOpen(t, dir, Options{IdleSeal: -1})
	if err := s.Delete(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "r")
	appendText(t, s, "r", "newlife words")
	s.Close()
	s = mustOpen(t, dir, searchOpts())
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "newlife")}, 1, 0)
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "oldlife")}, 0, 0)
}

// TestSearchReindexBesideRewrite: a session rewritten (redacted) while Reindex reads the store
// does not fail the reindex: its next pass replaces the index and starts again, and the old
// text leaves the index.
func TestSearchReindexBesideRewrite(t *testing.T) {
	s := mustOpen(t, t.TempDir(), searchOpts())
	const n = 30
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		mustCreate(t, s, id)
		for range 4 {
			appendText(t, s, id, strings.Repeat(fmt.Sprintf("reindexed%d words ", i), 200))
		}
	}
	appendText(t, s, "s00", "token oldsecret here")
	for round := range 8 {
		done := make(chan error, 1)
		go func() { done <- s.Reindex(context.Background(), func(storage.ReindexProgress) {}) }()
		time.Sleep(time.Duration(round) * 2 * time.Millisecond)
		_, err := s.Rewrite(context.Background(), "s00", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
			out := make([][]byte, len(recs))
			out[len(recs)-1] = fmt.Appendf(nil, `{"text":"token [REDACTED] here %d","role":"user"}`, round)
			return h, out, storage.Meta{Name: "n-s00"}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("round %d: Reindex beside a rewrite: %v", round, err)
		}
	}
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "oldsecret")}, 0, 5*time.Second)
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "redacted")}, 1, 5*time.Second)
	for i := range n {
		waitHits(t, s, storage.SearchQuery{Match: mustParse(t, fmt.Sprintf("reindexed%d", i))}, 4, 5*time.Second)
	}
}
