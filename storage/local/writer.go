package local

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sessionmem/sessionmem/storage"
)

// Writer appends to one locked session. It embeds Reader for read-your-writes.
type Writer struct {
	Reader
	// added and name are what the Appends of this Update stored, for the search index.
	added []storage.Record
	name  string
	// idle: this seal is sealIdle's, which removes the emptied tail.
	idle bool
}

// commit publishes the writer's view to the in-process cache; poison forgets it after a
// failed write so the next open re-reads (and repairs) the files.
func (w *Writer) commit() {
	st := w.st
	if st == nil {
		return
	}
	st.mu.Lock()
	st.v, st.ok = w.v, true
	st.mu.Unlock()
}

func (w *Writer) poison() {
	st := w.st
	if st == nil {
		return
	}
	st.mu.Lock()
	st.ok = false
	st.mu.Unlock()
}

// Append writes recs as one batch: one write and one fsync to the tail (plus a seal after if
// the tail passes the thresholds), then one index line with m (storage sets m.LastSeq, m.ID
// and the header fields). It returns the records with Seq set. When it returns nil, the
// records survive kill -9 and power loss. A record with Barrier set splits the batch: the
// tail and the records before it are sealed first (those records written to the tail, then
// sealed), so a crash between the two parts can keep the first; a batch without a barrier is
// kept whole or not at all.
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
		buf, kind, err = storage.AppendRecord(buf, rec, next+uint64(i))
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
	// starts a new frame. They go into the tail first and are sealed from there: the records
	// of a seal are always in the tail until the seal is durable, so a torn last record whose
	// records the tail does not hold is damage, never what a crash left (settleTornSeal).
	seg := 0
	for i := range recs {
		if !recs[i].Barrier || (i == seg && len(w.v.lines) == 0) {
			continue
		}
		if i > seg {
			start := lineStart(ends, seg)
			if err := w.writeTail(buf[start:lineStart(ends, i)], next+uint64(seg), ends[seg:i], start); err != nil {
				return nil, err
			}
		}
		if err := w.seal(); err != nil {
			return nil, err
		}
		seg = i
	}
	if seg == 0 && w.firstWhole(len(buf), len(recs)) {
		if err := w.writeFirst(buf, len(recs), next); err != nil {
			return nil, err
		}
	} else if seg < len(recs) {
		start := lineStart(ends, seg)
		if err := w.writeTail(buf[start:], next+uint64(seg), ends[seg:], start); err != nil {
			return nil, err
		}
	}
	if len(w.v.lines) >= w.s.opts.SealRecords || w.v.tailBytes >= int64(w.s.opts.SealBytes) {
		// The batch is already durable in the tail; a failed seal only leaves it there.
		if err := w.seal(); err != nil {
			w.s.log.Warn("storage: seal failed; records stay in the tail", "session", w.id, "err", err)
			w.poison()
		}
	}
	if testHookBeforeIndex != nil {
		testHookBeforeIndex()
	}
	if !testSkipIndexLine {
		w.putIndex(m, true)
	}
	if len(recs) > 0 {
		if !isAbsent(w.tail) {
			// (A session whose records all went into its .zst has nothing to seal.)
			w.s.sealer.wrote(w.id, w.v.tailBytes, w.v.padded)
		}
		if w.s.search != nil {
			w.added = append(w.added, out...)
			if m.Name != "" {
				w.name = m.Name
			}
		}
	}
	return out, nil
}

// tailWriteAt is how writeTail writes when it grows the tail; tests replace it to run out of
// disk space.
var tailWriteAt = file.WriteAt

// testHookBeforeIndex, when set by a test, runs between an append's fsync and its index line
// (where a crash leaves the index one append behind the files); testSkipIndexLine leaves the
// line out, so BenchmarkAppendFsync can measure what writing it costs.
var (
	testHookBeforeIndex func()
	testSkipIndexLine   bool
)

// lineStart is the offset in the batch buffer where record k's line starts.
func lineStart(ends []int, k int) int {
	if k == 0 {
		return 0
	}
	return ends[k-1]
}

// writeTail appends lines (whose ends relative to buf start at base are given) where the
// tail's data ends, with one write and one sync. Into padding (zeros written and synced
// before) the file's size does not change, so an fdatasync makes the lines durable without
// committing the file system's journal (50–100 µs of a save here, quiet; docs/BENCHMARKS.md).
// An append that does not fit writes its lines followed by new padding (padFor; none in a
// version 1 tail) and fsyncs, as the file grew.
func (w *Writer) writeTail(lines []byte, first uint64, ends []int, base int) error {
	if len(ends) > 1 {
		lines = markBatch(lines, ends, base)
	}
	v := &w.v
	off := v.tailEnd
	end := off + int64(len(lines))
	if v.padded && v.padChecked && end <= v.tailID.size {
		if _, err := w.tail.WriteAt(lines, off); err != nil {
			w.poison()
			return fmt.Errorf("append session %s: %w", w.id, err)
		}
		if err := w.tail.Datasync(); err != nil {
			w.poison()
			return fmt.Errorf("append session %s: sync: %w", w.id, err)
		}
	} else {
		if off != v.tailID.size && !(v.padded && v.padChecked) {
			// A torn end the writer's open did not cut: never write after it.
			w.poison()
			return fmt.Errorf("session %s: tail does not end where its data does: %w", w.id, storage.ErrCorrupt)
		}
		buf := lines
		if v.tailVer >= paddedTailVersion {
			pad := padFor(end, v.tailBytes+int64(len(lines)), int64(w.s.opts.SealBytes))
			buf = make([]byte, len(lines)+int(pad))
			copy(buf, lines)
		}
		if isAbsent(w.tail) {
			return w.firstLines(lines, buf, first, ends, base)
		}
		_, err := tailWriteAt(w.tail, buf, off)
		if err != nil && len(buf) > len(lines) && storage.DiskFull(err) {
			// No room for the padding: the lines alone, as an unpadded tail takes them, so a
			// nearly full disk refuses no save it could hold.
			if err = w.tail.Truncate(off); err == nil {
				buf = lines
				_, err = tailWriteAt(w.tail, buf, off)
			}
		}
		if err != nil {
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
		if w.v.tailID.size != off+int64(len(buf)) {
			// Someone else wrote to the tail without the lock; do not trust offsets.
			w.poison()
			return fmt.Errorf("session %s: tail changed while locked: %w", w.id, storage.ErrCorrupt)
		}
		v.padded, v.padChecked = len(buf) > len(lines), true
	}
	w.addLines(lines, off, first, ends, base)
	return nil
}

// firstLines is writeTail into a missing tail: it writes the tail whole (createTail).
func (w *Writer) firstLines(lines, buf []byte, first uint64, ends []int, base int) error {
	buf, err := w.createTail(buf, len(lines))
	if err != nil {
		w.poison()
		return err
	}
	w.v.padded, w.v.padChecked = len(buf) > len(lines), true
	w.addLines(lines, w.v.tailEnd, first, ends, base)
	return nil
}

// addLines records lines, written at off, in the writer's view and publishes it.
func (w *Writer) addLines(lines []byte, off int64, first uint64, ends []int, base int) {
	end := off + int64(len(lines))
	w.v.lines = w.v.lines[:len(w.v.lines):len(w.v.lines)]
	prev := base
	for k, e := range ends {
		// Line k starts after the k lines before it and their marks (markBatch).
		w.v.lines = append(w.v.lines, tailLine{off: off + int64(prev-base+k), n: e - prev - 1, seq: first + uint64(k)})
		prev = e
	}
	w.v.tailBytes += int64(len(lines))
	w.v.tailEnd = end
	w.commit()
}

// markBatch returns a batch's lines (ends relative to base, as writeTail gets them) with a
// space before every newline but the last: the mark of a line whose batch goes on. JSON
// allows the space, and a stored line never ends with one otherwise (AppendRecord trims the
// caller's object), so readers drop it, and scanTail keeps a batch only with its last line:
// an Append is atomic, and a power loss can keep some pages of its write and lose others.
func markBatch(lines []byte, ends []int, base int) []byte {
	out := make([]byte, 0, len(lines)+len(ends)-1)
	prev := base
	for k, e := range ends {
		out = append(out, lines[prev-base:e-base-1]...)
		if k < len(ends)-1 {
			out = append(out, ' ')
		}
		out = append(out, '\n')
		prev = e
	}
	return out
}

// unmarkLines returns the tail's lines as read into content from lines[0].off without their
// batch marks (a sealed record holds the lines as Records returns them), in place.
func unmarkLines(content []byte, lines []tailLine) []byte {
	plain := int64(0)
	for _, l := range lines {
		plain += int64(l.n) + 1
	}
	if plain == int64(len(content)) {
		return content // no marks: every batch was one record
	}
	base, out := lines[0].off, content[:0]
	for _, l := range lines {
		p := l.off - base
		out = append(append(out, content[p:p+int64(l.n)]...), '\n') // never past p: safe in place
	}
	return out
}

// Seal compresses the plain tail into a checksummed zstd frame now (no-op if it is empty).
func (w *Writer) Seal() error {
	if w.done {
		return errReaderDone
	}
	if len(w.v.lines) == 0 {
		return nil
	}
	if err := w.seal(); err != nil {
		return err
	}
	w.putIndex(storage.Meta{}, false)
	return nil
}

// sealIdle seals the tail of a session nobody is writing to (the background sealer's and
// Close's seal) and removes the emptied tail file: a session at rest keeps its .zst only
// (notail.go).
func (w *Writer) sealIdle() error {
	if w.done {
		return errReaderDone
	}
	w.idle = true
	defer func() { w.idle = false }()
	if len(w.v.lines) == 0 {
		if w.v.tailID.size != w.v.tailHdrLen || isAbsent(w.tail) || w.v.staleFrom != 0 {
			return nil // padding (trimPadding's), or nothing to do
		}
		w.emptyTail()
		w.commit()
		w.putIndex(storage.Meta{}, false)
		return nil
	}
	return w.Seal()
}

// trimPadding cuts the zeros after the tail's data (the sealer's, once the session is idle).
// It needs no fsync: padding that a crash brings back is padding still.
func (w *Writer) trimPadding() error {
	v := &w.v
	if !v.padded || v.tailID.size == v.tailEnd {
		return nil
	}
	if err := w.tail.Truncate(v.tailEnd); err != nil {
		w.poison()
		return fmt.Errorf("trim session %s tail: %w", w.id, err)
	}
	if err := w.statTail(); err != nil {
		w.poison()
		return err
	}
	v.padded = false
	w.commit()
	return nil
}

// seal seals the tail's records as one record: encode, append to .zst, fsync, then truncate
// the tail and fsync. A crash after the first fsync leaves tail lines at or below the sealed
// seq, which recovery drops; a crash before it leaves a torn record whose records the tail
// still holds, which recovery cuts.
func (w *Writer) seal() error {
	v := &w.v
	n := len(v.lines)
	if n == 0 {
		return nil
	}
	first := v.lines[0].seq
	last := v.lines[n-1]
	content := make([]byte, last.off+int64(last.n)+1-v.lines[0].off)
	if err := readAt(w.tail, content, v.lines[0].off); err != nil {
		return fmt.Errorf("seal session %s: read tail: %w", w.id, err)
	}
	content = unmarkLines(content, v.lines)
	rec, fr, err := w.s.encodeRecord(content, n, first)
	if err != nil {
		return fmt.Errorf("seal session %s: %w", w.id, err)
	}
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
	fr.off = v.zstEnd
	v.frames = append(v.frames[:len(v.frames):len(v.frames)], fr)
	v.zstEnd += int64(len(rec))
	v.zstID = statID(fi)
	v.lines, v.tailBytes = nil, 0
	w.s.sealer.sealed(w.id)
	// The records are sealed and durable now; emptying the tail is housekeeping (stale lines
	// are skipped on read), so its failure is not the caller's.
	w.emptyTail()
	w.commit()
	return nil
}

// encodeRecord compresses content, n complete lines of which the first has seq first, into
// a record: its 32-byte header, then the zstd frame. fr describes it, but for its offset.
func (s *Store) encodeRecord(content []byte, n int, first uint64) (rec []byte, fr frameInfo, err error) {
	if n > math.MaxUint32 {
		return nil, fr, fmt.Errorf("%d records in one frame", n)
	}
	enc := s.enc
	switch {
	case len(content) < 256:
		enc = s.encSmall
	case len(content) < betterBelow:
		enc = s.betterEncoder()
	}
	rec = enc.EncodeAll(content, make([]byte, recordHeaderSize, recordHeaderSize+len(content)/4+64))
	frame := rec[recordHeaderSize:]
	if len(frame) > math.MaxUint32 {
		return nil, fr, fmt.Errorf("frame of %d bytes is too large", len(frame))
	}
	putRecordHeader(rec, frame, uint32(n), first)
	cs, _ := frameContentSize(frame)
	fr = frameInfo{frameLen: uint32(len(frame)), count: uint32(n), first: first, contentSize: cs,
		sum: binary.LittleEndian.Uint64(rec[24:32])}
	return rec, fr, nil
}

// emptyTail empties the tail after its lines were sealed, padding and all (an idle session
// keeps no padding), and syncs the truncation. Until it reaches the disk the old lines are
// still there, which recovery drops (they are at or below the last sealed seq); but the next
// append writes over them, from the header on, and a power loss before that append's fsync
// can keep its first page and the old second page: one line that starts as the new record and
// ends as an old one, which is valid JSON with the next seq when both are inside a string
// there (TestCrashAppendOverSealedLines). With the truncation durable, what a lost page leaves
// there is zeros, a torn line. An unpadded (version 1) tail is replaced by an empty one of
// the current version instead, atomically: a reader finds the old tail, whose lines are all
// stale now, or the new one.
func (w *Writer) emptyTail() {
	v := &w.v
	if w.idle {
		if err := w.removeTail(); err == nil {
			return
		}
		w.s.log.Warn("storage: could not remove the emptied tail", "session", w.id)
	}
	if isAbsent(w.tail) {
		return
	}
	if v.tailVer < paddedTailVersion {
		if err := w.recreateTail(); err == nil {
			return
		}
		w.s.log.Warn("storage: could not replace the tail with a padded one", "session", w.id)
	}
	if err := w.tail.Truncate(v.tailHdrLen); err == nil {
		if err := w.tail.Sync(); err != nil {
			w.s.log.Warn("storage: could not sync the emptied tail", "session", w.id, "err", err)
		}
	}
	if err := w.statTail(); err != nil {
		w.poison()
		return
	}
	v.padded, v.padChecked = false, true
	if v.tailID.size == v.tailHdrLen {
		v.tailEnd = v.tailHdrLen
	} else {
		w.s.log.Warn("storage: could not empty tail after seal", "session", w.id)
		v.tailEnd = v.tailID.size
	}
}

// putIndex writes the session's index line with the current file sizes: the caller's
// metadata after an append, or the previous line's with the new sizes and last seq after a
// seal. It is written before Append returns, so every process lists what a read returns as
// soon as the call returned. The index is rebuildable and reconciled against file sizes at
// Open, so it is not fsynced, and a failure here is logged, not returned: the records are
// already durable.
func (w *Writer) putIndex(m storage.Meta, fromCaller bool) {
	sizes := w.sizes()
	var err error
	if fromCaller {
		w.fillMeta(&m)
		err = w.s.idx.put(w.id, m, sizes)
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
	if r.v.hasTail && !isAbsent(r.tail) {
		t = r.v.tailDataEnd()
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
