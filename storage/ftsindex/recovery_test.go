package ftsindex

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// dbFiles lists the index database files in dir.
func dbFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "fts-*.db"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOpenRebuildsDamagedIndex(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, file string)
		reuse  bool // the damaged file may serve again
	}{
		{"deleted", func(t *testing.T, file string) {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(file + suffix)
			}
		}, false},
		{"garbled", func(t *testing.T, file string) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for i := range data {
				data[i] = byte(i*7 + 3)
			}
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"truncated to zero", func(t *testing.T, file string) {
			if err := os.Truncate(file, 0); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"older format", func(t *testing.T, file string) {
			// This release pretends to be the next one, to which the file is old.
			schemaVersion = SchemaVersion + 1
			t.Cleanup(func() { schemaVersion = SchemaVersion })
		}, false},
		{"version missing", func(t *testing.T, file string) { setVersion(t, file, 0) }, false},
		{"foreign database", func(t *testing.T, file string) {
			os.Remove(file)
			db, err := sql.Open("sqlite", file)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE other (x)`); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ix, err := Open(t.Context(), dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			feed(t, ix, sess("a"), doc("a", 1, "user", "before the damage"))
			file := ix.File()
			ix.Close() // checkpoints: everything is in the main file
			tt.damage(t, file)
			ix, err = Open(t.Context(), dir, Options{})
			if err != nil {
				t.Fatalf("Open after damage: %v", err)
			}
			defer ix.Close()
			if p, _ := ix.Progress(t.Context(), "a"); p.Through != 0 {
				t.Fatalf("progress %d in a rebuilt index", p.Through)
			}
			if files := dbFiles(t, dir); len(files) != 1 || (!tt.reuse && files[0] == file) {
				t.Fatalf("files after rebuild: %v (damaged was %s)", files, file)
			}
			// Usable again: catch up and search.
			feed(t, ix, sess("a"), doc("a", 1, "user", "before the damage"))
			if got := search(t, ix, Query{Match: mustParse(t, "damage")}); len(got) != 1 {
				t.Fatalf("after catch-up: %v", got)
			}
			if err := ix.Verify(t.Context()); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), filePrefix) {
					t.Fatalf("stray file %s", e.Name())
				}
				if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 && runtime.GOOS != "windows" { // no Unix modes there
					t.Fatalf("%s has mode %v, want 0600", e.Name(), fi.Mode())
				}
			}
		})
	}
}

func TestOpenNewerFormat(t *testing.T) {
	dir := t.TempDir()
	ix := openTest(t, dir)
	file := ix.File()
	ix.Close()
	setVersion(t, file, SchemaVersion+1)
	if _, err := Open(t.Context(), dir, Options{}); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("Open: %v, want ErrNewerFormat", err)
	}
	if files := dbFiles(t, dir); len(files) != 1 || files[0] != file {
		t.Fatalf("the newer index was touched: %v", files)
	}
}

func setVersion(t *testing.T, file string, v int) {
	t.Helper()
	db, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, v)); err != nil {
		t.Fatal(err)
	}
}

// TestResetSeenByOtherIndex: two Index values on one directory (as two processes would
// have); a Reset through one moves the other to the new file at its next call.
func TestResetSeenByOtherIndex(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	a, b := openTest(t, dir), openTest(t, dir)
	feed(t, a, sess("s"), doc("s", 1, "user", "old generation"))
	if got := search(t, b, Query{Match: mustParse(t, "generation")}); len(got) != 1 {
		t.Fatalf("b does not see a's doc: %v", got)
	}
	old := a.File()
	if err := a.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.File() == old {
		t.Fatal("Reset kept the file")
	}
	if got := search(t, b, Query{Match: mustParse(t, "generation")}); len(got) != 0 {
		t.Fatalf("b still searches the old file: %v", got)
	}
	if b.File() != a.File() {
		t.Fatalf("b uses %s, a %s", b.File(), a.File())
	}
	feed(t, b, sess("s"), doc("s", 1, "user", "new generation"))
	if got := search(t, a, Query{Match: mustParse(t, "new")}); len(got) != 1 {
		t.Fatalf("a does not see b's doc: %v", got)
	}
	if files := dbFiles(t, dir); len(files) != 1 {
		t.Fatalf("files %v", files)
	}
}

// TestFileDeletedWhileOpen: the file removed by hand while an Index uses it; the next call
// starts a new, empty index.
func TestFileDeletedWhileOpen(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	ix := openTest(t, dir)
	feed(t, ix, sess("s"), doc("s", 1, "user", "gone soon"))
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(ix.File() + suffix)
	}
	if p, err := ix.Progress(t.Context(), "s"); err != nil || p.Through != 0 {
		t.Fatalf("progress after deletion: %+v %v", p, err)
	}
	feed(t, ix, sess("s"), doc("s", 1, "user", "back again"))
	if got := search(t, ix, Query{Match: mustParse(t, "back")}); len(got) != 1 {
		t.Fatalf("%v", got)
	}
}

// TestCorruptPagesReported: damage inside the file (not its header) is reported as
// ErrCorrupt by Verify, and Reset recovers.
func TestCorruptPagesReported(t *testing.T) {
	dir := t.TempDir()
	ix, err := Open(t.Context(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		feed(t, ix, sess(fmt.Sprintf("s%d", i)), doc(fmt.Sprintf("s%d", i), 1, "user", fmt.Sprintf("word%d common text for pages %d", i, i)))
	}
	file := ix.File()
	ix.Close()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 8*4096 {
		t.Fatalf("file too small: %d", len(data))
	}
	for i := 4096; i < len(data); i++ { // every page but the first
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ix, err = Open(t.Context(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Verify(t.Context()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify: %v, want ErrCorrupt", err)
	}
	if err := ix.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ix.Verify(t.Context()); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
}

// TestDirectoryRemovedWhileOpen: the whole search directory removed (rm -rf) while an
// Index uses it; the next call recreates it.
func TestDirectoryRemovedWhileOpen(t *testing.T) {
	skipOnWindows(t)
	dir := filepath.Join(t.TempDir(), "search")
	ix := openTest(t, dir)
	feed(t, ix, sess("s"), doc("s", 1, "user", "doomed"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	feed(t, ix, sess("s"), doc("s", 1, "user", "phoenix"))
	if got := search(t, ix, Query{Match: mustParse(t, "phoenix")}); len(got) != 1 {
		t.Fatalf("%v", got)
	}
	if files := dbFiles(t, dir); len(files) != 1 {
		t.Fatalf("files %v", files)
	}
}

// skipOnWindows skips a test of a database file deleted while open: SQLite opens its files
// without FILE_SHARE_DELETE, so on Windows such a file cannot be deleted (supersededOnDisk
// covers the replacement that happens instead).
func skipOnWindows(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("Windows: a database file open elsewhere cannot be deleted")
	}
}
