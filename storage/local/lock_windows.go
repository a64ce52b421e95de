//go:build windows

package local

import (
	"os"

	"golang.org/x/sys/windows"
)

// removeRestingLocks is false here: where a file system has no POSIX delete semantics (FAT,
// exFAT, network shares) a removed file keeps its name until its last handle closes, and an
// open of it meanwhile fails with access denied. Delete's removal of the lock file risks that
// rarely; a removal whenever a session comes to rest would risk it all the time.
const removeRestingLocks = false

// errLockBusy is what file.Lock returns without wait when another open file holds a
// conflicting lock.
var errLockBusy error = windows.ERROR_LOCK_VIOLATION

// lockOffset is where the byte a lock covers lies: far past any data, because a Windows
// byte-range lock is mandatory (reads and writes of a locked range through other handles
// fail), and locking beyond the end of a file is allowed. Lock files hold no data; the
// offset keeps a lock from ever getting in the way of one that does.
const lockOffset = 1 << 62

// Lock takes a LockFileEx lock on one byte at lockOffset. It belongs to the handle, so it
// excludes other handles of this process as it does other processes, as a flock does, and
// the system releases it when the handle is closed (Close releases it first: the release on
// close is not promised to be immediate).
func (f osFile) Lock(exclusive, wait bool) error {
	var flags uint32
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	if !wait {
		flags |= windows.LOCKFILE_FAIL_IMMEDIATELY
	}
	ol := windows.Overlapped{Offset: lockOffset & 0xffffffff, OffsetHigh: lockOffset >> 32}
	return windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, &ol)
}

func (f osFile) Unlock() error {
	ol := windows.Overlapped{Offset: lockOffset & 0xffffffff, OffsetHigh: lockOffset >> 32}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

// Close releases the handle's lock, if it holds one, before closing it: Windows releases the
// locks of a closed handle "when resources allow", and a waiter must not wait for that.
func (f osFile) Close() error {
	_ = f.Unlock() // ERROR_NOT_LOCKED when it held none
	return f.File.Close()
}

// fileIno is the file index (NTFS's file id) of the file fi describes: osFS's Stat and
// osFile's Stat give it (winFileInfo), as the simulated disk's do (inoer).
func fileIno(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(inoer); ok {
		return st.Ino()
	}
	return 0
}
