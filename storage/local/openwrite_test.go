package local

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// fullFS is the operating system's files, with every new file (a temp file that an atomic
// rewrite writes) refused for want of space once full is set.
type fullFS struct {
	osFS
	full atomic.Bool
}

func (f *fullFS) CreateTemp(dir, pattern string) (file, error) {
	if f.full.Load() {
		return nil, &fs.PathError{Op: "createtemp", Path: dir, Err: syscall.ENOSPC}
	}
	return f.osFS.CreateTemp(dir, pattern)
}

// TestOpenWithoutWriting: a store opens, lists and reads when what opening would write
// cannot be written: the listing index's rewrite on a full disk (it was fatal, so no new
// process, server or command, could use a store with one stale index line and no room),
// and a store that may not be written at all (index.lock and index.jsonl were opened for
// writing).
func TestOpenWithoutWriting(t *testing.T) {
	build := func(t *testing.T) string {
		dir := t.TempDir()
		s := mustOpen(t, dir, Options{})
		mustCreate(t, s, "a")
		appendBatches(t, s, "a", [][]storage.Record{recordsOf(testLines(t)[:3])})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// The index lost: opening rebuilds it from the session files and rewrites it.
		if err := os.Remove(filepath.Join(dir, indexName)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	check := func(t *testing.T, s *Store) {
		t.Helper()
		metas, err := s.List(t.Context(), storage.ListQuery{})
		if err != nil || len(metas) != 1 || metas[0].ID != "a" || metas[0].LastSeq != 3 {
			t.Fatalf("List: %+v, %v", metas, err)
		}
		if got, err := readAll(t, s, "a", 1); err != nil || len(got) != 3 {
			t.Fatalf("read: %d records, %v", len(got), err)
		}
	}
	t.Run("disk full, a damaged index line", func(t *testing.T) {
		// The index is there but has to be rewritten: its old file stays what this process
		// reads (keepUnsaved), and its entries are still listed.
		dir := build(t)
		s0 := mustOpen(t, dir, Options{})
		if err := s0.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(dir, indexName), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("not a line of the index\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		ffs := &fullFS{}
		ffs.full.Store(true)
		s := mustOpen(t, dir, Options{fs: ffs})
		defer s.Close()
		check(t, s)
	})
	t.Run("disk full", func(t *testing.T) {
		dir := build(t)
		ffs := &fullFS{}
		ffs.full.Store(true)
		s := mustOpen(t, dir, Options{fs: ffs})
		defer s.Close()
		check(t, s)
		// Room again: the next save writes the index whole, which another process reads.
		ffs.full.Store(false)
		appendBatches(t, s, "a", [][]storage.Record{recordsOf(testLines(t)[3:4])})
		s2 := mustOpen(t, dir, Options{})
		defer s2.Close()
		if metas, err := s2.List(t.Context(), storage.ListQuery{}); err != nil || len(metas) != 1 || metas[0].LastSeq != 4 {
			t.Fatalf("List in another store after the disk had room: %+v, %v", metas, err)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		dir := build(t)
		rofs := &roFS{dir: dir}
		rofs.ro.Store(true)
		s := mustOpen(t, dir, Options{fs: rofs})
		defer s.Close()
		check(t, s)
		err := s.Update(t.Context(), "a", func(w storage.Writer) error {
			_, err := w.Append(recordsOf(testLines(t)[3:4]), storage.Meta{})
			return err
		})
		if !storage.ReadOnly(err) {
			t.Fatalf("append to a read-only store: %v, want a read-only error", err)
		}
	})
}
