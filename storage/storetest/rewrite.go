package storetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// testRewrite checks storage.Rewriter, for stores that implement it: records keep their seq,
// kind and order, only their Data changes; the header and metadata are what fn returned; a
// failing fn or one that changes nothing changes nothing; the old text is found neither by a
// read nor by a search, from any handle; appends continue after it.
func testRewrite(t *testing.T, b Backend) {
	s, loc := open(t, b)
	rw, ok := s.(storage.Rewriter)
	if !ok {
		t.Skip("the store does not implement storage.Rewriter")
	}
	ctx := context.Background()
	create(t, s, "r", "/w", t0)
	create(t, s, "other", "/w", t0)
	saveMsgs(t, s, "r",
		msg{id: "e1", role: "user", text: "my token is SECRET-123 do not share", at: t0},
		msg{id: "e2", role: "assistant", text: "noted, nothing to hide here", at: t0.Add(time.Minute)},
	)
	appendJSON(t, s, "r", storage.Meta{Name: "about SECRET-123", Messages: 2}, summary("k1", "the user shared SECRET-123", t0.Add(2*time.Minute)))
	saveMsgs(t, s, "other", msg{id: "o1", role: "user", text: "SECRET-123 elsewhere stays", at: t0})
	before := readAll(t, s, "r", 1)
	scrub := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("SECRET-123"), []byte("[redacted]")) }

	// A failing fn changes nothing.
	boom := errors.New("boom")
	if _, err := rw.Rewrite(ctx, "r", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		return h, nil, storage.Meta{}, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failing fn: %v", err)
	}
	// An fn that keeps everything reports no change.
	changed, err := rw.Rewrite(ctx, "r", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		return h, make([][]byte, len(recs)), storage.Meta{Name: "about SECRET-123", Messages: 2}, nil
	})
	if err != nil || changed {
		t.Fatalf("no-op rewrite: changed %v, %v", changed, err)
	}
	if got := readAll(t, s, "r", 1); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Fatal("a rewrite that failed or changed nothing changed the records")
	}
	if _, err := rw.Rewrite(ctx, "nope", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		return h, nil, storage.Meta{}, nil
	}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("rewrite of a missing session: %v", err)
	}

	changed, err = rw.Rewrite(ctx, "r", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		out := make([][]byte, len(recs))
		for i, rec := range recs {
			if bytes.Contains(rec.Data, []byte("SECRET-123")) {
				d, _ := storage.StripSeq(rec.Data)
				out[i] = scrub(d)
			}
		}
		return h, out, storage.Meta{Name: "about [redacted]", Messages: 2, Updated: t0.Add(time.Hour)}, nil
	})
	if err != nil || !changed {
		t.Fatalf("rewrite: changed %v, %v", changed, err)
	}
	if err := rw.CompactMeta(ctx); err != nil {
		t.Fatalf("compact meta: %v", err)
	}
	other := b.Open(t, loc)
	defer other.Close()
	for _, st := range []storage.Store{s, other} {
		got := readAll(t, st, "r", 1)
		if len(got) != len(before) {
			t.Fatalf("%d records after rewrite, %d before", len(got), len(before))
		}
		for i := range got {
			if want := string(scrub([]byte(before[i]))); got[i] != want {
				t.Fatalf("record %d after rewrite\n got %s\nwant %s", i+1, got[i], want)
			}
		}
		m, err := st.Get(ctx, "r")
		if err != nil || m.Name != "about [redacted]" || m.LastSeq != 3 || !m.Updated.Equal(t0.Add(time.Hour)) {
			t.Fatalf("meta after rewrite: %+v, %v", m, err)
		}
		if l, _ := st.List(ctx, storage.ListQuery{Text: "SECRET"}); len(l) != 0 {
			t.Fatalf("listing still finds the old name: %+v", l)
		}
		if _, ok := st.(storage.Searcher); ok {
			if got := hitIDs(search(t, st, `"secret 123"`, storage.SearchQuery{})); strings.Join(got, " ") != "other/o1" {
				t.Fatalf("search finds the rewritten text: %v", got)
			}
			if got := sorted(hitIDs(search(t, st, "redacted", storage.SearchQuery{}))); strings.Join(got, " ") != "r/e1 r/k1" {
				t.Fatalf("search for the new text: %v", got)
			}
		}
	}
	// The session goes on.
	if recs := appendJSON(t, s, "r", storage.Meta{}, `{"type":"message","after":true}`); recs[0].Seq != 4 {
		t.Fatalf("append after rewrite got seq %d", recs[0].Seq)
	}
	if rep, err := s.Verify(ctx, "r", false); err != nil || rep.Damaged() != nil || rep.Records != 4 {
		t.Fatalf("verify after rewrite: %+v, %v", rep, err)
	}
}

// testSettings checks storage.Settings, for stores that implement it.
func testSettings(t *testing.T, b Backend) {
	s, loc := open(t, b)
	st, ok := s.(storage.Settings)
	if !ok {
		t.Skip("the store does not implement storage.Settings")
	}
	ctx := context.Background()
	if v, ok, err := st.GetSetting(ctx, "k"); err != nil || ok || v != "" {
		t.Fatalf("missing setting: %q %v %v", v, ok, err)
	}
	for _, v := range []string{"one", "two", ""} {
		if err := st.PutSetting(ctx, "k", v); err != nil {
			t.Fatal(err)
		}
		other := b.Open(t, loc)
		got, ok, err := other.(storage.Settings).GetSetting(ctx, "k")
		other.Close()
		if err != nil || !ok || got != v {
			t.Fatalf("after put %q, another handle reads %q %v %v", v, got, ok, err)
		}
	}
}
