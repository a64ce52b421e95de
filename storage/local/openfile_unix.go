//go:build unix

package local

import (
	"os"
	"syscall"
)

// openFile is os.OpenFile for the files a call opens and closes again (a session's lock,
// .zst and tail). os.OpenFile offers every descriptor to the runtime's poller, which on Linux
// costs four fcntl calls and a failing epoll_ctl for a regular file, on every save and read;
// os.NewFile on a descriptor opened here costs one fcntl. The descriptor is blocking, as
// os.OpenFile's ends up for a regular file, and close-on-exec.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
