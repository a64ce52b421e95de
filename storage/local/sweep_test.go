package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenRemovesStaleTemps: Open removes the temp files a crash left between a write and
// its rename, in the sessions directory and beside index.jsonl, and leaves a young one (a
// write in progress in another process) and everything else alone.
func TestOpenRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	mustCreate(t, s, "a")
	s.Close()
	sess := filepath.Join(dir, "sessions")
	old := time.Now().Add(-staleTempAge - time.Minute)
	files := []struct {
		path     string
		old      bool
		survives bool
	}{
		{filepath.Join(sess, ".a.zst.tmp-123"), true, false},
		{filepath.Join(sess, ".b.tail.jsonl.tmp-9"), true, false},
		{filepath.Join(dir, ".index.jsonl.tmp-77"), true, false},
		{filepath.Join(sess, ".c.zst.tmp-5"), false, true}, // young: another process's write
		{filepath.Join(sess, "notes.txt"), true, true},     // not ours to judge
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if f.old {
			if err := os.Chtimes(f.path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	s = mustOpen(t, dir, Options{})
	for _, f := range files {
		_, err := os.Stat(f.path)
		if exists := err == nil; exists != f.survives {
			t.Errorf("%s: exists %v, want %v", filepath.Base(f.path), exists, f.survives)
		}
	}
	if _, err := s.Get(context.Background(), "a"); err != nil {
		t.Fatalf("session a after the sweep: %v", err)
	}
}
