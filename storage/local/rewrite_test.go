package local

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestRewrite: a rewrite replaces exactly the records fn changes, keeps seqs, kinds and frame
// boundaries (a compaction still starts a frame), leaves no old byte on disk, and a failing
// fn changes nothing.
func TestRewrite(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	ctx := context.Background()
	mustCreate(t, s, "a")
	batches := [][]storage.Record{
		{{Kind: "message", Data: []byte(`{"id":"1","text":"old secret one"}`)}, {Kind: "message", Data: []byte(`{"id":"2","text":"keep"}`)}},
		{{Kind: "compaction", Data: []byte(`{"id":"3","text":"old secret two"}`), Barrier: true}},
		{{Kind: "message", Data: []byte(`{"id":"4","text":"old secret three, in the tail"}`)}},
	}
	want := appendBatches(t, s, "a", batches)
	before, err := s.verifyFiles(ctx, "a", false)
	if err != nil {
		t.Fatal(err)
	}
	fn := func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		h.WorkingDir = "/work/clean"
		out := make([][]byte, len(recs))
		for i, r := range recs {
			if bytes.Contains(r.Data, []byte("old secret")) {
				d := bytes.ReplaceAll(r.Data, []byte("old secret"), []byte("[REDACTED]"))
				d = append([]byte("{"), d[bytes.IndexByte(d, ',')+1:]...) // drop "seq"
				out[i] = d
			}
		}
		return h, out, storage.Meta{Name: "clean"}, nil
	}
	boom := errors.New("boom")
	if _, err := s.Rewrite(ctx, "a", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		return h, nil, storage.Meta{}, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failing fn: %v", err)
	}
	if got, _ := readAll(t, s, "a", 1); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatal("a failing fn changed the session")
	}
	changed, err := s.Rewrite(ctx, "a", fn)
	if err != nil || !changed {
		t.Fatalf("Rewrite: %v, %v", changed, err)
	}
	got, err := readAllWriter(s, "a")
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		w := strings.ReplaceAll(want[i], "old secret", "[REDACTED]")
		if got[i] != w {
			t.Fatalf("record %d: got %s, want %s", i+1, got[i], w)
		}
	}
	after, err := s.verifyFiles(ctx, "a", false)
	if err != nil || after.Records != before.Records || after.Frames != before.Frames+1 {
		t.Fatalf("verify after: %+v (before %+v), %v", after, before, err)
	}
	m, err := s.Get(ctx, "a")
	if err != nil || m.Name != "clean" || m.WorkingDir != "/work/clean" || m.LastSeq != 4 {
		t.Fatalf("meta after: %+v, %v", m, err)
	}
	if changed, err := s.Rewrite(ctx, "a", fn); err != nil || changed {
		t.Fatalf("second rewrite changed %v, %v", changed, err)
	}
	// Appending after a rewrite works and continues the seqs.
	if err := s.updateW(ctx, "a", func(w *Writer) error {
		_, err := w.Append([]storage.Record{{Kind: "message", Data: []byte(`{"id":"5"}`)}}, storage.Meta{Name: "clean"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.CompactMeta(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := mustOpen(t, dir, Options{})
	if got, err := readAll(t, s2, "a", 1); err != nil || len(got) != 5 {
		t.Fatalf("reopen: %d records, %v", len(got), err)
	}
	ents, _ := os.ReadDir(dir + "/sessions")
	var all []byte
	for _, e := range ents {
		b, _ := os.ReadFile(dir + "/sessions/" + e.Name())
		all = append(all, b...)
	}
	hdr, lines := indexFileLines(t, dir)
	all = append(all, hdr...)
	for _, l := range lines {
		all = append(all, l...)
	}
	for _, old := range []string{"old secret", "n-a", "/work/a"} {
		if bytes.Contains(all, []byte(old)) {
			t.Errorf("%q left on disk", old)
		}
	}
}
