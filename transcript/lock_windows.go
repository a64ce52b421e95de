//go:build windows

package transcript

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive lock on path (created if missing) and returns its release: a
// LockFileEx lock on one byte far past the data (a Windows lock is mandatory for the bytes it
// covers, and the lock file holds none). The system releases it when the process ends, so a
// crash never leaves a source locked.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	const off = 1 << 62
	ol := windows.Overlapped{Offset: off & 0xffffffff, OffsetHigh: off >> 32}
	h := windows.Handle(f.Fd())
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = windows.UnlockFileEx(h, 0, 1, 0, &ol)
		f.Close()
	}, nil
}
