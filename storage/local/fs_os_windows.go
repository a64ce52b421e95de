//go:build windows

package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows"
)

// winFileInfo is an os.FileInfo made from GetFileInformationByHandle, which, unlike os.Stat's,
// carries the file's identity (the volume's serial number and the file index, Windows' inode
// number): the store tells a rewritten file from a grown one by it (fileID).
type winFileInfo struct {
	name string
	d    windows.ByHandleFileInformation
}

func (fi *winFileInfo) Name() string { return fi.name }
func (fi *winFileInfo) Size() int64  { return int64(fi.d.FileSizeHigh)<<32 | int64(fi.d.FileSizeLow) }
func (fi *winFileInfo) IsDir() bool  { return fi.d.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 }
func (fi *winFileInfo) Sys() any     { return fi }

// Ino is the file index, unique on its volume (inoer).
func (fi *winFileInfo) Ino() uint64 {
	return uint64(fi.d.FileIndexHigh)<<32 | uint64(fi.d.FileIndexLow)
}

func (fi *winFileInfo) ModTime() time.Time {
	return time.Unix(0, fi.d.LastWriteTime.Nanoseconds())
}

func (fi *winFileInfo) Mode() os.FileMode {
	m := os.FileMode(0o666)
	if fi.d.FileAttributes&windows.FILE_ATTRIBUTE_READONLY != 0 {
		m = 0o444
	}
	if fi.IsDir() {
		m |= os.ModeDir | 0o111
	}
	return m
}

// statHandle describes the file h is open on.
func statHandle(h windows.Handle, name string) (*winFileInfo, error) {
	fi := &winFileInfo{name: filepath.Base(name)}
	if err := windows.GetFileInformationByHandle(h, &fi.d); err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	return fi, nil
}

// Stat opens name for no access but its attributes (sharing everything, so it disturbs no
// other handle) and reads its information by handle: the identity comes with it.
func (osFS) Stat(name string) (os.FileInfo, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	h, err := windows.CreateFile(p, windows.FILE_READ_ATTRIBUTES, shareAll, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_BACKUP_SEMANTICS, 0) // BACKUP_SEMANTICS: directories open too
	if err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	defer windows.CloseHandle(h)
	return statHandle(h, name)
}

// Stat is the open file's information with its identity (winFileInfo).
func (f osFile) Stat() (os.FileInfo, error) {
	return statHandle(windows.Handle(f.Fd()), f.Name())
}

func (osFS) SameFile(a, b os.FileInfo) bool {
	x, ok1 := a.(*winFileInfo)
	y, ok2 := b.(*winFileInfo)
	if !ok1 || !ok2 {
		return os.SameFile(a, b)
	}
	return x.d.VolumeSerialNumber == y.d.VolumeSerialNumber && x.Ino() == y.Ino()
}

// Rename replaces newpath with POSIX semantics (os.Root's rename asks for them, and falls
// back where the file system has none): the name changes at once even while other processes
// hold the old file open, as they may (every open shares delete). A brief sharing violation,
// from a program that opened the file without sharing delete (an antivirus scanner, a search
// indexer, a backup), is retried for a while.
//
// Where there are no POSIX semantics (FAT, exFAT, network shares; Wine), a file open anywhere
// cannot be replaced, and every process keeps index.jsonl open: an index rewrite would fail
// for as long as another process has the store open, and so would the Open that needs one.
// For the index and the state snapshots alone, both rebuilt when missing, the replacement
// then takes two renames: the old file moves aside (a rename of an open file is allowed when
// every handle shares delete) and is deleted, and the new one takes its name. A crash between
// the two leaves no index (Open rebuilds it) or no snapshot (a cache miss); a reader between
// them finds none and keeps what it has. Session files never take this path: their
// replacement happens under the session's lock, where no handle of the store is open on them.
func (osFS) Rename(oldpath, newpath string) error {
	err := retryShared(func() error { return renamePOSIX(oldpath, newpath) })
	if err == nil || !errors.Is(err, windows.ERROR_ACCESS_DENIED) || !rebuildable(newpath) {
		return err
	}
	aside := fmt.Sprintf("%s.old-%d", oldpath, time.Now().UnixNano())
	if os.Rename(newpath, aside) != nil {
		return err
	}
	if err2 := os.Rename(oldpath, newpath); err2 != nil {
		os.Rename(aside, newpath) // put it back; if that fails too, it is rebuilt
		return err2
	}
	os.Remove(aside) // gone when the last handle on it closes
	return nil
}

// rebuildable reports whether the file at path may be missing for a moment (Rename).
func rebuildable(path string) bool {
	base := filepath.Base(path)
	return base == indexName || strings.HasSuffix(base, stateSuffix)
}

func renamePOSIX(oldpath, newpath string) error {
	dir := filepath.Dir(oldpath)
	if filepath.Dir(newpath) != dir {
		return os.Rename(oldpath, newpath)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return os.Rename(oldpath, newpath)
	}
	defer r.Close()
	if err := r.Rename(filepath.Base(oldpath), filepath.Base(newpath)); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// Remove deletes name with DeleteFileW, which takes POSIX semantics where the file system has
// them (Windows 10 1809 and later on NTFS: the name goes at once, while open handles keep the
// file) and otherwise leaves the name until the last handle closes. (os.Root's Remove asks for
// them explicitly, and fails where they are missing in a way Go does not fall back from,
// Wine among them.) A brief sharing violation is retried (Rename).
func (osFS) Remove(name string) error {
	return retryShared(func() error { return os.Remove(name) })
}

// SyncDir does nothing: Windows has no directory fsync (FlushFileBuffers takes a handle open
// for writing, which a directory's cannot be), and NTFS records a directory's changes in its
// own journal.
func (osFS) SyncDir(name string) error { return nil }

// retryShared runs op again, for up to a quarter of a second, while it fails with a sharing
// violation or access denied: what Windows answers while another program holds the file
// without sharing delete, or while a file deleted under legacy semantics is still open.
func retryShared(op func() error) error {
	delay := time.Millisecond
	deadline := time.Now().Add(250 * time.Millisecond)
	for {
		err := op()
		if err == nil || !(errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_ACCESS_DENIED)) ||
			time.Now().After(deadline) {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}
