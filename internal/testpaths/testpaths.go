package testpaths

import (
	"os"
	"path/filepath"
	"runtime"
)

// Root returns the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Testdata returns the path of a file in the top-level testdata directory.
func Testdata(elem ...string) string {
	return filepath.Join(append([]string{Root(), "testdata"}, elem...)...)
}

// CorpusDir returns the shared corpus directory: $SESSIONMEM_CORPUS, or the first
// shared/corpus found in the repository root's parent directories (../shared/corpus for a
// checkout next to it, ../../shared/corpus for a worktree one level further down). It returns
// "" when there is none, so a glob in it finds nothing and the test skips.
func CorpusDir() string {
	if d := os.Getenv("SESSIONMEM_CORPUS"); d != "" {
		if isDir(d) {
			return d
		}
		return ""
	}
	for d := filepath.Dir(Root()); ; d = filepath.Dir(d) {
		if c := filepath.Join(d, "shared", "corpus"); isDir(c) {
			return c
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
