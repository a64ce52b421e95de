package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// fileSystem is every file operation the store makes in its directory (the search index in
// search/ aside: SQLite opens its own files). Production uses the operating system's (osFS);
// the power-loss tests use a simulated disk that keeps only what a sync made durable
// (crashfs_test.go), so the interface holds just what that simulation must model: no path
// names beyond what filepath.Join builds, and nothing platform-specific (locks are whole-file
// locks, whatever call a platform takes them with).
type fileSystem interface {
	// OpenFile opens name with os.OpenFile's flags: O_RDONLY or O_RDWR, O_CREATE, O_APPEND.
	OpenFile(name string, flag int, perm os.FileMode) (file, error)
	// CreateTemp creates a new file in dir with mode 0600, named like os.CreateTemp's.
	CreateTemp(dir, pattern string) (file, error)
	Stat(name string) (os.FileInfo, error)
	ReadDir(name string) ([]os.DirEntry, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(name string, perm os.FileMode) error
	// SyncDir makes the creations, renames and removals in directory name durable.
	SyncDir(name string) error
	// SameFile reports whether a and b (from this fileSystem's Stat) describe the same file.
	SameFile(a, b os.FileInfo) bool
}

// file is an open file of a fileSystem.
type file interface {
	Name() string
	ReadAt(b []byte, off int64) (int, error)
	WriteAt(b []byte, off int64) (int, error)
	Write(b []byte) (int, error)
	Truncate(size int64) error
	// Sync makes the file's data and metadata durable (fsync); not its name (SyncDir).
	Sync() error
	// Datasync makes the file's data durable, and its metadata only where reading the data
	// needs it, such as a new size (fdatasync; Sync where the platform has nothing cheaper).
	Datasync() error
	Stat() (os.FileInfo, error)
	// Lock takes an advisory lock on the whole file, shared or exclusive, that belongs to this
	// open file: it excludes every other open file of the same file, in this process and in
	// others, and ends with Unlock or Close. Without wait, a conflicting lock makes it return
	// errLockBusy at once.
	Lock(exclusive, wait bool) error
	Unlock() error
	Close() error
}

// inoer is a FileInfo's Sys() of a fileSystem that is not the platform's: the file's
// identity, which the platform's stat structure gives otherwise (fileIno).
type inoer interface{ Ino() uint64 }

// fileID identifies a file version cheaply: a change in inode, size or mtime means another
// writer touched it since we last looked.
type fileID struct {
	ino   uint64
	size  int64
	mtime int64
}

func statID(fi os.FileInfo) fileID {
	return fileID{ino: fileIno(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// readAt reads exactly len(b) bytes at off.
func readAt(f file, b []byte, off int64) error {
	_, err := f.ReadAt(b, off)
	return err
}

// readFile is os.ReadFile on fsys.
func readFile(fsys fileSystem, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	if n, err := f.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, err
	}
	return b, nil
}

// mkdirDurable creates dir and its missing parents (0700), syncing the directory each one is
// created in: a new directory's name is durable only once its parent is synced, and a power
// loss that took the store's directory (or sessions/) would take every session in it, synced
// or not. A parent this process may not read (so not sync) is left to the file system.
func mkdirDurable(fsys fileSystem, dir string) error {
	if _, err := fsys.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(fsys, parent); err != nil {
			return err
		}
	}
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := syncDir(fsys, parent); err != nil && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil
}

// syncDir makes renames, creations and removals in dir durable.
func syncDir(fsys fileSystem, dir string) error {
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
