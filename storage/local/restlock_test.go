package local

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// TestReadLeavesLockToSealer: a read of a session at rest leaves its lock file for the sealer
// (no file made and removed per read), which removes it once the session has been idle for
// IdleSeal, and Close removes what is left. A lock file the sealer finds held, or beside a
// tail another store (process) wrote meanwhile, is left to that store, and every store reads
// the same records throughout.
func TestReadLeavesLockToSealer(t *testing.T) {
	if !removeRestingLocks {
		t.Skip("lock files stay on this platform (removeRestingLocks)")
	}
	const idle, tick = time.Hour, 20 * time.Millisecond // idle on the test's clock
	clk := newClock()
	dir := t.TempDir()
	a := mustOpen(t, dir, Options{IdleSeal: idle, Now: clk.now, sealTick: tick})
	b := mustOpen(t, dir, Options{IdleSeal: -1, MaxPlainBytes: -1}) // rests at once, as before
	lines := testLines(t)
	for _, id := range []string{"r", "w", "c"} {
		mustCreate(t, a, id)
		appendBatches(t, a, id, [][]storage.Record{recordsOf(lines[:3])})
	}
	expect := func(when string, names ...string) {
		t.Helper()
		if got := sessionFiles(t, dir); !slices.Equal(got, names) {
			t.Fatalf("%s: sessions/ holds %q, want %q", when, got, names)
		}
	}
	expect("after the saves", "c.zst", "r.zst", "w.zst")
	for i := range 3 { // three reads, one lock file: it is made once
		for _, id := range []string{"r", "w", "c"} {
			if got, err := readAll(t, a, id, 1); err != nil || len(got) != 3 {
				t.Fatalf("read %d of %s: %d records, %v", i, id, len(got), err)
			}
		}
	}
	expect("after the reads", "c.lock", "c.zst", "r.lock", "r.zst", "w.lock", "w.zst")

	// Another store writes to w while a's lock file waits: its tail keeps the file.
	want := appendBatches(t, b, "w", [][]storage.Record{recordsOf(lines[3:5])})
	// And holds r while a's rest comes due: a leaves it to b.
	held := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_ = b.view(t.Context(), "r", func(*Reader) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	clk.advance(idle + time.Minute)
	waitFor(t, 10*time.Second, "c's lock file was not removed once idle", func() bool {
		return !slices.Contains(sessionFiles(t, dir), "c.lock")
	})
	time.Sleep(5 * tick)
	expect("after the sealer's pass", "c.zst", "r.lock", "r.zst", "w.lock", "w.tail.jsonl", "w.zst")
	close(release) // b rests r itself
	waitFor(t, 10*time.Second, "b did not rest r", func() bool {
		return !slices.Contains(sessionFiles(t, dir), "r.lock")
	})
	if got, err := readAll(t, a, "w", 1); err != nil || len(got) != 5 {
		t.Fatalf("w in a: %d records, %v", len(got), err)
	}
	if got, err := readAll(t, b, "w", 1); err != nil {
		t.Fatal(err)
	} else {
		equalLines(t, got[3:], want)
	}
	if _, err := readAll(t, a, "c", 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	expect("after b closed (its seal rests w)", "c.lock", "c.zst", "r.zst", "w.zst")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	expect("after a closed", "c.zst", "r.zst", "w.zst")
}

// TestReadsLeaveFewLockFiles: reading many sessions at rest leaves at most maxResting lock
// files at once (the directory would keep every name's space), and every session reads back.
func TestReadsLeaveFewLockFiles(t *testing.T) {
	if !removeRestingLocks {
		t.Skip("lock files stay on this platform (removeRestingLocks)")
	}
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IdleSeal: time.Hour, sealTick: 20 * time.Millisecond})
	lines := testLines(t)
	var ids []string
	for i := range 3 * maxResting {
		id := fmt.Sprintf("s%02d", i)
		ids = append(ids, id)
		mustCreate(t, s, id)
		appendBatches(t, s, id, [][]storage.Record{recordsOf(lines[:2])})
	}
	for _, id := range ids {
		if got, err := readAll(t, s, id, 1); err != nil || len(got) != 2 {
			t.Fatalf("%s: %d records, %v", id, len(got), err)
		}
	}
	locks := 0
	for _, name := range sessionFiles(t, dir) {
		if strings.HasSuffix(name, lockSuffix) {
			locks++
		}
	}
	if locks != maxResting {
		t.Fatalf("%d lock files after reading %d sessions, want %d", locks, len(ids), maxResting)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range sessionFiles(t, dir) {
		if !strings.HasSuffix(name, zstSuffix) {
			t.Fatalf("after Close sessions/ holds %s", name)
		}
	}
}

// deleteHookFS is the operating system's files, with hook run right after a Stat of path
// while armed (once): another process deleting the session between openSession's check of
// its .zst and its lock.
type deleteHookFS struct {
	osFS
	path  string
	armed atomic.Bool
	hook  func()
}

func (f *deleteHookFS) Stat(name string) (os.FileInfo, error) {
	fi, err := f.osFS.Stat(name)
	if name == f.path && f.armed.CompareAndSwap(true, false) {
		f.hook()
	}
	return fi, err
}

// TestDeletedWhileOpeningLeavesNoLock: a session another store (process) deletes after a
// call saw its .zst and before it locked the session is not found, and the lock file the
// call made again does not stay behind.
func TestDeletedWhileOpeningLeavesNoLock(t *testing.T) {
	if !removeRestingLocks {
		t.Skip("lock files stay on this platform (removeRestingLocks)")
	}
	dir := t.TempDir()
	hfs := &deleteHookFS{}
	a := mustOpen(t, dir, Options{IdleSeal: -1, MaxPlainBytes: -1, fs: hfs})
	b := mustOpen(t, dir, Options{IdleSeal: -1, MaxPlainBytes: -1})
	for _, tc := range []struct {
		name string
		call func(id string) error
	}{
		{"a read", func(id string) error { _, err := readAll(t, a, id, 1); return err }},
		{"a write", func(id string) error {
			return a.Update(t.Context(), id, func(w storage.Writer) error {
				_, err := w.Append(recordsOf(testLines(t)[:1]), storage.Meta{})
				return err
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "s-" + strings.ReplaceAll(tc.name, " ", "-")
			mustCreate(t, a, id)
			appendBatches(t, a, id, [][]storage.Record{recordsOf(testLines(t)[:2])})
			hfs.path, hfs.hook = a.zstPath(id), func() {
				if err := b.Delete(t.Context(), id); err != nil {
					t.Error(err)
				}
			}
			hfs.armed.Store(true)
			if err := tc.call(id); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("%s of a session deleted meanwhile: %v, want not found", tc.name, err)
			}
			for _, name := range sessionFiles(t, dir) {
				if strings.HasPrefix(name, id+".") {
					t.Fatalf("sessions/ holds %s after the session was deleted", name)
				}
			}
		})
	}
}
