package local

import (
	"bytes"
	"container/list"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/klauspost/compress/zstd"
	"github.com/tidwall/gjson"
)

// frameInfo locates one sealed record in <id>.zst.
type frameInfo struct {
	off         int64 // offset of the 32-byte record header
	frameLen    uint32
	count       uint32
	first       uint64
	contentSize uint64 // from the zstd frame header; 0 if not known
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
	frames     []frameInfo
	zstEnd     int64 // end of the last good record
	brokenAt   int64 // reader only: a damaged record followed by intact ones starts here
	tailHdrLen int64
	tailEnd    int64 // end of the last kept (or stale) line
	lines      []tailLine
	tailBytes  int64
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

func (v *sessView) zstClean() bool  { return v.zstEnd == v.zstID.size }
func (v *sessView) tailClean() bool { return v.hasTail && v.tailEnd == v.tailID.size }

// sessState caches a session's view between calls so that an Update or View only re-reads
// what changed on disk (checked by inode, size and mtime under the session lock), and keeps the
// session's descriptors open between calls (see handles.go).
type sessState struct {
	id string

	mu        sync.Mutex
	ok        bool
	v         sessView
	zst, tail *fileRef // cached open files; see use for who may touch them

	lk     sessLock
	lockF  *os.File    // cached lock descriptor, used under lk
	lockFI os.FileInfo // its identity

	users int           // running calls (Store.mu)
	elem  *list.Element // place in Store.lru (Store.mu)
}

func (s *Store) zstPath(id string) string  { return filepath.Join(s.sessDir, id+zstSuffix) }
func (s *Store) tailPath(id string) string { return filepath.Join(s.sessDir, id+tailSuffix) }
func (s *Store) lockPath(id string) string { return filepath.Join(s.sessDir, id+lockSuffix) }

func notFound(id string) error {
	return fmt.Errorf("session %s: %w", id, storage.ErrNotFound)
}

// openSession locks a session (shared or exclusive), attaches its files and brings the cached
// view up to date. A writer repairs torn ends on the way; a reader only ignores them.
func (s *Store) openSession(ctx context.Context, id string, exclusive bool) (*Reader, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := s.use(id)
	if err := s.lockSession(ctx, st, exclusive); err != nil {
		s.unuse(st)
		return nil, err
	}
	r := &Reader{s: s, id: id, st: st, writable: exclusive}
	st.mu.Lock()
	err := r.attach(st)
	if err == nil {
		err = r.refresh(st)
	}
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
	return r, nil
}

// attach takes references to the session's open files (cached or opened now) and their
// current identities.
func (r *Reader) attach(st *sessState) error {
	var err error
	r.zh, r.zid, err = attachFile(&st.zst, r.s.zstPath(r.id), 0, r.writable)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			st.dropData() // keep no inode of a deleted session alive
			return notFound(r.id)
		}
		return fmt.Errorf("open session %s: %w", r.id, err)
	}
	r.zst = r.zh.f
	r.th, r.tid, err = attachFile(&st.tail, r.s.tailPath(r.id), os.O_APPEND, r.writable)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("open session %s tail: %w", r.id, err)
	}
	if r.th != nil {
		r.tail = r.th.f
	}
	return nil
}

// refresh brings r.v up to date with the attached files, starting from the cached view when
// the files only grew since.
func (r *Reader) refresh(st *sessState) error {
	zid, tid := r.zid, r.tid
	cached := st.ok && (st.v.verified || !r.writable)

	// The sealed part.
	zstSame := false
	switch {
	case cached && st.v.zstID == zid:
		r.v = st.v
		zstSame = true
	case cached && st.v.zstClean() && st.v.zstID.ino == zid.ino && zid.size > st.v.zstEnd:
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

	// The plain tail.
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
	case zstSame && st.v.tailID == tid && st.v.hasTail:
		return nil
	case zstSame && st.v.tailClean() && st.v.tailID.ino == tid.ino && tid.size > st.v.tailEnd:
		r.v.lines = r.v.lines[:len(r.v.lines):len(r.v.lines)]
		return r.scanTail(tid, r.v.tailEnd)
	default:
		r.v.lines, r.v.tailBytes, r.v.hasTail = nil, 0, false
		return r.scanTail(tid, 0)
	}
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
	r.v.hdr, r.v.hdrEnd = h, 8+n
	return nil
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
	if !r.writable {
		if found {
			r.v.brokenAt = end // Records reports it instead of ending the history there
		}
		return nil
	}
	if found {
		// Damage followed by intact records is not a crash (a seal appends one record and
		// fsyncs), so cutting here would destroy data: refuse instead.
		return fmt.Errorf("session %s: damaged record at offset %d followed by intact ones: %w", r.id, end, storage.ErrCorrupt)
	}
	if complete, err := completeRecordAt(r.zst, end, zid.size, r.v.lastSealed()+1); err != nil {
		return fmt.Errorf("read session %s: %w", r.id, err)
	} else if complete {
		// A crash leaves a record cut short; one that is all there, continues the sequence
		// and still fails its checksum was durable and damaged later. Cutting it would lose
		// acknowledged records (and the tail lines after them), so refuse: verify reports it.
		return fmt.Errorf("session %s: last record at offset %d is damaged: %w", r.id, end, storage.ErrCorrupt)
	}
	if err := r.zst.Truncate(end); err != nil {
		return fmt.Errorf("repair session %s: %w", r.id, err)
	}
	if err := r.zst.Sync(); err != nil {
		return fmt.Errorf("repair session %s: %w", r.id, err)
	}
	r.s.log.Warn("storage: cut torn end of sealed log", "session", r.id, "offset", end, "dropped_bytes", zid.size-end)
	fi, err := r.zst.Stat()
	if err != nil {
		return fmt.Errorf("stat session %s: %w", r.id, err)
	}
	r.v.zstID = statID(fi)
	return nil
}

// walkRecords appends to frames every good record from off on and returns the end of the last
// one. It never decompresses.
func walkRecords(f *os.File, off, size int64, expect uint64, verify bool, frames []frameInfo) ([]frameInfo, int64, error) {
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
		frames = append(frames, frameInfo{off: off, frameLen: rh.frameLen, count: rh.count, first: rh.first, contentSize: cs})
		expect = rh.first + uint64(rh.count)
		off = end
	}
	return frames, off, nil
}

// completeRecordAt reports whether a record header at off continues the sequence at expect
// and its whole frame lies within size.
func completeRecordAt(f *os.File, off, size int64, expect uint64) (bool, error) {
	if size-off < recordHeaderSize {
		return false, nil
	}
	var hb [recordHeaderSize]byte
	if err := readAt(f, hb[:], off); err != nil {
		return false, err
	}
	rh, ok := parseRecordHeader(hb[:])
	return ok && rh.first == expect && off+recordHeaderSize+int64(rh.frameLen) <= size, nil
}

// validRecordAfter reports whether a complete record with a correct checksum starts anywhere
// in [off, size).
func validRecordAfter(f *os.File, off, size int64) (bool, error) {
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

// scanTail reads the tail from off (0: from the start, header included) and keeps the lines
// that continue the sequence. It stops at the first line that is torn, invalid or out of
// sequence: a batch is written at once, so anything after such a line was never acknowledged.
// Lines at or below the last sealed seq are skipped (a crash between seal and truncation).
func (r *Reader) scanTail(tid fileID, off int64) error {
	data := make([]byte, tid.size-off)
	if err := readAt(r.tail, data, off); err != nil {
		return fmt.Errorf("read session %s tail: %w", r.id, err)
	}
	r.v.tailID = tid
	pos := 0
	if off == 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			// No complete header line: the tail holds no record. Tails are created whole,
			// so only damage gets here; a writer starts it afresh.
			if r.writable {
				return r.recreateTail()
			}
			r.v.hasTail, r.v.tailEnd, r.v.tailHdrLen = false, 0, 0
			return nil
		}
		var th tailHeader
		if err := json.Unmarshal(data[:nl], &th); err != nil || th.Version < 1 {
			return fmt.Errorf("session %s: tail header line is damaged: %w", r.id, storage.ErrCorrupt)
		}
		if th.Version > FormatVersion {
			return versionError("session "+r.id+" tail", th.Version)
		}
		pos = nl + 1
		r.v.tailHdrLen, r.v.tailEnd = int64(pos), int64(pos)
	}
	r.v.hasTail = true
	after := r.v.lastSeq()
	sealed := r.v.lastSealed()
	for {
		i := bytes.IndexByte(data[pos:], '\n')
		if i < 0 {
			break
		}
		line := data[pos : pos+i]
		seq, ok := lineSeq(line)
		if ok && seq <= sealed && len(r.v.lines) == 0 {
			pos += i + 1
			r.v.tailEnd = off + int64(pos)
			continue
		}
		if !ok || seq != after+1 || !gjson.ValidBytes(line) {
			break
		}
		r.v.lines = append(r.v.lines, tailLine{off: off + int64(pos), n: i, seq: seq})
		r.v.tailBytes += int64(i + 1)
		after = seq
		pos += i + 1
		r.v.tailEnd = off + int64(pos)
	}
	if !r.writable {
		return nil
	}
	cut := r.v.tailEnd
	if len(r.v.lines) == 0 {
		cut = r.v.tailHdrLen // only stale lines: the seal that made them stale completed
	}
	if cut == tid.size {
		return nil
	}
	if err := r.tail.Truncate(cut); err != nil {
		return fmt.Errorf("repair session %s tail: %w", r.id, err)
	}
	if err := r.tail.Sync(); err != nil {
		return fmt.Errorf("repair session %s tail: %w", r.id, err)
	}
	r.s.log.Warn("storage: cut torn or stale end of tail", "session", r.id, "offset", cut, "dropped_bytes", tid.size-cut)
	r.v.tailEnd = cut
	return r.statTail()
}

func (r *Reader) statTail() error {
	fi, err := r.tail.Stat()
	if err != nil {
		return fmt.Errorf("stat session %s tail: %w", r.id, err)
	}
	r.v.tailID = statID(fi)
	return nil
}

// recreateTail gives a writer a fresh, empty tail (the old one was missing or had no complete
// header line, so it held no record).
func (r *Reader) recreateTail() error {
	if r.th != nil {
		r.th.put()
		r.th, r.tail = nil, nil
	}
	hdr := encodeTailHeader(r.id)
	if err := writeFileAtomic(r.s.sessDir, r.id+tailSuffix, hdr, true); err != nil {
		return fmt.Errorf("session %s: %w", r.id, err)
	}
	// Called under st.mu from refresh; the cached handle of the replaced file is dropped.
	h, _, err := attachFile(&r.st.tail, r.s.tailPath(r.id), os.O_APPEND, true)
	if err != nil {
		return fmt.Errorf("open session %s tail: %w", r.id, err)
	}
	r.th, r.tail = h, h.f
	r.v.hasTail, r.v.lines, r.v.tailBytes = true, nil, 0
	r.v.tailHdrLen, r.v.tailEnd = int64(len(hdr)), int64(len(hdr))
	return r.statTail()
}

// Reader reads one locked session. It is valid only inside the View or Update callback that
// received it.
type Reader struct {
	s        *Store
	id       string
	st       *sessState
	zh, th   *fileRef // references held on the session's open files
	zst      *os.File // zh.f
	tail     *os.File // th.f; nil if the session has no tail file
	zid, tid fileID   // the files' identities when attached
	writable bool
	done     bool
	v        sessView
}

// release drops the file references, the lock and the use of the session state.
func (r *Reader) release() {
	r.done = true
	for _, h := range []*fileRef{r.th, r.zh} {
		if h != nil {
			h.put()
		}
	}
	r.th, r.zh, r.tail, r.zst = nil, nil, nil, nil
	r.s.unlockSession(r.st, r.writable)
	r.s.unuse(r.st)
}

// ID returns the session id.
func (r *Reader) ID() string { return r.id }

// Header returns the session header.
func (r *Reader) Header() storage.Header { return r.v.hdr }

// LastSeq returns the seq of the newest durable record (0 for an empty session).
func (r *Reader) LastSeq() uint64 { return r.v.lastSeq() }

var errReaderDone = errors.New("storage: Reader or Writer used after its View or Update returned")

// Records yields the records with Seq >= from, in order. It starts decoding at the frame that
// holds from, never decoding earlier frames. A damaged frame stops iteration with an error
// wrapping ErrCorrupt (only possible for a reader racing a damaged file; writers repair on open).
func (r *Reader) Records(from uint64) iter.Seq2[storage.Record, error] {
	return func(yield func(storage.Record, error) bool) {
		if r.done {
			yield(storage.Record{}, errReaderDone)
			return
		}
		if from == 0 {
			from = 1
		}
		frames := r.v.frames
		i := sort.Search(len(frames), func(i int) bool { return frames[i].last() >= from })
		var comp, content []byte
		for ; i < len(frames); i++ {
			var err error
			content, comp, err = r.decodeFrame(frames[i], content, comp)
			if err != nil {
				yield(storage.Record{}, err)
				return
			}
			seq := frames[i].first
			for len(content) > 0 {
				nl := bytes.IndexByte(content, '\n')
				line := content[:nl]
				content = content[nl+1:]
				if seq >= from && !yield(makeRecord(seq, line), nil) {
					return
				}
				seq++
			}
		}
		if r.v.brokenAt != 0 {
			yield(storage.Record{}, fmt.Errorf("session %s: damaged record at offset %d followed by intact ones: %w", r.id, r.v.brokenAt, storage.ErrCorrupt))
			return
		}
		lines := r.v.lines
		j := sort.Search(len(lines), func(j int) bool { return lines[j].seq >= from })
		if j == len(lines) {
			return
		}
		start := lines[j].off
		end := lines[len(lines)-1].off + int64(lines[len(lines)-1].n) + 1
		buf := make([]byte, end-start)
		if err := readAt(r.tail, buf, start); err != nil {
			yield(storage.Record{}, fmt.Errorf("read session %s tail: %w", r.id, err))
			return
		}
		for _, l := range lines[j:] {
			p := l.off - start
			if !yield(makeRecord(l.seq, buf[p:p+int64(l.n)]), nil) {
				return
			}
		}
	}
}

func makeRecord(seq uint64, line []byte) storage.Record {
	return storage.Record{Seq: seq, Kind: gjson.GetBytes(line, "type").String(), Data: line}
}

// decodeFrame reads, checks and decompresses one record into content (reused). It returns the
// content only if all of it is good: checksum, size, and a `{"seq":N` line for each record.
func (r *Reader) decodeFrame(fr frameInfo, content, comp []byte) ([]byte, []byte, error) {
	corrupt := func(why string) error {
		return fmt.Errorf("session %s: record at offset %d: %s: %w", r.id, fr.off, why, storage.ErrCorrupt)
	}
	comp = grow(comp, recordHeaderSize+int(fr.frameLen))
	if err := readAt(r.zst, comp, fr.off); err != nil {
		return content, comp, fmt.Errorf("read session %s: %w", r.id, err)
	}
	rh, ok := parseRecordHeader(comp)
	if !ok || rh.frameLen != fr.frameLen || rh.first != fr.first || rh.count != fr.count {
		return content, comp, corrupt("header changed")
	}
	frame := comp[recordHeaderSize:]
	if recordSum(comp, frame) != rh.sum {
		return content, comp, corrupt("checksum mismatch")
	}
	cs, ok := frameContentSize(frame)
	if !ok {
		return content, comp, corrupt("no content size")
	}
	// Pre-sizing the destination avoids the decoder growing it frame by frame (quadratic).
	if uint64(cap(content)) < cs {
		content = make([]byte, 0, cs)
	}
	out, err := r.s.dec.DecodeAll(frame, content[:0])
	if err != nil {
		return content, comp, corrupt(err.Error())
	}
	if uint64(len(out)) != cs || len(out) == 0 || out[len(out)-1] != '\n' {
		return content, comp, corrupt("content size mismatch")
	}
	// Check every line before yielding any, so a caller never sees part of a bad frame.
	seq, rest := fr.first, out
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if got, ok := lineSeq(rest[:nl]); !ok || got != seq || seq > fr.last() {
			return content, comp, corrupt("record sequence mismatch")
		}
		rest = rest[nl+1:]
		seq++
	}
	if seq != fr.last()+1 {
		return content, comp, corrupt("record count mismatch")
	}
	return out, comp, nil
}

// Writer appends to one locked session. It embeds Reader for read-your-writes.
type Writer struct {
	Reader
}

// commit publishes the writer's view to the in-process cache; poison forgets it after a
// failed write so the next open re-reads (and repairs) the files.
func (w *Writer) commit() {
	st := w.st
	st.mu.Lock()
	st.v, st.ok = w.v, true
	st.mu.Unlock()
}

func (w *Writer) poison() {
	st := w.st
	st.mu.Lock()
	st.ok = false
	st.mu.Unlock()
}

// Append writes recs as one batch: one write and one fsync to the tail (plus a seal first if a
// record has Barrier set, or after if the tail passes the thresholds), then one index line with
// m (storage sets m.LastSeq, m.ID and the header fields). It returns the records with Seq set.
// When it returns nil, the records survive kill -9 and power loss.
//
// Each Data must be a JSON object without a "seq" key. If Kind is set and Data has no "type",
// storage writes `"type":Kind` after the seq; if Data has a "type" it must equal Kind. Bad input
// is rejected before anything is written. Empty recs only writes the index line.
func (w *Writer) Append(recs []storage.Record, m storage.Meta) ([]storage.Record, error) {
	if w.done {
		return nil, errReaderDone
	}
	next := w.v.lastSeq() + 1
	out := make([]storage.Record, len(recs))
	var buf []byte
	ends := make([]int, len(recs))
	for i, rec := range recs {
		var err error
		var kind string
		buf, kind, err = appendLine(buf, rec, next+uint64(i))
		if err != nil {
			return nil, fmt.Errorf("session %s: record %d: %w", w.id, i, err)
		}
		ends[i] = len(buf)
		out[i] = storage.Record{Seq: next + uint64(i), Kind: kind, Barrier: rec.Barrier}
	}
	for i := range out {
		out[i].Data = buf[lineStart(ends, i) : ends[i]-1]
	}
	// Records before a barrier are sealed together with the tail, so the barrier record
	// starts a new frame.
	seg := 0
	for i := range recs {
		if recs[i].Barrier && (i > seg || len(w.v.lines) > 0) {
			if err := w.sealWith(buf[lineStart(ends, seg):lineStart(ends, i)], i-seg); err != nil {
				return nil, err
			}
			seg = i
		}
	}
	if seg < len(recs) {
		start := lineStart(ends, seg)
		if err := w.writeTail(buf[start:], next+uint64(seg), ends[seg:], start); err != nil {
			return nil, err
		}
	}
	if len(recs) > 0 {
		w.s.markWritten(w.id)
	}
	if len(w.v.lines) >= w.s.opts.SealRecords || w.v.tailBytes >= int64(w.s.opts.SealBytes) {
		// The batch is already durable in the tail; a failed seal only leaves it there.
		if err := w.sealWith(nil, 0); err != nil {
			w.s.log.Warn("storage: seal failed; records stay in the tail", "session", w.id, "err", err)
			w.poison()
		}
	}
	w.putIndex(m, true)
	return out, nil
}

// lineStart is the offset in the batch buffer where record k's line starts.
func lineStart(ends []int, k int) int {
	if k == 0 {
		return 0
	}
	return ends[k-1]
}

// writeTail appends lines (whose ends relative to buf start at base are given) with one
// write and one fsync.
func (w *Writer) writeTail(lines []byte, first uint64, ends []int, base int) error {
	off := w.v.tailID.size
	if _, err := w.tail.Write(lines); err != nil {
		w.poison()
		return fmt.Errorf("append session %s: %w", w.id, err)
	}
	if err := w.tail.Sync(); err != nil {
		w.poison()
		return fmt.Errorf("append session %s: sync: %w", w.id, err)
	}
	if err := w.statTail(); err != nil {
		w.poison()
		return err
	}
	if w.v.tailID.size != off+int64(len(lines)) {
		// Someone else wrote to the tail without the lock; do not trust offsets.
		w.poison()
		return fmt.Errorf("session %s: tail changed while locked: %w", w.id, storage.ErrCorrupt)
	}
	w.v.lines = w.v.lines[:len(w.v.lines):len(w.v.lines)]
	prev := base
	for k, e := range ends {
		w.v.lines = append(w.v.lines, tailLine{off: off + int64(prev-base), n: e - prev - 1, seq: first + uint64(k)})
		prev = e
	}
	w.v.tailBytes += int64(len(lines))
	w.v.tailEnd = w.v.tailID.size
	w.commit()
	return nil
}

// Seal compresses the plain tail into a checksummed zstd frame now (no-op if it is empty).
func (w *Writer) Seal() error {
	if w.done {
		return errReaderDone
	}
	if len(w.v.lines) == 0 {
		return nil
	}
	if err := w.sealWith(nil, 0); err != nil {
		return err
	}
	w.putIndex(storage.Meta{}, false)
	return nil
}

// sealWith seals the tail plus extra (count complete lines that follow the tail) as one
// record: encode, append to .zst, fsync, then truncate the tail and fsync. A crash after the
// first fsync leaves tail lines at or below the sealed seq, which recovery drops.
func (w *Writer) sealWith(extra []byte, count int) error {
	v := &w.v
	n := len(v.lines) + count
	if n == 0 {
		return nil
	}
	var content []byte
	first := v.lastSealed() + 1
	if len(v.lines) > 0 {
		first = v.lines[0].seq
		last := v.lines[len(v.lines)-1]
		content = make([]byte, last.off+int64(last.n)+1-v.lines[0].off, int(v.tailBytes)+len(extra))
		if err := readAt(w.tail, content, v.lines[0].off); err != nil {
			return fmt.Errorf("seal session %s: read tail: %w", w.id, err)
		}
	}
	content = append(content, extra...)
	if n > math.MaxUint32 {
		return fmt.Errorf("seal session %s: %d records in one frame", w.id, n)
	}
	enc := w.s.enc
	if len(content) < 256 {
		enc = w.s.encSmall
	}
	rec := enc.EncodeAll(content, make([]byte, recordHeaderSize, recordHeaderSize+len(content)/4+64))
	frame := rec[recordHeaderSize:]
	if len(frame) > math.MaxUint32 {
		return fmt.Errorf("seal session %s: frame of %d bytes is too large", w.id, len(frame))
	}
	putRecordHeader(rec, frame, uint32(n), first)
	cs, _ := frameContentSize(frame)

	if v.zstID.size != v.zstEnd {
		if err := w.zst.Truncate(v.zstEnd); err != nil {
			w.poison()
			return fmt.Errorf("seal session %s: %w", w.id, err)
		}
	}
	if _, err := w.zst.WriteAt(rec, v.zstEnd); err != nil {
		w.poison()
		return fmt.Errorf("seal session %s: %w", w.id, err)
	}
	if err := w.zst.Sync(); err != nil {
		w.poison()
		return fmt.Errorf("seal session %s: sync: %w", w.id, err)
	}
	fi, err := w.zst.Stat()
	if err != nil {
		w.poison()
		return fmt.Errorf("seal session %s: %w", w.id, err)
	}
	v.frames = append(v.frames[:len(v.frames):len(v.frames)], frameInfo{
		off: v.zstEnd, frameLen: uint32(len(frame)), count: uint32(n), first: first, contentSize: cs,
	})
	v.zstEnd += int64(len(rec))
	v.zstID = statID(fi)
	v.lines, v.tailBytes = nil, 0
	w.s.markWritten(w.id)
	// The records are sealed and durable now; emptying the tail is housekeeping (stale lines
	// are skipped on read), so its failure is not the caller's. The truncation needs no fsync
	// of its own: until it reaches the disk the old lines are still there, and recovery drops
	// lines at or below the last sealed seq; the next append's fsync makes it durable together
	// with the new lines. That saves one of a seal's two fsyncs.
	_ = w.tail.Truncate(v.tailHdrLen)
	if err := w.statTail(); err != nil {
		w.poison()
		return nil
	}
	if v.tailID.size == v.tailHdrLen {
		v.tailEnd = v.tailHdrLen
	} else {
		w.s.log.Warn("storage: could not empty tail after seal", "session", w.id)
		v.tailEnd = v.tailID.size
	}
	w.commit()
	return nil
}

// putIndex writes the session's index line with the current file sizes. The index is
// rebuildable and reconciled against file sizes at Open, so a failure here is logged, not
// returned: the records are already durable.
func (w *Writer) putIndex(m storage.Meta, fromCaller bool) {
	sizes := w.sizes()
	var err error
	if fromCaller {
		w.fillMeta(&m)
		err = w.s.idx.putAppend(w.id, m, sizes)
	} else {
		err = w.s.idx.update(w.id, func(old storage.Meta, ok bool) storage.Meta {
			if !ok {
				old = storage.Meta{}
			}
			old.LastSeq = w.v.lastSeq()
			w.fillHeader(&old)
			return old
		}, sizes)
	}
	if err != nil {
		w.s.log.Warn("storage: index write failed; it is reconciled at next open", "session", w.id, "err", err)
	}
}

func (r *Reader) sizes() fileSizes {
	t := int64(-1)
	if r.v.hasTail {
		t = r.v.tailID.size
	}
	return fileSizes{Zst: r.v.zstID.size, Tail: t}
}

func (r *Reader) fillHeader(m *storage.Meta) {
	h := r.v.hdr
	m.ID, m.WorkingDir, m.ParentSession, m.Created = r.id, h.WorkingDir, h.ParentSession, h.Created
}

func (r *Reader) fillMeta(m *storage.Meta) {
	r.fillHeader(m)
	m.LastSeq = r.v.lastSeq()
	if m.Updated.IsZero() {
		m.Updated = r.s.now()
	}
}

// appendLine validates one record and appends its stored line (with newline) to buf.
func appendLine(buf []byte, rec storage.Record, seq uint64) ([]byte, string, error) {
	data := bytes.TrimSpace(rec.Data)
	if len(data) == 0 || data[0] != '{' || !gjson.ValidBytes(data) {
		return buf, "", errors.New("data must be one JSON object")
	}
	if bytes.ContainsAny(data, "\n\r") {
		var c bytes.Buffer
		if err := json.Compact(&c, data); err != nil {
			return buf, "", fmt.Errorf("data: %w", err)
		}
		data = c.Bytes()
	}
	if gjson.GetBytes(data, "seq").Exists() {
		return buf, "", errors.New(`data must not contain "seq" (storage assigns it)`)
	}
	kind := rec.Kind
	typ := gjson.GetBytes(data, "type")
	addType := false
	switch {
	case typ.Exists() && typ.Type != gjson.String:
		return buf, "", errors.New(`"type" must be a string`)
	case typ.Exists() && kind != "" && typ.Str != kind:
		return buf, "", fmt.Errorf("record kind %q differs from data's \"type\" %q", kind, typ.Str)
	case typ.Exists():
		kind = typ.Str
	case kind != "":
		addType = true
	}
	rest := bytes.TrimLeft(data[1:], " \t")
	buf = append(buf, `{"seq":`...)
	buf = strconv.AppendUint(buf, seq, 10)
	if addType {
		kb, _ := json.Marshal(kind)
		buf = append(buf, `,"type":`...)
		buf = append(buf, kb...)
	}
	if rest[0] != '}' {
		buf = append(buf, ',')
	}
	buf = append(buf, rest...)
	return append(buf, '\n'), kind, nil
}

// dropState forgets the cached view of id, so the next call reads its files from scratch
// (tests use it after replacing files behind the store's back).
func (s *Store) dropState(id string) {
	st := s.use(id)
	st.mu.Lock()
	st.v, st.ok = sessView{}, false
	st.mu.Unlock()
	s.mu.Lock()
	delete(s.written, id)
	s.mu.Unlock()
	s.unuse(st)
}
