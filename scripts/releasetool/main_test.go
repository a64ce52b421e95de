package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// tree makes dir/name with a binary, a README and a subdirectory, written in the given order
// with the given file times and modes, as two build machines might leave them.
func tree(t *testing.T, order []string, stamp time.Time, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessionmem_v1.0.0_linux_amd64")
	files := map[string]string{"sessionmem": "\x7fELF binary", "README.md": "# sessionmem\n", "docs/NOTES.md": "notes\n"}
	for _, name := range order {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		m := mode
		if name == "sessionmem" {
			m |= 0o100
		}
		if err := os.WriteFile(p, []byte(files[name]), m); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestArchivesAreReproducible: the same files give the same archive bytes whatever their
// times, modes and creation order on disk, in both formats; the entries are sorted, carry
// the given time, owner 0 and normalised modes, and read back whole.
func TestArchivesAreReproducible(t *testing.T) {
	mtime := time.Date(2026, 11, 27, 8, 54, 10, 0, time.UTC)
	a := tree(t, []string{"sessionmem", "README.md", "docs/NOTES.md"}, time.Now(), 0o600)
	b := tree(t, []string{"docs/NOTES.md", "README.md", "sessionmem"}, time.Unix(1, 0), 0o664)
	for _, ext := range []string{".tar.gz", ".zip"} {
		t.Run(ext, func(t *testing.T) {
			outA, outB := filepath.Join(t.TempDir(), "a"+ext), filepath.Join(t.TempDir(), "b"+ext)
			if err := run([]string{"archive", "-mtime", "1795769650", "-o", outA, a}); err != nil {
				t.Fatal(err)
			}
			if err := run([]string{"archive", "-mtime", "1795769650", "-o", outB, b}); err != nil {
				t.Fatal(err)
			}
			ba, _ := os.ReadFile(outA)
			bb, _ := os.ReadFile(outB)
			if !bytes.Equal(ba, bb) {
				t.Fatalf("two archives of the same files differ (%d and %d bytes)", len(ba), len(bb))
			}
			got := readBack(t, ba, ext)
			want := []file{
				{"sessionmem_v1.0.0_linux_amd64/", 0o755, ""},
				{"sessionmem_v1.0.0_linux_amd64/README.md", 0o644, "# sessionmem\n"},
				{"sessionmem_v1.0.0_linux_amd64/docs/", 0o755, ""},
				{"sessionmem_v1.0.0_linux_amd64/docs/NOTES.md", 0o644, "notes\n"},
				{"sessionmem_v1.0.0_linux_amd64/sessionmem", 0o755, "\x7fELF binary"},
			}
			if !reflect.DeepEqual(got.files, want) {
				t.Fatalf("entries:\n%v\nwant:\n%v", got.files, want)
			}
			for _, tm := range got.times {
				if !tm.Equal(mtime) {
					t.Fatalf("entry time %v, want %v", tm, mtime)
				}
			}
		})
	}
}

type file struct {
	name string
	mode int64
	data string
}

type readResult struct {
	files []file
	times []time.Time
}

func readBack(t *testing.T, b []byte, ext string) readResult {
	t.Helper()
	var r readResult
	if ext == ".zip" {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(rc)
			rc.Close()
			r.files = append(r.files, file{f.Name, int64(f.Mode().Perm()), string(data)})
			r.times = append(r.times, f.Modified)
		}
		return r
	}
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		t.Fatalf("gzip header carries name %q, time %v", gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || len(h.PAXRecords) > 0 {
			t.Fatalf("%s: owner %d:%d %q:%q, PAX %v", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.PAXRecords)
		}
		data, _ := io.ReadAll(tr)
		r.files = append(r.files, file{h.Name, h.Mode, string(data)})
		r.times = append(r.times, h.ModTime)
	}
	return r
}

// TestSums: SHA256SUMS lists the archives, sorted, in sha256sum's format.
func TestSums(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"b_linux.tar.gz": "bb", "a_windows.zip": "aa", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run([]string{"sums", dir}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	want := sum("aa") + "  a_windows.zip\n" + sum("bb") + "  b_linux.tar.gz\n"
	if string(got) != want {
		t.Fatalf("SHA256SUMS:\n%s\nwant:\n%s", got, want)
	}
	if err := run([]string{"archive", "-o", "x.rar", dir}); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Fatalf("archive without -mtime: %v", err)
	}
}
