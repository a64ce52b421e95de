//go:build unix

package local

import (
	"errors"
	"os"
	"syscall"
)

// removeRestingLocks: the lock files of sessions at rest are removed (restLock). A removed
// file's name goes at once here, so no concurrent open meets it.
const removeRestingLocks = true

// errLockBusy is what file.Lock returns without wait when another open file holds a
// conflicting lock.
var errLockBusy error = syscall.EWOULDBLOCK

// Lock takes a flock: it belongs to the open file description, so it excludes other
// descriptors of this process as it does other processes.
func (f osFile) Lock(exclusive, wait bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if !wait {
		how |= syscall.LOCK_NB
	}
	return flockRetry(int(f.Fd()), how)
}

func (f osFile) Unlock() error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

func flockRetry(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// fileIno is the inode number of the file fi describes.
func fileIno(fi os.FileInfo) uint64 {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return uint64(st.Ino)
	case inoer:
		return st.Ino()
	}
	return 0
}
