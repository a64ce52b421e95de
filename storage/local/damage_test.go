package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestDamagedEndNeverCut: a session's durable data damaged at its end (a .zst cut short in
// its only record, a bad tail line with saves after it) is not what a crash leaves, since a
// crash tears only what was being written. Readers report it instead of returning a shorter
// session, and a writer refuses instead of cutting it, including a writer that starts right
// after a reader cached its view (a save after a resume: the way a server meets it first).
func TestDamagedEndNeverCut(t *testing.T) {
	recs := damageRecords
	for _, tc := range damageCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{})
			mustCreate(t, s, "d")
			mustCreate(t, s, "other")
			tc.build(t, s)
			appendBatches(t, s, "other", [][]storage.Record{recs(0, 3)})
			if !tc.crash {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				// Closed before the directory is removed (Windows removes no open file); it
				// cannot seal the damaged tail, and says so.
				t.Cleanup(func() { s.Close() })
			}
			tc.damage(t, dir)
			p := filepath.Join(dir, "sessions", tc.file)
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			s2 := mustOpen(t, dir, Options{})
			defer s2.Close()
			for round := range 2 { // the second from the views the first cached
				if _, err := readAll(t, s2, "d", 1); !errors.Is(err, storage.ErrCorrupt) {
					t.Fatalf("round %d: reading: %v, want storage.ErrCorrupt", round, err)
				}
				err := s2.updateW(t.Context(), "d", func(w *Writer) error {
					_, err := w.Append(recs(100, 1), storage.Meta{})
					return err
				})
				if !errors.Is(err, storage.ErrCorrupt) {
					t.Fatalf("round %d: saving: %v, want storage.ErrCorrupt", round, err)
				}
				if after, err := os.Stat(p); err != nil || after.Size() != fi.Size() {
					t.Fatalf("round %d: %s changed from %d bytes: %v, %v", round, tc.file, fi.Size(), after, err)
				}
			}
			if got, err := readAll(t, s2, "other", 1); err != nil || len(got) != 3 {
				t.Fatalf("another session: %d records, %v", len(got), err)
			}
			for _, repair := range []bool{false, true} {
				rep, err := s2.verifyFiles(t.Context(), "d", repair)
				if err != nil || rep.Damaged == nil {
					t.Fatalf("Verify (repair %v): damaged %v, err %v; want it damaged", repair, rep.Damaged, err)
				}
			}
			if after, err := os.Stat(p); err != nil || after.Size() != fi.Size() {
				t.Fatalf("after verify --repair: %s changed from %d bytes: %v, %v", tc.file, fi.Size(), after, err)
			}
		})
	}
}

// damageCase is one session damaged at its end (TestDamagedEndNeverCut).
type damageCase struct {
	name   string
	build  func(t *testing.T, s *Store)   // the session "d" as saved
	damage func(t *testing.T, dir string) // returns after damaging one file
	file   string                         // the damaged file, which must keep its size
	crash  bool                           // the saving store is left open, as kill -9 leaves it
}

// damageRecords are n records numbered from from.
func damageRecords(from, n int) []storage.Record {
	var out []storage.Record
	for i := from; i < from+n; i++ {
		out = append(out, storage.Record{Kind: "message", Data: fmt.Appendf(nil, `{"n":%d,"text":"some words here and more words"}`, i)})
	}
	return out
}

// damageCases are TestDamagedEndNeverCut's sessions.
func damageCases() []damageCase {
	recs := damageRecords
	return []damageCase{
		{
			name: "zst cut short in its only record, no tail",
			build: func(t *testing.T, s *Store) {
				appendBatches(t, s, "d", [][]storage.Record{recs(0, 40)}) // written whole (notail.go)
			},
			damage: func(t *testing.T, dir string) { cutFile(t, filepath.Join(dir, "sessions", "d.zst"), 50) },
			file:   "d.zst",
		},
		{
			name: "zst cut short in its last record, the tail moved on",
			build: func(t *testing.T, s *Store) {
				appendBatches(t, s, "d", [][]storage.Record{recs(0, 10), recs(10, 10)})
				if err := s.updateW(t.Context(), "d", func(w *Writer) error { return w.Seal() }); err != nil {
					t.Fatal(err)
				}
				appendBatches(t, s, "d", [][]storage.Record{recs(20, 3)})
			},
			damage: func(t *testing.T, dir string) { cutFile(t, filepath.Join(dir, "sessions", "d.zst"), 9) },
			file:   "d.zst",
		},
		{
			name: "bad tail line with saves after it",
			build: func(t *testing.T, s *Store) {
				var batches [][]storage.Record
				for i := range 12 {
					batches = append(batches, recs(i, 1))
				}
				appendBatches(t, s, "d", batches)
			},
			damage: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "sessions", "d.tail.jsonl")
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				i := bytes.Index(b, []byte(`"n":5,`))
				if i < 0 {
					t.Fatal("record 5 not in the tail")
				}
				b[i+2] = '#' // not JSON any more
				if err := os.WriteFile(p, b, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			file:  "d.tail.jsonl",
			crash: true,
		},
	}
}

// cutFile cuts the last n bytes off the file at p.
func cutFile(t *testing.T, p string, n int64) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, fi.Size()-n); err != nil {
		t.Fatal(err)
	}
}
