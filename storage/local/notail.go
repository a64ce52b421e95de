package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// A session at rest keeps no tail file: the seal the background sealer makes once a session
// is idle (and Close's) removes the emptied tail instead of truncating it to its header line,
// so a small session takes one file of data (its .zst) instead of two, each at least a disk
// block (4 KiB on ext4: a sealed session of a few messages is 2-3 KiB). A missing tail reads
// as an empty one of the current version (absentTail), and the first append writes the tail
// whole, header, lines and padding, with one fsync of the file and one of the directory
// (createTail). Seals made by an append (at SealRecords or SealBytes, or before a Barrier)
// still empty the tail in place: the session is being written to.
//
// Removing the tail needs no sync. Until the removal reaches the disk the old tail may come
// back after a power loss, and every line it holds is at or below the last sealed seq (the
// seal was fsynced first), which readers skip and writers cut. A new tail is a new file, so
// no page of the old one can end up inside a new append (which emptyTail's sync guards
// against for a tail emptied in place), and an append into it is acknowledged only after the
// directory's fsync, which makes the removal durable too.

// absentTail stands for a session's missing tail file: its header line of the current
// version and nothing else. It reads like that file would; writing to it is a bug (writers
// create the tail first: createTail).
type absentTail struct {
	name string
	hdr  []byte
}

func newAbsentTail(path, id string) *absentTail {
	return &absentTail{name: path, hdr: encodeTailHeader(id)}
}

// isAbsent reports whether f stands for a missing tail.
func isAbsent(f file) bool {
	_, ok := f.(*absentTail)
	return ok
}

var errAbsentTail = errors.New("write to a tail that does not exist")

func (a *absentTail) Name() string { return a.name }

func (a *absentTail) ReadAt(b []byte, off int64) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if off >= int64(len(a.hdr)) {
		return 0, io.EOF
	}
	n := copy(b, a.hdr[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (a *absentTail) WriteAt([]byte, int64) (int, error) { return 0, errAbsentTail }
func (a *absentTail) Write([]byte) (int, error)          { return 0, errAbsentTail }

// Truncate to the header's length (emptyTail after a seal of nothing but extra lines) changes
// nothing; any other size is a bug.
func (a *absentTail) Truncate(size int64) error {
	if size != int64(len(a.hdr)) {
		return errAbsentTail
	}
	return nil
}

func (a *absentTail) Sync() error                { return nil }
func (a *absentTail) Datasync() error            { return nil }
func (a *absentTail) Stat() (os.FileInfo, error) { return absentInfo{a}, nil }
func (a *absentTail) Lock(bool, bool) error      { return errAbsentTail }
func (a *absentTail) Unlock() error              { return errAbsentTail }
func (a *absentTail) Close() error               { return nil }

// absentInfo is an absentTail's FileInfo: inode 0 (no real file has it), the header's size, no
// mtime.
type absentInfo struct{ a *absentTail }

func (i absentInfo) Name() string       { return i.a.name }
func (i absentInfo) Size() int64        { return int64(len(i.a.hdr)) }
func (i absentInfo) Mode() fs.FileMode  { return 0o600 }
func (i absentInfo) ModTime() time.Time { return time.Unix(0, 0) }
func (i absentInfo) IsDir() bool        { return false }
func (i absentInfo) Sys() any           { return i }
func (i absentInfo) Ino() uint64        { return 0 }

// createTail writes the tail whole where there was none: its header line followed by buf (an
// append's lines and padding) in a new file, fsynced, renamed into place, and the directory
// fsynced, after which the append is durable. Without room for the padding it writes the
// header and lines alone (tail is buf's first n bytes). It returns what it wrote after the
// header.
func (w *Writer) createTail(buf []byte, n int) ([]byte, error) {
	hdr := encodeTailHeader(w.id)
	write := func(b []byte) error {
		return writeFileAtomic(w.s.fs, w.s.sessDir, w.id+tailSuffix, append(append(make([]byte, 0, len(hdr)+len(b)), hdr...), b...), durableName)
	}
	err := write(buf)
	if err != nil && len(buf) > n && errors.Is(err, syscall.ENOSPC) {
		buf = buf[:n]
		err = write(buf)
	}
	if err != nil {
		return nil, fmt.Errorf("append session %s: %w", w.id, err)
	}
	f, tid, err := openID(w.s.fs, w.s.tailPath(w.id), os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("open session %s tail: %w", w.id, err)
	}
	w.tail, w.tid = f, tid
	v := &w.v
	v.hasTail, v.tailVer, v.tailHdrLen, v.tailEnd = true, TailFormatVersion, int64(len(hdr)), int64(len(hdr))
	v.tailID = tid
	return buf, nil
}

// removeTail removes the emptied tail of an idle session (see above), leaving an absentTail in
// its place.
func (w *Writer) removeTail() error {
	if isAbsent(w.tail) {
		return nil
	}
	if err := w.s.fs.Remove(w.s.tailPath(w.id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	w.tail.Close()
	a := newAbsentTail(w.s.tailPath(w.id), w.id)
	fi, _ := a.Stat()
	w.tail, w.tid = a, statID(fi)
	v := &w.v
	v.hasTail, v.lines, v.tailBytes, v.tailVer = true, nil, 0, TailFormatVersion
	v.tailHdrLen, v.tailEnd, v.tailID = int64(len(a.hdr)), int64(len(a.hdr)), w.tid
	v.padded, v.padChecked, v.staleFrom = false, true, 0
	return nil
}

// maxFirstWhole bounds the first append that writeFirst takes. Its record is compressed
// alone, without the context of the records after it that a seal of the tail would have put
// in the same frame: a session that goes on growing pays for that once, a few hundred bytes
// for a few ~2 KB messages (the corpus's four long sessions, saved 4 messages at a time,
// took 6 KB more in all), 18 KB for a first batch of 100 KB. A first save that large is a
// long session's (an import, a resumed conversation), which the tail serves better; below
// this the one file a short session keeps is worth more. It also bounds the compression on
// the save's path (about 100 µs for 10 KB at betterBelow's level).
const maxFirstWhole = 64 << 10

// firstWhole reports whether an append of n records, size bytes of lines, goes straight into
// the .zst (writeFirst): the session holds no record yet and has no tail file, so the .zst is
// its header frame alone.
func (w *Writer) firstWhole(size, n int) bool {
	v := &w.v
	return n > 0 && !w.s.opts.firstInTail && isAbsent(w.tail) && len(v.frames) == 0 && len(v.lines) == 0 && v.staleFrom == 0 &&
		v.brokenAt == 0 && v.zstEnd == v.hdrEnd && v.zstID.size == v.zstEnd &&
		size <= maxFirstWhole && n < w.s.opts.SealRecords && size < w.s.opts.SealBytes
}

// writeFirst writes a new session's first records as one sealed record of its .zst instead of
// into a tail, so that a session saved once never has a tail file: a directory entry fewer
// (ext4 directories never shrink), and no seal to make later. The .zst is written whole, its
// header frame as it is followed by the record, to a temp file that is fsynced and renamed
// over the old one, and the directory fsynced (writeFileAtomic): a crash leaves the old file,
// a session without records, or the new one, never a torn record (a record appended in place
// and torn by a power loss would look like damage to recovery, since no tail holds its lines).
// That is as many fsyncs as createTail's, which the append would otherwise make.
func (w *Writer) writeFirst(lines []byte, n int, first uint64) error {
	v := &w.v
	rec, fr, err := w.s.encodeRecord(lines, n, first)
	if err != nil {
		return fmt.Errorf("append session %s: %w", w.id, err)
	}
	file := make([]byte, v.hdrEnd, v.hdrEnd+int64(len(rec)))
	if err := readAt(w.zst, file, 0); err != nil {
		return fmt.Errorf("append session %s: %w", w.id, err)
	}
	file = append(file, rec...)
	// Closed first: a file system without POSIX rename semantics refuses to replace an open
	// file (replaceSessionFile).
	w.zst.Close()
	w.zst = nil
	werr := writeFileAtomic(w.s.fs, w.s.sessDir, w.id+zstSuffix, file, durableName)
	f, zid, err := openID(w.s.fs, w.s.zstPath(w.id), os.O_RDWR)
	if err != nil {
		w.poison()
		w.done = true // no .zst to go on with: the Update's other calls fail
		return fmt.Errorf("append session %s: reopen: %w", w.id, errors.Join(werr, err))
	}
	w.zst, w.zid = f, zid
	if werr != nil {
		w.poison()
		return fmt.Errorf("append session %s: %w", w.id, werr)
	}
	if zid.size != int64(len(file)) {
		w.poison()
		return fmt.Errorf("session %s: .zst changed while locked: %w", w.id, storage.ErrCorrupt)
	}
	fr.off = v.hdrEnd
	v.frames = []frameInfo{fr}
	v.zstEnd, v.zstID = zid.size, zid
	w.commit()
	return nil
}
