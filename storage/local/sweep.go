package local

import (
	"path/filepath"
	"strings"
	"time"
)

// staleTempAge is how old a temp file of writeFileAtomic must be before Open removes it. A
// temp file lives for one write (milliseconds; seconds for a large seal on a slow disk), so
// one this old was left by a process that crashed or lost power between creating it and its
// rename; a younger one may be another process's write in progress.
const staleTempAge = 10 * time.Minute

// isTempName tells whether name is one of writeFileAtomic's temp files (".<name>.tmp-<n>").
func isTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// sweepTemps removes the stale temp files among names (entries of dir): nothing reads them,
// and without this each crash mid-write would leave one for good. Failures are only logged:
// a temp file left is harmless.
func (s *Store) sweepTemps(dir string, names []string) {
	for _, name := range names {
		if !isTempName(name) {
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := s.fs.Stat(p)
		if err != nil || time.Since(fi.ModTime()) < staleTempAge {
			continue
		}
		if err := s.fs.Remove(p); err != nil {
			s.log.Warn("storage: could not remove a stale temp file", "file", p, "err", err)
			continue
		}
		s.log.Info("storage: removed a temp file a crash left", "file", p)
	}
}
