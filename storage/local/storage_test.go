package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

func TestValidID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"abc", true},
		{"A-b_c.9", true},
		{strings.Repeat("x", 128), true},
		{strings.Repeat("x", 129), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"a/b", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.id), func(t *testing.T) {
			if got := storage.ValidID(tt.id); got != tt.want {
				t.Fatalf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
	s := mustOpen(t, t.TempDir(), Options{})
	if err := s.Create(context.Background(), storage.Header{ID: "../x"}, storage.Meta{}); !errors.Is(err, storage.ErrInvalidID) {
		t.Fatalf("Create(../x) = %v, want storage.ErrInvalidID", err)
	}
	if _, err := s.Get(context.Background(), ".."); !errors.Is(err, storage.ErrInvalidID) {
		t.Fatalf("Get(..) = %v, want storage.ErrInvalidID", err)
	}
	if err := s.viewR(t.Context(), "a/b", func(*Reader) error { return nil }); !errors.Is(err, storage.ErrInvalidID) {
		t.Fatalf("View(a/b) = %v, want storage.ErrInvalidID", err)
	}
}

func TestRoundTrip(t *testing.T) {
	payloads := testLines(t)
	tests := []struct {
		name     string
		opts     Options
		batch    int   // records per Append
		barriers []int // indexes of barrier records
	}{
		{name: "one per call, no seal", opts: Options{}, batch: 1},
		{name: "one per call, seal every 7", opts: Options{SealRecords: 7}, batch: 1},
		{name: "batches of 5, seal by bytes", opts: Options{SealBytes: 2000}, batch: 5},
		{name: "one big batch", opts: Options{SealRecords: 3}, batch: len(payloads)},
		{name: "barriers", opts: Options{SealRecords: 100}, batch: 4, barriers: []int{0, 5, 9, 10, 23, 39}},
		{name: "barriers in one batch", opts: Options{}, batch: len(payloads), barriers: []int{3, 4, 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, tt.opts)
			mustCreate(t, s, "s1")
			recs := recordsOf(payloads)
			for _, b := range tt.barriers {
				recs[b].Barrier = true
			}
			var batches [][]storage.Record
			for i := 0; i < len(recs); i += tt.batch {
				batches = append(batches, recs[i:min(i+tt.batch, len(recs))])
			}
			acked := appendBatches(t, s, "s1", batches)
			var want []string
			for i, p := range payloads {
				want = append(want, storedLine(uint64(i+1), p))
			}
			equalLines(t, acked, want)
			got, err := readAll(t, s, "s1", 0)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, got, want)
			// Every barrier record starts a frame.
			s.viewR(t.Context(), "s1", func(r *Reader) error {
				starts := map[uint64]bool{}
				for _, f := range r.v.frames {
					starts[f.first] = true
				}
				for _, b := range tt.barriers {
					seq := uint64(b + 1)
					if !starts[seq] && !(len(r.v.lines) > 0 && r.v.lines[0].seq == seq) {
						t.Errorf("barrier seq %d does not start a frame or the tail", seq)
					}
				}
				return nil
			})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := mustOpen(t, dir, Options{})
			for _, from := range []uint64{0, 1, 2, 7, 20, 39, 40, 41, 100} {
				got, err := readAll(t, s2, "s1", from)
				if err != nil {
					t.Fatal(err)
				}
				start := min(int(max(from, 1))-1, len(want))
				equalLines(t, got, want[start:])
			}
			m, err := s2.Get(context.Background(), "s1")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := m.LastSeq, uint64(len(payloads)); got != want {
				t.Fatalf("LastSeq = %d, want %d", got, want)
			}
			// Close sealed the tail and removed it (a session at rest keeps its .zst only).
			if _, err := os.Stat(filepath.Join(dir, "sessions", "s1.tail.jsonl")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("tail after Close: %v, want none", err)
			}
		})
	}
}

func TestAppendRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		rec  storage.Record
	}{
		{"not json", storage.Record{Data: []byte(`{"a":`)}},
		{"array", storage.Record{Data: []byte(`[1,2]`)}},
		{"string", storage.Record{Data: []byte(`"x"`)}},
		{"empty", storage.Record{}},
		{"has seq", storage.Record{Data: []byte(`{"a":1,"seq":3}`)}},
		{"type not string", storage.Record{Data: []byte(`{"type":3}`)}},
		{"kind mismatch", storage.Record{Kind: "message", Data: []byte(`{"type":"compaction"}`)}},
		{"two objects", storage.Record{Data: []byte(`{"a":1}{"b":2}`)}},
	}
	s := mustOpen(t, t.TempDir(), Options{})
	mustCreate(t, s, "s")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.updateW(t.Context(), "s", func(w *Writer) error {
				before := w.v.tailID.size
				_, err := w.Append([]storage.Record{{Data: []byte(`{"ok":1}`)}, tt.rec}, storage.Meta{})
				if got := w.v.tailID.size; got != before {
					t.Errorf("tail grew from %d to %d on rejected batch", before, got)
				}
				return err
			})
			if err == nil {
				t.Fatal("Append accepted bad record")
			}
			if got, _ := readAll(t, s, "s", 0); len(got) != 0 {
				t.Fatalf("rejected batch stored %d records", len(got))
			}
		})
	}
}

func TestAppendShapes(t *testing.T) {
	tests := []struct {
		name string
		rec  storage.Record
		want string
		kind string
	}{
		{"empty object", storage.Record{Data: []byte(`{}`)}, `{"seq":1}`, ""},
		{"kind added", storage.Record{Kind: "message", Data: []byte(`{"a":1}`)}, `{"seq":1,"type":"message","a":1}`, "message"},
		{"kind on empty", storage.Record{Kind: "x", Data: []byte(` { } `)}, `{"seq":1,"type":"x"}`, "x"},
		{"kind from data", storage.Record{Data: []byte(`{"type":"compaction","b":2}`)}, `{"seq":1,"type":"compaction","b":2}`, "compaction"},
		{"newlines compacted", storage.Record{Data: []byte("{\n \"a\": \"x\\ny\"\n}")}, `{"seq":1,"a":"x\ny"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustOpen(t, t.TempDir(), Options{})
			mustCreate(t, s, "s")
			var out []storage.Record
			err := s.updateW(t.Context(), "s", func(w *Writer) error {
				var err error
				out, err = w.Append([]storage.Record{tt.rec}, storage.Meta{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(out[0].Data); got != tt.want {
				t.Fatalf("stored %s, want %s", got, tt.want)
			}
			if out[0].Kind != tt.kind || out[0].Seq != 1 {
				t.Fatalf("got seq %d kind %q", out[0].Seq, out[0].Kind)
			}
			got, err := readAll(t, s, "s", 0)
			if err != nil || len(got) != 1 || got[0] != tt.want {
				t.Fatalf("read back %q, %v", got, err)
			}
		})
	}
}

func TestCreateGetDelete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := mustOpen(t, dir, Options{firstInTail: true, Now: func() time.Time { return clock }})
	if err := s.Create(context.Background(), storage.Header{ID: "a", WorkingDir: "/w", ParentSession: "p"}, storage.Meta{Name: "first", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(context.Background(), storage.Header{ID: "a"}, storage.Meta{}); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second Create = %v, want storage.ErrExists", err)
	}
	m, err := s.Get(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	want := storage.Meta{ID: "a", Name: "first", Model: "m", WorkingDir: "/w", ParentSession: "p", Created: clock, Updated: clock}
	if m != want {
		t.Fatalf("Get = %+v\nwant %+v", m, want)
	}
	s.viewR(t.Context(), "a", func(r *Reader) error {
		if h := r.Header(); h.Version != FormatVersion || !h.Created.Equal(clock) || h.WorkingDir != "/w" {
			t.Errorf("header = %+v", h)
		}
		return nil
	})
	// Create writes no tail: an append does (firstInTail), so that its mode is checked too.
	appendBatches(t, s, "a", [][]storage.Record{{{Data: []byte(`{"x":1}`)}}})
	for _, p := range []string{"", "sessions", "sessions/a.zst", "sessions/a.tail.jsonl", "index.jsonl"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		wantMode := os.FileMode(0o600)
		if fi.IsDir() {
			wantMode = 0o700 | os.ModeDir
		}
		if fi.Mode() != wantMode {
			t.Errorf("%s mode %v, want %v", p, fi.Mode(), wantMode)
		}
	}
	if err := s.Delete(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second Delete = %v, want storage.ErrNotFound", err)
	}
	if _, err := s.Get(context.Background(), "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
	if err := s.updateW(t.Context(), "a", func(*Writer) error { return nil }); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Update after Delete = %v", err)
	}
	if err := s.viewR(t.Context(), "a", func(*Reader) error { return nil }); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("View after Delete = %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "sessions", "*"))
	if len(left) != 0 {
		t.Fatalf("files left after Delete: %v", left)
	}
	// The id can be reused.
	mustCreate(t, s, "a")
	if l, _ := s.List(context.Background(), storage.ListQuery{}); len(l) != 1 || l[0].Name != "n-a" {
		t.Fatalf("List after re-create = %+v", l)
	}
	s.Close()
	if _, err := s.Get(context.Background(), "a"); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Get after Close = %v", err)
	}
}

func TestListOrderAndFilter(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"c", "a", "b", "d"} {
		upd := base.Add(time.Duration(i%3) * time.Hour)
		if err := s.Create(context.Background(), storage.Header{ID: id, WorkingDir: "/w" + fmt.Sprint(i%2)}, storage.Meta{Updated: upd}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.List(context.Background(), storage.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range l {
		ids = append(ids, m.ID)
	}
	if got, want := strings.Join(ids, ","), "b,a,c,d"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	l, _ = s.List(context.Background(), storage.ListQuery{WorkingDir: "/w1"})
	if len(l) != 2 || l[0].ID != "a" || l[1].ID != "d" {
		t.Fatalf("filtered = %+v", l)
	}
	// A second Store (another process) sees appends incrementally.
	s2 := mustOpen(t, dir, Options{})
	appendBatches(t, s, "d", [][]storage.Record{{{Data: []byte(`{"x":1}`)}}})
	m, err := s2.Get(context.Background(), "d")
	if err != nil || m.LastSeq != 1 {
		t.Fatalf("other store Get = %+v, %v", m, err)
	}
}
