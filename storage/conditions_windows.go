//go:build windows

package storage

import (
	"errors"

	"golang.org/x/sys/windows"
)

// diskFullOS recognises Windows' own codes for a full disk or quota, which the system calls
// return instead of ENOSPC and EDQUOT (syscall defines those on Windows, but nothing returns
// them).
func diskFullOS(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL) ||
		errors.Is(err, windows.ERROR_DISK_QUOTA_EXCEEDED)
}

// readOnlyOS recognises a write-protected medium (ERROR_WRITE_PROTECT, Windows' EROFS);
// ERROR_ACCESS_DENIED is fs.ErrPermission already.
func readOnlyOS(err error) bool {
	return errors.Is(err, windows.ERROR_WRITE_PROTECT)
}
