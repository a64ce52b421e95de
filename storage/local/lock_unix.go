//go:build unix

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// lockPath takes a flock on path (created 0600 if missing) and returns the open file that holds
// it and the file's identity; closing the file releases the lock. Delete removes a session's
// lock file while holding it, so after locking we check that the path still names the inode we
// locked and retry otherwise: without that check a waiter and a newcomer could both "hold" the
// lock on different inodes.
func lockPath(ctx context.Context, path string, exclusive bool) (*os.File, os.FileInfo, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		f, err := openFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
			// A store that may not be written (a read-only mount, files the server may not
			// write) is still read: flock takes a descriptor open for reading, and a writer
			// that locks this way fails where it writes, saying the store is read-only. A
			// lock file that does not exist yet leaves the first error (it could not be made).
			if rf, rerr := openFile(path, os.O_RDONLY, 0); rerr == nil {
				f, err = rf, nil
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("open lock %s: %w", path, err)
		}
		if err := flockCtx(ctx, f, how); err != nil {
			return nil, nil, fmt.Errorf("lock %s: %w", path, err)
		}
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(fi, pi) {
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

// flockCtx tries a non-blocking lock first (the common, uncontended case costs one syscall)
// and otherwise waits in a goroutine so that ctx can abandon the wait. On any error f is
// closed and must not be used again: when ctx ends the wait, the goroutine may still be blocked
// in flock on f's descriptor, so it closes f itself once flock returns. Closing f earlier would
// let the descriptor number be reused, and the late flock (or an unlock) would then act on
// whatever file got that number, possibly another session's cached lock.
func flockCtx(ctx context.Context, f *os.File, how int) error {
	fd := int(f.Fd())
	err := flockRetry(fd, how|syscall.LOCK_NB)
	if err == nil {
		return nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- flockRetry(fd, how) }()
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

// abandonedWaits counts lock waits whose caller gave up (its ctx ended) while flock was still
// blocked: each keeps its descriptor until the holder releases the lock and flock returns.
// Tests that count open descriptors wait for them.
var abandonedWaits sync.WaitGroup

// tryLockPath is lockPath without waiting: ok is false when another descriptor (in this
// process or another) holds a conflicting lock.
func tryLockPath(path string) (f *os.File, ok bool, err error) {
	for {
		f, err := openFile(path, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			return nil, false, nil // deleted: nothing to do
		}
		if err != nil {
			return nil, false, fmt.Errorf("open lock %s: %w", path, err)
		}
		if err := flockRetry(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		}
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(fi, pi) {
			return f, true, nil
		}
		f.Close()
		if err2 != nil {
			return nil, false, nil
		}
	}
}

func flockRetry(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// lockFD locks an already open file (used for the long-lived index lock descriptor).
func lockFD(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	return flockRetry(int(f.Fd()), how)
}

func unlockFD(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// fileID identifies a file version cheaply: a change in inode, size or mtime means another
// writer touched it since we last looked.
type fileID struct {
	ino   uint64
	size  int64
	mtime int64
}

func statID(fi os.FileInfo) fileID {
	id := fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = uint64(st.Ino)
	}
	return id
}
