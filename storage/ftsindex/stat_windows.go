//go:build windows

package ftsindex

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// statID returns the volume serial number and file index of path, Windows' device and inode:
// equal values mean the same file. The path is opened for its attributes only, sharing
// everything, so the stat disturbs no other handle.
func statID(path string) (dev, ino uint64, err error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return 0, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, windows.FILE_READ_ATTRIBUTES,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return 0, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	defer windows.CloseHandle(h)
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &d); err != nil {
		return 0, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return uint64(d.VolumeSerialNumber), uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow), nil
}

// supersededOnDisk reports whether a newer database file than path's is in its directory.
// SQLite opens its files without FILE_SHARE_DELETE, so a file another process has open cannot
// be deleted on Windows (removeOlder retries at every open): its path keeps naming the same
// file after a Reset, and only the newer name tells that it was replaced. One directory
// listing per acquire.
func supersededOnDisk(path string) bool {
	own, ok := fileStamp(filepath.Base(path))
	if !ok {
		return false
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return false
	}
	for _, e := range entries {
		if n, ok := fileStamp(e.Name()); ok && n > own {
			return true
		}
	}
	return false
}
