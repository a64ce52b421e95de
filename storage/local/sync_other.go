//go:build !linux

package local

import "os"

// fdatasync is f.Sync where the platform has no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }
