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
		f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil && storage.ReadOnly(err) {
			// A store that may not be written (a read-only mount, files the server may not
			// write) is still read: the lock takes a descriptor open for reading, and a writer
			// that locks this way fails where it writes, saying the store is read-only. A
			// lock file that does not exist yet leaves the first error (it could not be made).
			if rf, rerr := fsys.OpenFile(path, os.O_RDONLY, 0); rerr == nil {
				f, err = rf, nil
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("open lock %s: %w", path, err)
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
