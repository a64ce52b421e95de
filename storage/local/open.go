package local

import (
	"bytes"
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/klauspost/compress/zstd"
)

// frameInfo locates one sealed record in <id>.zst.
type frameInfo struct {
	off         int64 // offset of the 32-byte record header
	frameLen    uint32
	count       uint32
	first       uint64
	contentSize uint64 // from the zstd frame header; 0 if not known
	sum         uint64 // the record header's xxh64, which names the frame's content
}

func (f frameInfo) last() uint64 { return f.first + uint64(f.count) - 1 }

// tailLine locates one kept line of the plain tail (n excludes the newline).
type tailLine struct {
	off int64
	n   int
	seq uint64
}

// sessView is what we know about a session's files as of the file versions in zstID/tailID.
// It is copied into each Reader; its slices are only ever appended to or replaced, never
// modified in place, so copies can share them.
type sessView struct {
	verified   bool // every frame's xxh64 was checked (writers need that before appending)
	zstID      fileID
	tailID     fileID
	hasTail    bool
	hdr        storage.Header
	hdrEnd     int64
	hdrRaw     []byte // the header frame as stored (sameFile)
	frames     []frameInfo
	zstEnd     int64 // end of the last good record
	brokenAt   int64 // reader only: a damaged record followed by intact ones starts here
	tailHdrLen int64
	tailVer    int   // the tail header's version (paddedTailVersion and up: padded)
	tailEnd    int64 // end of the last kept (or stale) line: where the tail's data ends
	// padded: zeros follow tailEnd to the end of the file (a reader saw a NUL byte at
	// tailEnd); padChecked: every byte after tailEnd is known to be zero (a writer read them
	// all, or wrote them), which a writer needs before it writes into them (doc.go).
	padded     bool
	padChecked bool
	lines      []tailLine
	tailBytes  int64
	// staleFrom is the seq of the first line the tail holds at or below the last sealed seq
	// (0: none): a seal the tail was not emptied after, or one a power loss tore.
	staleFrom uint64
}

func (v *sessView) lastSealed() uint64 {
	if len(v.frames) == 0 {
		return 0
	}
	return v.frames[len(v.frames)-1].last()
}

func (v *sessView) lastSeq() uint64 {
	if len(v.lines) > 0 {
		return v.lines[len(v.lines)-1].seq
	}
	return v.lastSealed()
}

func (v *sessView) zstClean() bool { return v.zstEnd == v.zstID.size }
func (v *sessView) tailClean() bool {
	return v.hasTail && (v.tailEnd == v.tailID.size || v.padded)
}

// tailDataEnd is where the index says the tail's data ends (fileSizes.Tail): where the next
// append writes, after a writer cut what a crash left behind the data (a torn line, or, when
// no record is kept, lines already sealed), whether zeros follow or not. Open's
// reconciliation takes a line as current while a NUL byte (or the end of the file) is
// there, so that must be the append's place: a line recording the end of a torn line or of
// sealed lines would pass for current once a writer cut them and its append's new padding
// lay there (TestCrashStaleIndexAfterCut).
func (v *sessView) tailDataEnd() int64 {
	if len(v.lines) == 0 {
		return v.tailHdrLen
	}
	return v.tailEnd
}

// sessState caches what this process knows of a session's files between calls (its view), so
// a call re-reads only what changed on disk, checked by inode, size and mtime under the
// session lock. It keeps no descriptor: every call opens the session's files and closes them
// when it returns, so a session deleted by another process holds no disk space here.
type sessState struct {
	id   string
	elem *list.Element // place in Store.lru (Store.mu)

	mu sync.Mutex
	ok bool
	v  sessView
}

func (s *Store) zstPath(id string) string  { return filepath.Join(s.sessDir, id+zstSuffix) }
func (s *Store) tailPath(id string) string { return filepath.Join(s.sessDir, id+tailSuffix) }
func (s *Store) lockPath(id string) string { return filepath.Join(s.sessDir, id+lockSuffix) }

func notFound(id string) error {
	return fmt.Errorf("session %s: %w", id, storage.ErrNotFound)
}

// openSession locks a session (shared or exclusive), opens its files and brings the cached
// view up to date. A writer repairs torn ends on the way; a reader only ignores them.
func (s *Store) openSession(ctx context.Context, id string, exclusive bool) (*Reader, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Checked before locking so that probing unknown ids leaves no lock files behind.
	if _, err := s.fs.Stat(s.zstPath(id)); errors.Is(err, fs.ErrNotExist) {
		s.forgetState(id)
		return nil, notFound(id)
	}
	lf, _, err := lockPath(ctx, s.fs, s.lockPath(id), exclusive)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	return s.openLocked(id, lf, exclusive)
}

// openLocked is openSession once lf holds the session's lock; the Reader owns lf (on error it
// is closed).
func (s *Store) openLocked(id string, lf file, exclusive bool) (*Reader, error) {
	r := &Reader{s: s, id: id, lock: lf, writable: exclusive}
	if err := r.openFiles(); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			s.dropLockFile(id, lf)
		}
		r.release()
		if errors.Is(err, storage.ErrNotFound) {
			s.forgetState(id)
		}
		return nil, err
	}
	st := s.state(id)
	st.mu.Lock()
	err := r.refresh(st)
	if err == nil {
		st.v, st.ok = r.v, true
	} else {
		st.ok = false
	}
	st.mu.Unlock()
	if err != nil {
		r.release()
		return nil, err
	}
	r.st = st
	return r, nil
}

// openFiles opens the session's .zst and tail (read-only for a reader) and records their
// identities. A missing .zst means the session was deleted; a missing tail is an empty one.
func (r *Reader) openFiles() error {
	flag, tflag := os.O_RDONLY, os.O_RDONLY
	if r.writable {
		// Not O_APPEND: appends go where the data ends, into the padding (writeTail).
		flag, tflag = os.O_RDWR, os.O_RDWR
	}
	var err error
	if r.zst, r.zid, err = openID(r.s.fs, r.s.zstPath(r.id), flag); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notFound(r.id)
		}
		return fmt.Errorf("open session %s: %w", r.id, err)
	}
	r.tail, r.tid, err = openID(r.s.fs, r.s.tailPath(r.id), tflag)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A session at rest has no tail file: it reads as an empty one (notail.go).
		a := newAbsentTail(r.s.tailPath(r.id), r.id)
		fi, _ := a.Stat()
		r.tail, r.tid = a, statID(fi)
	case err != nil:
		return fmt.Errorf("open session %s tail: %w", r.id, err)
	}
	return nil
}

// openID opens path and returns the file with its identity.
func openID(fsys fileSystem, path string, flag int) (file, fileID, error) {
	f, err := fsys.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fileID{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fileID{}, err
	}
	return f, statID(fi), nil
}

// refresh brings r.v up to date with the attached files, starting from the cached view when
// the files only grew since.
func (r *Reader) refresh(st *sessState) error {
	zid, tid := r.zid, r.tid
	// A writer starts only from a view whose frames were all checked and whose sealed log
	// ends where its last good record does: a reader's view of a torn or damaged end
	// (brokenAt) must not let a writer skip the walk that decides whether it may cut it.
	cached := st.ok && (!r.writable || (st.v.verified && st.v.zstClean()))

	// The sealed part.
	zstSame := false
	cached = cached && st.v.zstID.ino == zid.ino && r.sameFile(&st.v)
	switch {
	case cached && st.v.zstID == zid:
		r.v = st.v
		zstSame = true
	case cached && st.v.zstClean() && zid.size > st.v.zstEnd:
		r.v = st.v
		r.v.frames = r.v.frames[:len(r.v.frames):len(r.v.frames)]
	default:
		r.v = sessView{}
		if err := r.readHeader(zid.size); err != nil {
			return err
		}
		r.v.zstEnd = r.v.hdrEnd
	}
	if !zstSame {
		// A writer walks with checksums (and only starts from a verified cache); a reader's
		// walk leaves new frames unverified until decoded.
		startVerified, n0 := len(r.v.frames) == 0 || r.v.verified, len(r.v.frames)
		if err := r.walk(zid); err != nil {
			return err
		}
		r.v.verified = startVerified && (r.writable || len(r.v.frames) == n0)
	}
	if err := r.refreshTail(st, zstSame, tid); err != nil {
		return err
	}
	return r.settleTornSeal()
}

// refreshTail brings the tail's part of r.v up to date (refresh).
func (r *Reader) refreshTail(st *sessState, zstSame bool, tid fileID) error {
	switch {
	case r.tail == nil:
		if r.writable {
			if err := r.recreateTail(); err != nil {
				return err
			}
			return nil
		}
		r.v.hasTail, r.v.tailID, r.v.lines, r.v.tailBytes = false, fileID{}, nil, 0
		return nil
	case !zstSame || !st.v.tailClean() || st.v.tailID.ino != tid.ino || (r.writable && !st.v.padChecked):
		// Another file, a torn end, or padding a writer has not checked: from the start.
	case st.v.tailVer < paddedTailVersion && st.v.tailID == tid:
		return nil // unpadded: an append would have changed the size
	case st.v.tailVer < paddedTailVersion && tid.size > st.v.tailEnd:
		r.v.lines = r.v.lines[:len(r.v.lines):len(r.v.lines)]
		return r.scanTail(tid, r.v.tailEnd)
	case st.v.tailVer >= paddedTailVersion && tid.size >= st.v.tailEnd:
		// Padded: another process's append wrote where the data ended, without changing the
		// size (or extending it), and its mtime may not have moved (coarse timestamps), so
		// look at the byte there: a NUL (or the end of the file) means nothing is new.
		var b [1]byte
		if tid.size == st.v.tailEnd || (readAt(r.tail, b[:], st.v.tailEnd) == nil && b[0] == 0) {
			r.v.tailID, r.v.padded = tid, tid.size > st.v.tailEnd
			return nil
		}
		r.v.lines = r.v.lines[:len(r.v.lines):len(r.v.lines)]
		return r.scanTail(tid, r.v.tailEnd)
	}
	r.v.lines, r.v.tailBytes, r.v.hasTail = nil, 0, false
	return r.scanTail(tid, 0)
}

func (r *Reader) readHeader(size int64) error {
	var b [8]byte
	if size < 8 || readAt(r.zst, b[:], 0) != nil || binary.LittleEndian.Uint32(b[:]) != headerMagic {
		return fmt.Errorf("session %s: header frame missing: %w", r.id, storage.ErrCorrupt)
	}
	n := int64(binary.LittleEndian.Uint32(b[4:]))
	if n > maxHeaderFrame || 8+n > size {
		return fmt.Errorf("session %s: header frame length %d out of range: %w", r.id, n, storage.ErrCorrupt)
	}
	js := make([]byte, n)
	if err := readAt(r.zst, js, 8); err != nil {
		return fmt.Errorf("read session %s header: %w", r.id, err)
	}
	h, err := parseHeaderPayload(js, "session "+r.id)
	if err != nil {
		return err
	}
	if h.ID != r.id {
		return fmt.Errorf("session %s: header names session %q: %w", r.id, h.ID, storage.ErrCorrupt)
	}
	r.v.hdr, r.v.hdrEnd, r.v.hdrRaw = h, 8+n, append(b[:], js...)
	return nil
}

// sameFile reports whether r's .zst, which has the inode of the one v was read from, is that
// file: its header frame is v's. Inode, size and modification time alone can name another
// file: a session deleted and created again under its id by another process gets a .zst that
// may reuse the freed inode, and whose size and (coarse, a clock tick) mtime can be the
// same; its header differs (a new nonce). One read of a few hundred bytes, from the page cache.
func (r *Reader) sameFile(v *sessView) bool {
	if len(v.hdrRaw) == 0 {
		return false
	}
	b := make([]byte, len(v.hdrRaw))
	return readAt(r.zst, b, 0) == nil && bytes.Equal(b, v.hdrRaw)
}

// walk follows record headers from r.v.zstEnd. Writers check every frame's xxh64 and cut a
// torn or damaged end; readers only check headers and bounds (frames are verified when
// decoded) and ignore a bad end.
func (r *Reader) walk(zid fileID) error {
	expect := r.v.lastSealed() + 1
	frames, end, err := walkRecords(r.zst, r.v.zstEnd, zid.size, expect, r.writable, r.v.frames)
	if err != nil {
		return fmt.Errorf("read session %s: %w", r.id, err)
	}
	r.v.frames, r.v.zstEnd, r.v.zstID = frames, end, zid
	if end == zid.size {
		return nil
	}
	found, err := validRecordAfter(r.zst, end, zid.size)
	if err != nil {
		return fmt.Errorf("read session %s: %w", r.id, err)
	}
	if !r.writable && found {
		r.v.brokenAt = end // Records reports it instead of ending the history there
		return nil
	}
	if found {
		// Damage followed by intact records is not a crash (a seal appends one record and
		// fsyncs), so cutting here would destroy data: refuse instead.
		return fmt.Errorf("session %s: damaged record at offset %d followed by intact ones: %w", r.id, end, storage.ErrCorrupt)
	}
	// A torn end: part of a record, or all of one failing its checksum. A seal a crash tore
	// (some of its pages reached the disk, or its size did and a page did not), or a record
	// damaged after it was durable. The tail tells which (settleTornSeal); the end stays
	// until it has.
	r.tornSeal = end
	r.tornRecord, err = continuesAt(r.zst, end, zid.size, r.v.lastSealed()+1)
	if err != nil {
		return fmt.Errorf("read session %s: %w", r.id, err)
	}
	return nil
}

// continuesAt reports whether a record header that continues the sequence at expect starts
// at off.
func continuesAt(f file, off, size int64, expect uint64) (bool, error) {
	if size-off < recordHeaderSize {
		return false, nil
	}
	var hb [recordHeaderSize]byte
	if err := readAt(f, hb[:], off); err != nil {
		return false, err
	}
	rh, ok := parseRecordHeader(hb[:])
	return ok && rh.first == expect, nil
}

// tornDamage is the error for a torn end of the sealed log at off whose records the tail does
// not hold: damage, not what a crash leaves (settleTornSeal).
func tornDamage(off int64) error {
	return fmt.Errorf("last record at offset %d is damaged and the tail does not hold its records, so a crash did not leave it: %w", off, storage.ErrCorrupt)
}

// cutSealed cuts the .zst's torn end after the last good record, which ends at end.
func (r *Reader) cutSealed(end, size int64) error {
	if err := r.zst.Truncate(end); err != nil {
		return fmt.Errorf("repair session %s: %w", r.id, err)
	}
	if err := r.zst.Sync(); err != nil {
		return fmt.Errorf("repair session %s: %w", r.id, err)
	}
	r.s.log.Warn("storage: cut torn end of sealed log", "session", r.id, "offset", end, "dropped_bytes", size-end)
	fi, err := r.zst.Stat()
	if err != nil {
		return fmt.Errorf("stat session %s: %w", r.id, err)
	}
	r.v.zstID = statID(fi)
	return nil
}

// settleTornSeal decides what a torn end of the sealed log is. A seal's records are in the
// tail until the seal is fsynced (Append writes a barrier's records there first), so if a
// crash tore the seal, the tail still holds the record's records: a writer then cuts the
// torn end, and a reader leaves it out and reads those records from the tail. If the tail
// holds no records while the torn end starts with a record continuing the sequence, that
// record was durable and was damaged later (a file cut short, a page lost): a writer refuses
// (cutting would lose acknowledged records), a reader too (a shorter session read as if whole
// would pass for the truth: an export, a listing), and Verify reports it. A torn end that
// holds no such record (garbage, zeros) is cut: nothing acknowledged is in it. A reader,
// which does not check sealed records' checksums until it decodes them, also leaves out a
// last record that is all there but fails its checksum when the tail holds its records.
func (r *Reader) settleTornSeal() error {
	at, record := r.tornSeal, r.tornRecord
	r.tornSeal, r.tornRecord = 0, false
	if at != 0 && record && len(r.v.lines) == 0 {
		return fmt.Errorf("session %s: %w", r.id, tornDamage(at))
	}
	if r.writable {
		if at == 0 {
			return nil
		}
		return r.cutSealed(at, r.v.zstID.size)
	}
	n := len(r.v.frames)
	if n == 0 || r.v.staleFrom == 0 || r.v.staleFrom < r.v.frames[n-1].first {
		return nil
	}
	fr := r.v.frames[n-1]
	b := make([]byte, recordHeaderSize+int(fr.frameLen))
	if err := readAt(r.zst, b, fr.off); err != nil {
		return fmt.Errorf("read session %s: %w", r.id, err)
	}
	if recordSum(b, b[recordHeaderSize:]) == fr.sum {
		return nil
	}
	r.v.frames, r.v.zstEnd = r.v.frames[:n-1:n-1], fr.off
	if r.tail == nil {
		return nil
	}
	r.v.lines, r.v.tailBytes, r.v.hasTail = nil, 0, false
	return r.scanTail(r.tid, 0)
}

// walkRecords appends to frames every good record from off on and returns the end of the last
// one. It never decompresses.
func walkRecords(f file, off, size int64, expect uint64, verify bool, frames []frameInfo) ([]frameInfo, int64, error) {
	hdr := make([]byte, recordHeaderSize+zstd.HeaderMaxSize)
	var buf []byte
	for size-off >= recordHeaderSize {
		n := int64(len(hdr))
		if size-off < n {
			n = size - off
		}
		if err := readAt(f, hdr[:n], off); err != nil {
			return frames, off, err
		}
		rh, ok := parseRecordHeader(hdr[:n])
		end := off + recordHeaderSize + int64(rh.frameLen)
		if !ok || rh.first != expect || end > size {
			break
		}
		var cs uint64
		if verify {
			buf = grow(buf, int(rh.frameLen))
			if err := readAt(f, buf, off+recordHeaderSize); err != nil {
				return frames, off, err
			}
			if recordSum(hdr, buf) != rh.sum {
				break
			}
			if cs, ok = frameContentSize(buf); !ok {
				break
			}
		} else if cs, ok = frameContentSize(hdr[recordHeaderSize:n]); !ok {
			break
		}
		frames = append(frames, frameInfo{off: off, frameLen: rh.frameLen, count: rh.count, first: rh.first, contentSize: cs, sum: rh.sum})
		expect = rh.first + uint64(rh.count)
		off = end
	}
	return frames, off, nil
}

// validRecordAfter reports whether a complete record with a correct checksum starts anywhere
// in [off, size).
func validRecordAfter(f file, off, size int64) (bool, error) {
	b := make([]byte, size-off)
	if err := readAt(f, b, off); err != nil {
		return false, err
	}
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], recordMagic)
	for i := 0; ; i++ {
		j := bytes.Index(b[i:], magic[:])
		if j < 0 {
			return false, nil
		}
		i += j
		rh, ok := parseRecordHeader(b[i:])
		if ok && int64(i)+recordHeaderSize+int64(rh.frameLen) <= int64(len(b)) &&
			recordSum(b[i:], b[i+recordHeaderSize:i+recordHeaderSize+int(rh.frameLen)]) == rh.sum {
			return true, nil
		}
	}
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
