package storage

import (
	"errors"
	"io/fs"
	"syscall"
)

// Conditions of the store's environment that a caller can act on, whatever the backend: the
// disk is full, or the store may not be written. Backends whose errors do not carry the
// operating system's (a database's) wrap these sentinels; the local store's errors carry the
// system call's errno, which DiskFull and ReadOnly recognise too.
var (
	// ErrDiskFull means the disk (or quota) holding the store is full: the call stored
	// nothing, and the same call succeeds once there is room.
	ErrDiskFull = errors.New("the disk holding the store is full")
	// ErrReadOnly means the store may not be written: a read-only file system or database,
	// or no permission to write.
	ErrReadOnly = errors.New("the store is read-only")
)

// DiskFull reports whether err says the disk holding the store, or the user's quota on it,
// is full: ErrDiskFull, ENOSPC or EDQUOT (and Windows' ERROR_DISK_FULL, ERROR_HANDLE_DISK_FULL
// and ERROR_DISK_QUOTA_EXCEEDED).
func DiskFull(err error) bool {
	return errors.Is(err, ErrDiskFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		diskFullOS(err)
}

// ReadOnly reports whether err says the store may not be written: ErrReadOnly, EROFS, or a
// permission error (EACCES, EPERM, Windows' ERROR_ACCESS_DENIED), or Windows' ERROR_WRITE_PROTECT.
func ReadOnly(err error) bool {
	return errors.Is(err, ErrReadOnly) || errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) ||
		readOnlyOS(err)
}
