package local

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable, and its metadata only where reading the data needs it
// (a size change): an overwrite inside the file commits no journal transaction on ext4.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
