package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// snapshotStore makes a store of 40 sessions with a compacted index and returns its
// directory and the index's entry lines.
func snapshotStore(t *testing.T) (string, [][]byte) {
	t.Helper()
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IdleSeal: -1, MaxPlainBytes: -1})
	for i := range 40 {
		id := fmt.Sprintf("s%02d", i)
		mustCreate(t, s, id)
		appendOne(t, s, id, storage.Meta{Name: "name of " + id, Messages: 1})
	}
	if err := s.CompactMeta(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, lines := indexFileLines(t, dir)
	return dir, lines
}

// TestIndexSnapshot: a rewritten index keeps its lines compressed after the header line
// (version 2); a store that had the old file folded reads the new one, and then the lines
// appended after the snapshot, incrementally; a version 1 index (earlier builds) is read as
// it is, nothing summarised again, until a rewrite makes it version 2.
func TestIndexSnapshot(t *testing.T) {
	dir := t.TempDir()
	calls := 0
	opts := Options{IdleSeal: -1, MaxPlainBytes: -1, Summarize: countingSummarize(&calls)}
	a, b := mustOpen(t, dir, opts), mustOpen(t, dir, opts)
	for i := range 40 {
		id := fmt.Sprintf("s%02d", i)
		mustCreate(t, a, id)
		appendOne(t, a, id, storage.Meta{Name: "name of " + id, Messages: 1})
	}
	if l, err := b.List(t.Context(), storage.ListQuery{}); err != nil || len(l) != 40 {
		t.Fatalf("b lists %d sessions (%v), want 40", len(l), err)
	}
	if err := a.CompactMeta(t.Context()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, indexName))
	if err != nil {
		t.Fatal(err)
	}
	hdr, lines := indexFileLines(t, dir)
	var h indexHeader
	if err := json.Unmarshal(hdr, &h); err != nil || h.Version != IndexFormatVersion || h.Snapshot <= 0 ||
		int64(len(raw)) != int64(len(hdr))+1+h.Snapshot || len(lines) != 40 {
		t.Fatalf("rewritten index: header %s (%v), %d bytes, %d lines; want version %d, its snapshot to the end, 40 lines",
			hdr, err, len(raw), len(lines), IndexFormatVersion)
	}
	if plain := len(bytes.Join(lines, []byte("\n"))) + 1; h.Snapshot*3 > int64(plain) {
		t.Fatalf("snapshot of %d bytes for %d bytes of lines", h.Snapshot, plain)
	}
	appendOne(t, a, "s07", storage.Meta{Name: "renamed", Messages: 2})
	for name, s := range map[string]*Store{"a": a, "b": b} {
		if m, err := s.Get(t.Context(), "s07"); err != nil || m.Name != "renamed" || m.LastSeq != 2 {
			t.Fatalf("%s: Get after an append past the snapshot: %+v, %v", name, m, err)
		}
		if l, err := s.List(t.Context(), storage.ListQuery{}); err != nil || len(l) != 40 {
			t.Fatalf("%s lists %d sessions (%v), want 40", name, len(l), err)
		}
	}
	a.Close()
	b.Close()

	// The same lines in a version 1 index.
	_, lines = indexFileLines(t, dir)
	v1 := append([]byte(`{"v":1,"index":"sessionmem"}`+"\n"), bytes.Join(lines, []byte("\n"))...)
	if err := os.WriteFile(filepath.Join(dir, indexName), append(v1, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	calls = 0
	c := mustOpen(t, dir, opts)
	if m, err := c.Get(t.Context(), "s07"); err != nil || m.Name != "renamed" || calls != 0 {
		t.Fatalf("version 1 index: Get %+v, %v; %d sessions summarised again", m, err, calls)
	}
	if err := c.CompactMeta(t.Context()); err != nil {
		t.Fatal(err)
	}
	if hdr, lines := indexFileLines(t, dir); !bytes.HasPrefix(hdr, []byte(`{"v":2,`)) || len(lines) != 40 {
		t.Fatalf("after a rewrite: header %s, %d lines", hdr, len(lines))
	}
}

// TestIndexSnapshotDamaged: a snapshot that does not decode (a flipped bit, caught by its
// checksum, or a file cut short) makes the index damaged: Open rebuilds it from the session
// files, summarising every session, and rewrites it whole.
func TestIndexSnapshotDamaged(t *testing.T) {
	for _, tt := range []struct {
		name   string
		damage func(b []byte, hdrLen int) []byte
	}{
		{"bit flip", func(b []byte, hdrLen int) []byte { b[hdrLen+(len(b)-hdrLen)/2] ^= 0x10; return b }},
		{"cut short", func(b []byte, hdrLen int) []byte { return b[:hdrLen+(len(b)-hdrLen)/2] }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := snapshotStore(t)
			p := filepath.Join(dir, indexName)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, tt.damage(b, bytes.IndexByte(b, '\n')+1), 0o600); err != nil {
				t.Fatal(err)
			}
			calls := 0
			s := mustOpen(t, dir, Options{IdleSeal: -1, MaxPlainBytes: -1, Summarize: countingSummarize(&calls)})
			if l, err := s.List(t.Context(), storage.ListQuery{}); err != nil || len(l) != 40 || calls != 40 {
				t.Fatalf("listed %d sessions (%v), %d summarised again; want 40 and 40", len(l), err, calls)
			}
			if _, lines := indexFileLines(t, dir); len(lines) != 40 {
				t.Fatalf("rebuilt index holds %d lines, want 40", len(lines))
			}
		})
	}
}
