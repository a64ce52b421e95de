package local

import (
	"fmt"
	"os"
)

// osFS is the operating system's file system: what the store uses outside its power-loss
// tests. Its methods add nothing to the calls they make, so the save path costs what it did
// before the store's file operations went through fileSystem.
type osFS struct{}

// osFile is an open file of osFS. A struct of one pointer, so that storing it in a file
// interface allocates nothing.
type osFile struct{ *os.File }

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) CreateTemp(dir, pattern string) (file, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("chmod %s: %w", f.Name(), err)
	}
	return osFile{f}, nil
}

func (osFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) MkdirAll(name string, perm os.FileMode) error { return os.MkdirAll(name, perm) }

// Stat, Rename, Remove, SameFile and SyncDir are the platform's: fs_os_unix.go,
// fs_os_windows.go.

func (f osFile) Datasync() error { return fdatasync(f.File) }
