package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestFilesRecordWriterVersion: every file that carries a format version records the
// sessionmem version that wrote it beside it.
func TestFilesRecordWriterVersion(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	mustCreate(t, s, "a")
	// The first save goes into the .zst (writeFirst); the second writes the tail.
	appendBatches(t, s, "a", [][]storage.Record{recordsOf(testLines(t)[:1]), recordsOf(testLines(t)[1:2])})
	// The index header is written when the index is rewritten: Close does when it is due,
	// rewriteLocked always.
	s.idx.mu.Lock()
	err := s.idx.rewriteLocked()
	s.idx.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	want := storage.WriterVersion()
	firstLine := func(p string) []byte {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		line, err := bufio.NewReader(f).ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	// The tail before Close, which removes it (a session at rest keeps its .zst only).
	tail := firstLine(filepath.Join(dir, "sessions", "a.tail.jsonl"))
	s.Close()
	zst, err := os.ReadFile(filepath.Join(dir, "sessions", "a.zst"))
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint32(zst[4:])
	for name, js := range map[string][]byte{
		"index":        firstLine(filepath.Join(dir, "index.jsonl")),
		"tail":         tail,
		"header frame": zst[8 : 8+n],
	} {
		var h struct {
			V  int    `json:"v"`
			By string `json:"by"`
		}
		if err := json.Unmarshal(bytes.TrimRight(js, "\n"), &h); err != nil || h.V < 1 || h.By != want {
			t.Errorf("%s header %s: by %q, want %q (%v)", name, js, h.By, want, err)
		}
	}
}

// TestNewerFormatNamesWriter: a file of a newer format is refused with the version that
// wrote it, so the user knows what to upgrade to; a file without one still says upgrade.
func TestNewerFormatNamesWriter(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, dir string)
		open   bool // refused by Open (else by View)
		want   string
	}{
		{"index", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "index.jsonl"), []byte(`{"v":3,"index":"sessionmem","by":"v9.1.0"}`+"\n"), 0o600)
		}, true, "has format version 3, written by sessionmem v9.1.0; this sessionmem ("},
		{"tail", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "sessions", "s.tail.jsonl"), []byte(`{"v":9,"tail":"s","by":"v9.1.0"}`+"\n"), 0o600)
		}, false, "session s tail has format version 9, written by sessionmem v9.1.0"},
		{"header frame", func(t *testing.T, dir string) {
			writeHeader(t, dir, "s", `{"v":2,"id":"s","by":"v9.1.0"}`)
		}, false, "has format version 2, written by sessionmem v9.1.0"},
		{"header frame of a build that did not record it", func(t *testing.T, dir string) {
			writeHeader(t, dir, "s", `{"v":2,"id":"s"}`)
		}, false, "has format version 2; this sessionmem ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{})
			mustCreate(t, s, "s")
			appendBatches(t, s, "s", [][]storage.Record{recordsOf(testLines(t)[:2])})
			s.Close()
			tt.mutate(t, dir)
			s2, err := Open(dir, Options{})
			if !tt.open {
				if err != nil {
					t.Fatal(err)
				}
				defer s2.Close()
				err = s2.View(context.Background(), "s", func(storage.Reader) error { return nil })
			}
			var nf *storage.NewerFormatError
			if !errors.Is(err, storage.ErrNewerFormat) || !errors.As(err, &nf) {
				t.Fatalf("got %v, want a NewerFormatError", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || !strings.Contains(msg, "upgrade sessionmem") {
				t.Fatalf("message %q lacks %q", msg, tt.want)
			}
			if strings.Contains(tt.want, "v9.1.0") && !strings.Contains(err.Error(), "upgrade sessionmem to v9.1.0 or later") {
				t.Fatalf("message %q does not name the version to upgrade to", err)
			}
		})
	}
}
