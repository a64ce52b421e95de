package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// sessionFiles returns the names in dir's sessions directory, sorted.
func sessionFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// TestSavedOnceOneFile: a session created and saved once is one file, its .zst, from the
// first save on: the save's records are its first record, and neither a tail nor a lock file
// is left (an ext4 directory never shrinks, so every name a session keeps costs directory
// blocks for good). A later save writes a tail and keeps the lock file while the tail exists;
// the idle seal leaves the .zst alone again, and so does a read. Every reader, in this store
// and in another one, reads the same records throughout, and the index agrees with the files
// (nothing is summarised again at Open).
func TestSavedOnceOneFile(t *testing.T) {
	dir := t.TempDir()
	var summaries atomic.Int64
	opts := Options{IdleSeal: -1, MaxPlainBytes: -1, Summarize: func(storage.Header, iter.Seq2[storage.Record, error]) (storage.Meta, error) {
		summaries.Add(1)
		return storage.Meta{}, nil
	}}
	a, b := mustOpen(t, dir, opts), mustOpen(t, dir, opts)
	expect := func(when string, names ...string) {
		t.Helper()
		if !removeRestingLocks && !slices.Contains(names, "s.lock") {
			names = append([]string{"s.lock"}, names...)
		}
		if got := sessionFiles(t, dir); !slices.Equal(got, names) {
			t.Fatalf("%s: sessions/ holds %q, want %q", when, got, names)
		}
	}
	readers := func(when string, want []string) {
		t.Helper()
		for name, s := range map[string]*Store{"a": a, "b": b} {
			got, err := readAll(t, s, "s", 1)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, name, err)
			}
			equalLines(t, got, want)
			if m, err := s.Get(t.Context(), "s"); err != nil || m.LastSeq != uint64(len(want)) {
				t.Fatalf("%s: %s: Get: last seq %d (%v), want %d", when, name, m.LastSeq, err, len(want))
			}
		}
	}
	mustCreate(t, a, "s")
	expect("after Create", "s.zst")
	readers("after Create", nil)
	expect("after reading it", "s.zst")

	lines := testLines(t)
	want := appendBatches(t, a, "s", [][]storage.Record{recordsOf(lines[:5])})
	expect("after the first save", "s.zst")
	if err := a.updateW(t.Context(), "s", func(w *Writer) error {
		if len(w.v.frames) != 1 || w.v.frames[0].count != 5 || len(w.v.lines) != 0 {
			return fmt.Errorf("%d frames (%+v), %d tail lines; want one frame of 5 records", len(w.v.frames), w.v.frames, len(w.v.lines))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	readers("after the first save", want)
	expect("after reading it", "s.zst")

	want = append(want, appendBatches(t, a, "s", [][]storage.Record{recordsOf(lines[5:7])})...)
	expect("after the second save", "s.lock", "s.tail.jsonl", "s.zst")
	readers("after the second save", want)

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	expect("after Close", "s.zst")
	got, err := readAll(t, b, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, got, want)
	expect("after another store read it", "s.zst")

	c := mustOpen(t, dir, opts)
	if n := summaries.Load(); n != 0 {
		t.Fatalf("%d sessions summarised again at Open, want 0", n)
	}
	if got, err := readAll(t, c, "s", 1); err != nil {
		t.Fatal(err)
	} else {
		equalLines(t, got, want)
	}
	if rep, err := c.Verify(t.Context(), "s", false); err != nil || rep.Torn() || rep.Damaged() != nil {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
}

// TestFirstSaveKinds: which first saves go into the .zst, and that every kind reads back
// exactly, in order, in this store and after a reopen: a batch too large for it (or of
// SealRecords records) goes to the tail as any save does, a batch with a compaction record
// after its first starts a frame there as always, and one that starts with it is one record.
func TestFirstSaveKinds(t *testing.T) {
	lines := testLines(t)
	big := strings.Repeat("x", maxFirstWhole)
	for _, tt := range []struct {
		name    string
		batch   []storage.Record
		inZst   bool
		frames  int
		options Options
	}{
		{"small", recordsOf(lines[:3]), true, 1, Options{}},
		{"larger than it takes", []storage.Record{{Data: []byte(`{"big":"` + big + `"}`)}}, false, 0, Options{}},
		{"SealRecords records", recordsOf(lines[:4]), false, 1, Options{SealRecords: 4}},
		{"starting with a compaction", append([]storage.Record{{Kind: "compaction", Data: []byte(`{"s":1}`), Barrier: true}}, recordsOf(lines[:2])...), true, 1, Options{}},
		{"with a compaction after its first", append(recordsOf(lines[:2]), storage.Record{Kind: "compaction", Data: []byte(`{"s":1}`), Barrier: true}), false, 1, Options{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := tt.options
			opts.IdleSeal, opts.MaxPlainBytes = -1, -1
			s := mustOpen(t, dir, opts)
			mustCreate(t, s, "s")
			want := appendBatches(t, s, "s", [][]storage.Record{tt.batch})
			_, err := os.Stat(filepath.Join(dir, "sessions", "s.tail.jsonl"))
			if inZst := errors.Is(err, fs.ErrNotExist); inZst != tt.inZst {
				t.Fatalf("went into the .zst: %v, want %v", inZst, tt.inZst)
			}
			if err := s.updateW(t.Context(), "s", func(w *Writer) error {
				if len(w.v.frames) != tt.frames {
					return fmt.Errorf("%d frames, want %d", len(w.v.frames), tt.frames)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			got, err := readAll(t, s, "s", 1)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, got, want)
			s.Close()
			got, err = readAll(t, mustOpen(t, dir, opts), "s", 1)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, got, want)
		})
	}
}

// TestCreateOverStaleTail: a Delete removes the .zst first, so a crash can leave the tail of
// a deleted session behind, which a new session of the same id would read as its own now that
// Create writes no tail: Create removes it, durably, before the .zst that makes the session
// exist. Whatever a power loss keeps of the disk after Create returned, the new session holds
// none of the old records.
func TestCreateOverStaleTail(t *testing.T) {
	fsys := newCrashFS(time.Now)
	s, err := Open("/store", Options{IdleSeal: -1, MaxPlainBytes: -1, Summarize: crashSummarize, fs: fsys, closeSealers: 1, firstInTail: true})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "a")
	crashAppend(t, s, "a", `{"x":1}`, `{"x":2}`)
	// A Delete that stopped after the .zst's removal (made durable: it syncs the directory).
	if err := fsys.Remove("/store/sessions/a.zst"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir("/store/sessions"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = crashStore(t, fsys, "/store")
	mustCreate(t, s, "a")
	if got, err := crashRead(s, "a"); err != nil || len(got) != 0 {
		t.Fatalf("the new session reads %q (%v), want nothing", got, err)
	}
	for name, img := range crashImages(fsys) {
		got, err := crashRead(crashStore(t, img, "/store"), "a")
		if err != nil || len(got) != 0 {
			t.Errorf("%s: after the power loss the new session reads %q (%v), want nothing", name, got, err)
		}
	}
	crashAppend(t, s, "a", `{"x":3}`)
	if got, err := crashRead(s, "a"); err != nil || !slices.Equal(got, []string{`{"seq":1,"x":3}`}) {
		t.Fatalf("after an append: %q (%v)", got, err)
	}
}

// TestLockFileComesAndGoes: lock files are removed while sessions are at rest, by writers and
// by readers alike (at once, or by the sealer after a read), and made again by the next call, while two stores (as two processes)
// write, read and idle-seal the same sessions at once: no two writers ever hold a session
// together, no reader overlaps a writer, and every acknowledged record is there once, in
// order.
func TestLockFileComesAndGoes(t *testing.T) {
	for _, tc := range []struct {
		name string
		idle time.Duration // the first store's IdleSeal: readers there leave lock files to its sealer
	}{{"removed at once", -1}, {"readers leave them to the sealer", 10 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) { lockFileComesAndGoes(t, tc.idle) })
	}
}

func lockFileComesAndGoes(t *testing.T, idle time.Duration) {
	dir := t.TempDir()
	opts := Options{IdleSeal: -1, MaxPlainBytes: -1}
	stores := []*Store{mustOpen(t, dir, Options{IdleSeal: idle, MaxPlainBytes: -1}), mustOpen(t, dir, opts)}
	ids := []string{"p", "q"}
	for _, id := range ids {
		mustCreate(t, stores[0], id)
	}
	var inside [2]struct{ writers, readers atomic.Int32 }
	var acked [2]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[g%2]
			for i := range 60 {
				k := (g + i) % 2
				id, in := ids[k], &inside[k]
				var err error
				switch (g + i) % 3 {
				case 0:
					err = s.updateW(context.Background(), id, func(w *Writer) error {
						if in.writers.Add(1) != 1 || in.readers.Load() != 0 {
							errs <- fmt.Errorf("%s: a writer entered beside another call", id)
						}
						defer in.writers.Add(-1)
						_, err := w.Append([]storage.Record{{Data: []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))}}, storage.Meta{})
						if err == nil {
							acked[k].Add(1)
						}
						return err
					})
				case 1:
					err = s.updateW(context.Background(), id, func(w *Writer) error {
						if in.writers.Add(1) != 1 || in.readers.Load() != 0 {
							errs <- fmt.Errorf("%s: a sealer entered beside another call", id)
						}
						defer in.writers.Add(-1)
						return w.sealIdle()
					})
				default:
					err = s.view(context.Background(), id, func(r *Reader) error {
						in.readers.Add(1)
						defer in.readers.Add(-1)
						if in.writers.Load() != 0 {
							errs <- fmt.Errorf("%s: a reader entered beside a writer", id)
						}
						return nil
					})
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for k, id := range ids {
		got, err := readAll(t, stores[1], id, 1)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) != acked[k].Load() {
			t.Fatalf("%s: %d records, %d acknowledged", id, len(got), acked[k].Load())
		}
		seen := map[string]bool{}
		for i, line := range got {
			if !strings.HasPrefix(line, fmt.Sprintf(`{"seq":%d,`, i+1)) || seen[line[strings.IndexByte(line, ',')+1:]] {
				t.Fatalf("%s: record %d is %s", id, i+1, line)
			}
			seen[line[strings.IndexByte(line, ',')+1:]] = true
		}
	}
	for _, s := range stores {
		s.Close()
	}
	for _, name := range sessionFiles(t, dir) {
		if !strings.HasSuffix(name, zstSuffix) && (removeRestingLocks || !strings.HasSuffix(name, lockSuffix)) {
			t.Errorf("after Close sessions/ holds %s", name)
		}
	}
}

// roFS is the operating system's files, with the sessions directory refusing every write
// once ro is set, as a read-only mount does.
type roFS struct {
	osFS
	dir string
	ro  atomic.Bool
}

func (f *roFS) refuse(op, name string) error {
	if f.ro.Load() && strings.HasPrefix(name, f.dir) {
		return &fs.PathError{Op: op, Path: name, Err: storage.ErrReadOnly}
	}
	return nil
}

func (f *roFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	if flag&(os.O_RDWR|os.O_WRONLY|os.O_CREATE) != 0 {
		if err := f.refuse("open", name); err != nil {
			return nil, err
		}
	}
	return f.osFS.OpenFile(name, flag, perm)
}

func (f *roFS) CreateTemp(dir, pattern string) (file, error) {
	if err := f.refuse("createtemp", dir); err != nil {
		return nil, err
	}
	return f.osFS.CreateTemp(dir, pattern)
}

func (f *roFS) Rename(oldpath, newpath string) error {
	if err := f.refuse("rename", newpath); err != nil {
		return err
	}
	return f.osFS.Rename(oldpath, newpath)
}

func (f *roFS) Remove(name string) error {
	if err := f.refuse("remove", name); err != nil {
		return err
	}
	return f.osFS.Remove(name)
}

// TestReadOnlyStoreAtRest: a session at rest has no lock file, and a store that became
// read-only can make none: it is still read (without a lock: nothing can write there), and a
// write is refused as read-only.
func TestReadOnlyStoreAtRest(t *testing.T) {
	dir := t.TempDir()
	rofs := &roFS{dir: filepath.Join(dir, "sessions")}
	s := mustOpen(t, dir, Options{IdleSeal: -1, MaxPlainBytes: -1, fs: rofs})
	mustCreate(t, s, "s")
	want := appendBatches(t, s, "s", [][]storage.Record{recordsOf(testLines(t)[:3])})
	if !removeRestingLocks {
		t.Skip("lock files stay on this platform (removeRestingLocks)")
	}
	if got := sessionFiles(t, dir); !slices.Equal(got, []string{"s.zst"}) {
		t.Fatalf("sessions/ holds %q", got)
	}
	rofs.ro.Store(true)
	got, err := readAll(t, s, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, got, want)
	err = s.Update(t.Context(), "s", func(w storage.Writer) error {
		_, err := w.Append(recordsOf(testLines(t)[3:4]), storage.Meta{})
		return err
	})
	if !storage.ReadOnly(err) {
		t.Fatalf("append to a read-only store: %v, want a read-only error", err)
	}
}
