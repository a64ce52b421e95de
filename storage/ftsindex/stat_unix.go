//go:build unix

package ftsindex

import (
	"fmt"
	"os"
	"syscall"
)

// statID returns the device and inode of path: equal values mean the same file, even
// after another process deleted or replaced the path.
func statID(path string) (dev, ino uint64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("stat %s: no inode", path)
	}
	return uint64(st.Dev), st.Ino, nil
}

// supersededOnDisk is false on Unix: a replaced database file is unlinked at once, even while
// open, so statID tells.
func supersededOnDisk(string) bool { return false }
