package ftsindex

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

func TestIndexProgress(t *testing.T) {
	ix := openTest(t, "")
	s := sess("p")
	ctx := t.Context()
	index := func(from, through uint64, docs ...fts.Doc) Progress {
		t.Helper()
		p, err := ix.Index(ctx, Batch{Session: s, From: from, Through: through, Docs: docs})
		if err != nil {
			t.Fatal(err)
		}
		return p[0]
	}
	if p, err := ix.Progress(ctx, "p"); err != nil || p.Through != 0 || p.Deleted {
		t.Fatalf("unknown session: %+v %v", p, err)
	}
	// 1..3 with a non-searchable record at 2.
	if p := index(1, 3, doc("p", 1, "user", "one"), doc("p", 3, "user", "three")); p.Through != 3 {
		t.Fatalf("progress %d, want 3", p.Through)
	}
	// A gap (5..6 while 4 is missing) is indexed but does not move the progress.
	if p := index(5, 6, doc("p", 5, "user", "five")); p.Through != 3 {
		t.Fatalf("after a gap: progress %d, want 3", p.Through)
	}
	if got := search(t, ix, Query{Match: mustParse(t, "five")}); len(got) != 1 {
		t.Fatalf("doc of the gap batch not found: %v", got)
	}
	// Catching up 4..6 again: 5 is not duplicated; the progress moves to 6.
	if p := index(4, 6, doc("p", 4, "user", "four"), doc("p", 5, "user", "five")); p.Through != 6 {
		t.Fatalf("after catch-up: progress %d, want 6", p.Through)
	}
	if got := search(t, ix, Query{Match: mustParse(t, "five")}); len(got) != 1 {
		t.Fatalf("five indexed %d times", len(got))
	}
	// An old range again changes nothing and never moves the progress back.
	if p := index(1, 2, doc("p", 1, "user", "one")); p.Through != 6 {
		t.Fatalf("progress went to %d", p.Through)
	}
	if st, _ := ix.Stats(ctx); st.Docs != 4 || st.Sessions != 1 {
		t.Fatalf("stats %+v, want 4 docs in 1 session", st)
	}
	p, err := ix.Progress(ctx, "p")
	if err != nil || p.Through != 6 || !p.Created.Equal(t0) {
		t.Fatalf("Progress = %+v, %v", p, err)
	}
	all, err := ix.Sessions(ctx)
	if err != nil || len(all) != 1 || all[0].SessionID != "p" || all[0].Through != 6 {
		t.Fatalf("Sessions = %+v, %v", all, err)
	}
}

func TestIndexUpdatesSessionMetadata(t *testing.T) {
	ix := openTest(t, "")
	s := sess("m")
	feed(t, ix, s, doc("m", 1, "user", "hello"))
	// A new name is taken as is.
	s.Name = "renamed"
	if _, err := ix.Index(t.Context(), Batch{Session: s, From: 2, Through: 2}); err != nil {
		t.Fatal(err)
	}
	res, _ := ix.Search(t.Context(), Query{Match: mustParse(t, "hello"), WorkingDir: "/w/m"})
	if len(res.Hits) != 1 || res.Hits[0].SessionName != "renamed" {
		t.Fatalf("hits %+v", res.Hits)
	}
	// A new working directory is in every doc's filter terms: the session starts over, and
	// the progress tells the caller to feed it from the start.
	s.WorkingDir = "/moved"
	p, err := ix.Index(t.Context(), Batch{Session: s, From: 3, Through: 3})
	if err != nil || p[0].Through != 0 {
		t.Fatalf("progress %+v, %v; want 0", p, err)
	}
	feed(t, ix, s, doc("m", 1, "user", "hello"))
	if got := search(t, ix, Query{Match: mustParse(t, "hello"), WorkingDir: "/moved"}); len(got) != 1 {
		t.Fatalf("after the move: %v", got)
	}
	if got := search(t, ix, Query{Match: mustParse(t, "hello"), WorkingDir: "/w/m"}); len(got) != 0 {
		t.Fatalf("old directory still finds: %v", got)
	}
}

func TestIndexBadBatches(t *testing.T) {
	ix := openTest(t, "")
	s := sess("x")
	tests := []struct {
		name string
		b    Batch
	}{
		{"no session", Batch{From: 1, Through: 1}},
		{"from zero", Batch{Session: s, From: 0, Through: 1}},
		{"through before from", Batch{Session: s, From: 3, Through: 2}},
		{"doc outside range", Batch{Session: s, From: 1, Through: 2, Docs: []fts.Doc{doc("x", 3, "user", "t")}}},
		{"doc of another session", Batch{Session: s, From: 1, Through: 2, Docs: []fts.Doc{doc("y", 1, "user", "t")}}},
		{"bad kind", Batch{Session: s, From: 1, Through: 1, Docs: []fts.Doc{{SessionID: "x", Seq: 1, Kind: "label"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ix.Index(t.Context(), tt.b); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
	// A bad batch among good ones writes nothing.
	_, err := ix.Index(t.Context(), Batch{Session: s, From: 1, Through: 1, Docs: []fts.Doc{doc("x", 1, "user", "good")}}, tests[2].b)
	if err == nil {
		t.Fatal("no error")
	}
	if st, _ := ix.Stats(t.Context()); st.Docs != 0 {
		t.Fatalf("%d docs written", st.Docs)
	}
}

func TestDeleteSession(t *testing.T) {
	ix := openTest(t, "")
	ctx := t.Context()
	a, b := sess("a"), sess("b")
	feed(t, ix, a, doc("a", 1, "user", "shared word", "/w/a/f.go"), doc("a", 2, "user", "only in a"))
	feed(t, ix, b, doc("b", 1, "user", "shared word"))
	if err := ix.DeleteSession(ctx, "a", a.Created); err != nil {
		t.Fatal(err)
	}
	if got := search(t, ix, Query{Match: mustParse(t, "shared")}); !slices.Equal(got, []string{"b-e1"}) {
		t.Fatalf("after delete: %v", got)
	}
	if got := search(t, ix, Query{File: "/w/a/f.go"}); len(got) != 0 {
		t.Fatalf("file filter finds deleted docs: %v", got)
	}
	// A slow writer's batch for the deleted incarnation is ignored.
	p, err := ix.Index(ctx, Batch{Session: a, From: 3, Through: 3, Docs: []fts.Doc{doc("a", 3, "user", "late only in a")}})
	if err != nil || !p[0].Deleted {
		t.Fatalf("late batch: %+v %v", p, err)
	}
	if got := search(t, ix, Query{Match: mustParse(t, "only")}); len(got) != 0 {
		t.Fatalf("deleted session found again: %v", got)
	}
	if pr, _ := ix.Progress(ctx, "a"); !pr.Deleted {
		t.Fatalf("progress %+v, want deleted", pr)
	}
	// The same id created again (another Created) is indexed.
	a2 := a
	a2.Created = a.Created.Add(time.Hour)
	feed(t, ix, a2, doc("a", 1, "user", "reborn"))
	if got := search(t, ix, Query{Match: mustParse(t, "reborn")}); len(got) != 1 {
		t.Fatalf("recreated session: %v", got)
	}
	// Re-creation without a delete (the index missed it) replaces the old docs.
	a3 := a2
	a3.Created = a2.Created.Add(time.Hour)
	feed(t, ix, a3, doc("a", 1, "user", "third life"))
	if got := search(t, ix, Query{Match: mustParse(t, "reborn")}); len(got) != 0 {
		t.Fatalf("old incarnation still found: %v", got)
	}
	if st, _ := ix.Stats(ctx); st.Docs != 2 {
		t.Fatalf("docs %d, want 2", st.Docs)
	}
	// Forgetting a session drops its docs and progress but leaves no tombstone.
	if err := ix.ForgetSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if pr, _ := ix.Progress(ctx, "a"); pr.Through != 0 || pr.Deleted {
		t.Fatalf("after ForgetSession: %+v", pr)
	}
	feed(t, ix, a3, doc("a", 1, "user", "fed again"))
	if got := search(t, ix, Query{Match: mustParse(t, "fed")}); len(got) != 1 {
		t.Fatalf("after ForgetSession and feeding: %v", got)
	}
	if err := ix.ForgetSession(ctx, "unknown"); err != nil {
		t.Fatal(err)
	}
	// Deleting an unknown session is fine.
	if err := ix.DeleteSession(ctx, "never", t0); err != nil {
		t.Fatal(err)
	}
	if err := ix.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestMaxTextBytes(t *testing.T) {
	ix, err := Open(t.Context(), t.TempDir(), Options{MaxTextBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	feed(t, ix, sess("l"), doc("l", 1, "user", "early "+strings.Repeat("x ", 100)+"late"))
	if got := search(t, ix, Query{Match: mustParse(t, "early")}); len(got) != 1 {
		t.Fatal("early word not found")
	}
	if got := search(t, ix, Query{Match: mustParse(t, "late")}); len(got) != 0 {
		t.Fatal("word past MaxTextBytes found")
	}
}

// TestNoTextInFile checks the contentless promise: a doc's text is not stored, so a secret
// that reached a doc's text is not in the file's bytes as text. (Redaction happens before the
// index in memory; this shows the index adds no copy of its own.)
func TestNoTextInFile(t *testing.T) {
	dir := t.TempDir()
	ix := openTest(t, dir)
	feed(t, ix, sess("s"), doc("s", 1, "user", "the launch code is zebra quokka walrus penguin"))
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	raw := readAll(t, dir)
	if strings.Contains(raw, "zebra quokka walrus") {
		t.Fatal("the text is stored in the index files")
	}
}
