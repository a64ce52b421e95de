package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/sessionmem/sessionmem/storage"
)

// What an operator's commands read of the store ("sessionmem stats", "verify", "reindex")
// through storage's optional interfaces.

var (
	_ storage.Reindexer     = (*Store)(nil)
	_ storage.IndexStatser  = (*Store)(nil)
	_ storage.IndexVerifier = (*Store)(nil)
	_ storage.Sizer         = (*Store)(nil)
)

// IndexStats implements storage.IndexStatser with SearchStats's figures: the entries the
// index holds, of how many sessions, its size on disk, and whether it is being rebuilt.
func (s *Store) IndexStats(ctx context.Context) (storage.IndexStats, error) {
	st, err := s.SearchStats(ctx)
	if err != nil {
		return storage.IndexStats{}, err
	}
	return storage.IndexStats{Entries: st.Docs, Sessions: st.Sessions, Bytes: st.Bytes, Rebuilding: st.Rebuilding}, nil
}

// Size implements storage.Sizer: the regular files of the store's directory, as the operating
// system sees them (the search index's SQLite files included, which the store does not open
// through its own file system); Sessions those under sessions/, Index those under search/.
func (s *Store) Size(ctx context.Context) (storage.Size, error) {
	if err := s.enter(); err != nil {
		return storage.Size{}, err
	}
	defer s.leave()
	sessions := s.sessDir + string(filepath.Separator)
	search := filepath.Join(s.dir, searchDirName) + string(filepath.Separator)
	var size storage.Size
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed since the directory was read
		}
		size.Total += fi.Size()
		switch {
		case strings.HasPrefix(path, sessions):
			size.Sessions += fi.Size()
		case strings.HasPrefix(path, search):
			size.Index += fi.Size()
		}
		return nil
	})
	if err != nil {
		return storage.Size{}, fmt.Errorf("measure %s: %w", s.dir, err)
	}
	return size, nil
}
