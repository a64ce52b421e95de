// Command releasetool writes release archives that are the same bytes whoever builds them
// and whenever (scripts/release.sh runs it):
//
//	releasetool archive -mtime UNIX -o OUT.tar.gz|OUT.zip DIR
//	releasetool sums DIR
//
// archive packs DIR's files under the top directory base(DIR): entries sorted by name, every
// time set to -mtime (the commit's time), owner 0:0 without names, modes 0755 (directories,
// and executables: files with an execute bit or ending in .exe) or 0644, gzip or zip headers
// without a name or time of their own. sums writes DIR/SHA256SUMS for the archives in DIR,
// sorted, in sha256sum's format ("<hex>  <name>"), so `sha256sum -c SHA256SUMS` checks them.
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "releasetool:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: releasetool archive -mtime UNIX -o OUT DIR | releasetool sums DIR")
	}
	switch args[0] {
	case "archive":
		fs := flag.NewFlagSet("archive", flag.ContinueOnError)
		mtime := fs.Int64("mtime", -1, "time of every entry (Unix seconds)")
		out := fs.String("o", "", "archive to write (.tar.gz or .zip)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 || *out == "" || *mtime < 0 {
			return errors.New("usage: releasetool archive -mtime UNIX -o OUT.tar.gz|OUT.zip DIR")
		}
		return writeArchive(*out, fs.Arg(0), time.Unix(*mtime, 0).UTC())
	case "sums":
		if len(args) != 2 {
			return errors.New("usage: releasetool sums DIR")
		}
		return writeSums(args[1])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// entry is one file or directory to archive.
type entry struct {
	name string // slash-separated, under the top directory
	path string // on disk
	dir  bool
	exec bool
}

// collect lists dir's tree (dir itself as base(dir)/), sorted by name.
func collect(dir string) ([]entry, error) {
	top := filepath.Base(filepath.Clean(dir))
	var out []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := path.Join(top, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			out = append(out, entry{name: name + "/", path: p, dir: true})
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, entry{name: name, path: p, exec: fi.Mode()&0o111 != 0 || strings.HasSuffix(name, ".exe")})
		default:
			return fmt.Errorf("%s: only files and directories can be archived", p)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

func (e entry) mode() int64 {
	if e.dir || e.exec {
		return 0o755
	}
	return 0o644
}

func writeArchive(out, dir string, mtime time.Time) (err error) {
	entries, err := collect(dir)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out)
		}
	}()
	switch {
	case strings.HasSuffix(out, ".tar.gz"):
		return writeTarGz(f, entries, mtime)
	case strings.HasSuffix(out, ".zip"):
		return writeZip(f, entries, mtime)
	}
	return fmt.Errorf("%s: want a .tar.gz or .zip name", out)
}

func writeTarGz(w io.Writer, entries []entry, mtime time.Time) error {
	// No name, no time, OS "unknown": Go's gzip writes the same header on every system.
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		// USTAR: no access or change times, no owner names, nothing of the build machine.
		h := &tar.Header{Name: e.name, Mode: e.mode(), ModTime: mtime, Format: tar.FormatUSTAR}
		if e.dir {
			h.Typeflag = tar.TypeDir
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(e.path)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, entries []entry, mtime time.Time) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestCompression)
	})
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(fs.FileMode(e.mode()))
		if e.dir {
			h.Method = zip.Store
			h.SetMode(fs.ModeDir | 0o755)
			if _, err := zw.CreateHeader(h); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(e.path)
		if err != nil {
			return err
		}
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(b); err != nil {
			return err
		}
	}
	return zw.Close()
}

// writeSums writes dir/SHA256SUMS for the .tar.gz and .zip files in dir.
func writeSums(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var lines []string
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(n, ".tar.gz") && !strings.HasSuffix(n, ".zip") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+n+"\n")
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(lines, "")), 0o644)
}
