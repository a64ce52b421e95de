package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/sessionmem/sessionmem/storage"
)

// lockPath takes a lock on path (created 0600 if missing) and returns the open file that holds
// it and the file's identity; closing the file releases the lock. Delete removes a session's
// lock file while holding it, so after locking we check that the path still names the inode we
// locked and retry otherwise: without that check a waiter and a newcomer could both "hold" the
// lock on different inodes.
func lockPath(ctx context.Context, fsys fileSystem, path string, exclusive bool) (file, os.FileInfo, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		// A session at rest has no lock file (restLock), and where none can be made a reader
		// locks nothing: where nothing may be written a reader needs no lock; where only this
		// process may not write, a writer's change can still meet the read, which then sees
		// what a crash would leave (a torn end, which it ignores) or fails, and changes
		// nothing.
		f, err := openLockFile(fsys, path, !exclusive)
		if err != nil {
			return nil, nil, fmt.Errorf("open lock %s: %w", path, err)
		}
		if nl, ok := f.(noLock); ok {
			return nl, nil, nil
		}
		if err := lockCtx(ctx, f, exclusive); err != nil {
			return nil, nil, fmt.Errorf("lock %s: %w", path, err)
		}
		fi, err1 := f.Stat()
		pi, err2 := fsys.Stat(path)
		if err1 == nil && err2 == nil && fsys.SameFile(fi, pi) {
			return f, fi, nil
		}
		f.Close()
		if err1 != nil {
			return nil, nil, fmt.Errorf("stat lock %s: %w", path, err1)
		}
		if err2 != nil && !errors.Is(err2, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("stat lock %s: %w", path, err2)
		}
	}
}

// lockCtx tries a non-blocking lock first (the common, uncontended case costs one syscall)
// and otherwise waits in a goroutine so that ctx can abandon the wait. On any error f is
// closed and must not be used again: when ctx ends the wait, the goroutine may still be blocked
// in the lock call on f's descriptor, so it closes f itself once that call returns. Closing f
// earlier would let the descriptor number be reused, and the late lock (or an unlock) would
// then act on whatever file got that number, possibly another session's cached lock.
func lockCtx(ctx context.Context, f file, exclusive bool) error {
	err := f.Lock(exclusive, false)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errLockBusy) {
		f.Close()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- f.Lock(exclusive, true) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
		}
		return err
	case <-ctx.Done():
		abandonedWaits.Add(1)
		go func() { <-done; f.Close(); abandonedWaits.Done() }()
		return ctx.Err()
	}
}

// abandonedWaits counts lock waits whose caller gave up (its ctx ended) while the lock call
// was still blocked: each keeps its descriptor until the holder releases the lock and the call
// returns. Tests that count open descriptors wait for them.
var abandonedWaits sync.WaitGroup

// noLock is the lock of a reader that found no lock file and could make none (lockPath).
// openLockFile opens (creating it) the lock file at path. A store that may not be written (a
// read-only mount, files the process may not write) is still read: the lock takes a descriptor
// open for reading, and a writer that locks this way fails where it writes, saying the store
// is read-only. A lock file that does not exist and cannot be made is noLock when allowNone,
// else the error of making it.
func openLockFile(fsys fileSystem, path string, allowNone bool) (file, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil || !storage.ReadOnly(err) {
		return f, err
	}
	rf, rerr := fsys.OpenFile(path, os.O_RDONLY, 0)
	switch {
	case rerr == nil:
		return rf, nil
	case errors.Is(rerr, os.ErrNotExist) && allowNone:
		return noLock{name: path}, nil
	}
	return nil, err
}

type noLock struct {
	file // nil: only the methods below are called on a lock
	name string
}

var errNoLock = errors.New("no lock file")

func (l noLock) Name() string             { return l.name }
func (noLock) Lock(bool, bool) error      { return nil }
func (noLock) Unlock() error              { return nil }
func (noLock) Close() error               { return nil }
func (noLock) Stat() (os.FileInfo, error) { return nil, errNoLock }

// restLock removes the lock file that lf holds (exclusively, when exclusive) of a session
// that has no tail file, just before lf is closed: a session at rest keeps its .zst alone,
// one directory entry instead of two (an ext4 directory never shrinks, so every name a
// session keeps costs directory blocks for good). The file comes back with the session's
// next call (lockPath creates it).
//
// Delete has always removed a lock file while holding it, and every locker, of this build or
// an older one, checks after locking that the path still names the file it locked and tries
// again otherwise (lockPath, tryLock): a waiter on the removed file goes on to a new one, and
// no two calls ever hold the session at once. The background sealer's tryLock takes a missing
// lock file for a deleted session, so a lock file goes only while no tail exists: only a
// writer creates a tail, and it holds the lock exclusively. A reader holds its lock shared:
// it releases it, takes it exclusively if nobody holds it, and removes the file only if its
// path still names that file and there is still no tail (another call may have written in
// between).
func (s *Store) restLock(id string, lf file, exclusive bool) {
	if !removeRestingLocks {
		return
	}
	path := s.lockPath(id)
	if !exclusive {
		if lf.Unlock() != nil || lf.Lock(true, false) != nil {
			return
		}
		fi, err1 := lf.Stat()
		pi, err2 := s.fs.Stat(path)
		if err1 != nil || err2 != nil || !s.fs.SameFile(fi, pi) {
			return
		}
		if _, err := s.fs.Stat(s.tailPath(id)); !errors.Is(err, os.ErrNotExist) {
			return
		}
	}
	_ = s.fs.Remove(path) // a read-only store keeps it; nothing depends on its absence
}

// dropLockFile removes the lock file lf holds of a session that is gone: deleted after
// openSession saw its .zst, so that lockPath made the file again, which nothing would remove
// (a leftover of every such race, seen with one process saving while another deleted). The
// path still names lf's file: removing it takes an exclusive lock (Delete, restLock), which
// lf's lock excludes.
func (s *Store) dropLockFile(id string, lf file) {
	if _, none := lf.(noLock); none || !removeRestingLocks {
		return
	}
	_ = s.fs.Remove(s.lockPath(id)) // a read-only store keeps it
}

// tryLock is lockPath without waiting and without creating the file: ok is false when
// another open file (in this process or another) holds a conflicting lock, or path is gone.
func tryLock(fsys fileSystem, path string) (f file, ok bool, err error) {
	for {
		f, err := fsys.OpenFile(path, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			return nil, false, nil // deleted: nothing to do
		}
		if err != nil {
			return nil, false, fmt.Errorf("open lock %s: %w", path, err)
		}
		if err := f.Lock(true, false); err != nil {
			f.Close()
			if errors.Is(err, errLockBusy) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		}
		fi, err1 := f.Stat()
		pi, err2 := fsys.Stat(path)
		if err1 == nil && err2 == nil && fsys.SameFile(fi, pi) {
			return f, true, nil
		}
		f.Close()
		if err2 != nil {
			return nil, false, nil
		}
	}
}

// tryLockPath is tryLock on the operating system's files, for the search index's rebuild
// marker (the search index stays on the real disk).
func tryLockPath(path string) (*os.File, bool, error) {
	f, ok, err := tryLock(osFS{}, path)
	if !ok {
		return nil, ok, err
	}
	return f.(osFile).File, true, nil
}
