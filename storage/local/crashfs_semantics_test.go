package local

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestCrashFS checks the simulated disk's promises (crashfs_test.go), which the power-loss
// test relies on: what a sync made durable survives every mode, and what it did not survives
// only as the mode allows.
func TestCrashFS(t *testing.T) {
	for _, tt := range crashFSCases() {
		t.Run(tt.name, func(t *testing.T) {
			for mode := range numCrashModes {
				for seed := range uint64(8) {
					c, f := crashFSSetup(t)
					tt.do(t, c, f)
					tt.check(t, mode, c.image(rand.New(rand.NewPCG(seed, 0)), mode))
				}
			}
		})
	}
	// A torn write keeps any subset of its pages: a later one without an earlier one too.
	t.Run("pages torn in any order", testCrashFSTornPages)
	t.Run("locks", testCrashFSLocks)
}

// crashFSCase is something done to a fresh disk's file /d/f, and a check of what each mode's
// image keeps of it.
type crashFSCase struct {
	name string
	do   func(t *testing.T, c *crashFS, f file)
	// check gets the image of each mode.
	check func(t *testing.T, mode crashMode, img *crashFS)
}

// crashFSCases are TestCrashFS's cases: names, data, truncations, renames and removals,
// synced or not.
func crashFSCases() []crashFSCase {
	return []crashFSCase{
		{"a new name needs its directory synced", func(t *testing.T, c *crashFS, f file) {
			must(t, f.Sync())
		}, func(t *testing.T, mode crashMode, img *crashFS) {
			if _, there := crashFSRead(t, img, "/d/f"); (mode == crashKill && !there) || (mode == crashStrict && there) {
				t.Errorf("file there: %v", there)
			}
		}},
		{"synced data and name survive", func(t *testing.T, c *crashFS, f file) {
			_, err := f.WriteAt([]byte("hello"), 0)
			must(t, err)
			must(t, f.Datasync())
			must(t, c.SyncDir("/d"))
		}, func(t *testing.T, mode crashMode, img *crashFS) {
			if got, _ := crashFSRead(t, img, "/d/f"); got != "hello" {
				t.Errorf("got %q", got)
			}
		}},
		{"unsynced write lost unless kept", func(t *testing.T, c *crashFS, f file) {
			must(t, c.SyncDir("/d"))
			_, err := f.WriteAt([]byte("hello"), 0)
			must(t, err)
		}, func(t *testing.T, mode crashMode, img *crashFS) {
			got, _ := crashFSRead(t, img, "/d/f")
			if (mode == crashKill && got != "hello") || (mode == crashStrict && got != "") ||
				(got != "" && got != "hello" && got != "\x00\x00\x00\x00\x00") {
				t.Errorf("got %q", got)
			}
		}},
		{"unsynced truncation undone", func(t *testing.T, c *crashFS, f file) {
			must(t, c.SyncDir("/d"))
			_, err := f.WriteAt([]byte("hello"), 0)
			must(t, err)
			must(t, f.Sync())
			must(t, f.Truncate(2))
		}, func(t *testing.T, mode crashMode, img *crashFS) {
			got, _ := crashFSRead(t, img, "/d/f")
			// A torn truncation may keep the old size and the new (zeroed) end of the page.
			if (mode == crashKill && got != "he") || (mode == crashStrict && got != "hello") ||
				(got != "he" && got != "hello" && got != "he\x00\x00\x00") {
				t.Errorf("got %q", got)
			}
		}},
		{"unsynced rename undone", func(t *testing.T, c *crashFS, f file) {
			must(t, c.SyncDir("/d"))
			must(t, c.Rename("/d/f", "/d/g"))
		}, func(t *testing.T, mode crashMode, img *crashFS) {
			_, f := crashFSRead(t, img, "/d/f")
			_, g := crashFSRead(t, img, "/d/g")
			if f == g || (mode == crashKill && f) || (mode == crashStrict && g) {
				t.Errorf("f there: %v, g there: %v", f, g)
			}
		}},
		{"unsynced removal undone", func(t *testing.T, c *crashFS, f file) {
			must(t, c.SyncDir("/d"))
			must(t, c.Remove("/d/f"))
		}, func(t *testing.T, mode crashMode, img *crashFS) {
			if _, there := crashFSRead(t, img, "/d/f"); (mode == crashKill && there) || (mode == crashStrict && !there) {
				t.Errorf("file there: %v", there)
			}
		}},
	}
}

func testCrashFSTornPages(t *testing.T) {
	page := func(c byte) []byte { return bytes.Repeat([]byte{c}, crashPage) }
	seen := map[string]bool{}
	for seed := range uint64(64) {
		c, f := crashFSSetup(t)
		must(t, c.SyncDir("/d"))
		_, err := f.WriteAt(append(page('a'), page('b')...), 0)
		must(t, err)
		img := c.image(rand.New(rand.NewPCG(seed, 0)), crashTornAny)
		got, _ := crashFSRead(t, img, "/d/f")
		var shape string
		for off := 0; off < len(got); off += crashPage {
			shape += string(got[off]) // a, b, or NUL for a page that was lost
		}
		seen[shape] = true
	}
	for _, want := range []string{"", "ab", "a\x00", "\x00b"} {
		if !seen[want] {
			t.Errorf("no image with pages %q (saw %v)", want, seen)
		}
	}
}

func testCrashFSLocks(t *testing.T) {
	c, f := crashFSSetup(t)
	g, err := c.OpenFile("/d/f", os.O_RDWR, 0)
	must(t, err)
	must(t, f.Lock(false, false))
	must(t, g.Lock(false, false))
	if err := g.Lock(true, false); !errors.Is(err, errLockBusy) {
		t.Fatalf("exclusive beside a shared lock: %v", err)
	}
	done := make(chan error)
	go func() { done <- g.Lock(true, true) }()
	must(t, f.Close())
	must(t, <-done)
	h, err := c.OpenFile("/d/f", os.O_RDWR, 0)
	must(t, err)
	if err := h.Lock(false, false); !errors.Is(err, errLockBusy) {
		t.Fatalf("shared beside an exclusive lock: %v", err)
	}
	must(t, g.Unlock())
	must(t, h.Lock(false, false))
}

// crashFSRead returns the file's content and whether it exists.
func crashFSRead(t *testing.T, c *crashFS, name string) (string, bool) {
	t.Helper()
	b, err := readFile(c, name)
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// crashFSSetup makes a disk with a durable directory /d and a file /d/f open in it.
func crashFSSetup(t *testing.T) (*crashFS, file) {
	t.Helper()
	c := newCrashFS(func() time.Time { return time.Unix(0, 0) })
	if err := c.MkdirAll("/d", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := c.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	f, err := c.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
