package local

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// durability is what writeFileAtomic makes durable before it returns.
type durability int

const (
	// durableNone: nothing is synced. For caches whose readers check what they read (a
	// checksum), so that an empty or torn file after a power loss is only a cache miss, and
	// which are written in the background, where an fsync would compete with the saves'.
	durableNone durability = iota
	// durableFile: the file's bytes, not yet its name; callers that rename several files
	// sync the directory once at the end.
	durableFile
	// durableName: the file and its name (the directory is synced too).
	durableName
)

// writeFileAtomic replaces dir/name with data: temp file in the same directory, rename, with
// the fsyncs d asks for. A reader finds the old file or the new one, never a part.
func writeFileAtomic(fsys fileSystem, dir, name string, data []byte, d durability) (err error) {
	tmp, err := fsys.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp for %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			fsys.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write temp for %s: %w", name, err)
	}
	if d >= durableFile {
		if err = tmp.Sync(); err != nil {
			return fmt.Errorf("sync temp for %s: %w", name, err)
		}
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close temp for %s: %w", name, err)
	}
	if err = fsys.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rename temp to %s: %w", name, err)
	}
	if d >= durableName {
		if err = syncDir(fsys, dir); err != nil {
			return err
		}
	}
	return nil
}

func jsonMarshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode json: %w", err)
	}
	return b, nil
}
