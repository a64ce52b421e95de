//go:build !windows

package local

import "os"

func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }
func (osFS) Rename(oldpath, newpath string) error  { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error              { return os.Remove(name) }
func (osFS) SameFile(a, b os.FileInfo) bool        { return os.SameFile(a, b) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
