package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/tidwall/gjson"
)

// The plain tail: reading it (scanTail), repairing it, starting it afresh. Appending is
// writer.go's writeTail.

// scanTail reads the tail from off (0: from the start, header included) and keeps the lines
// that continue the sequence, up to the last line that ends a batch (markBatch). It stops at
// the first line that is torn, invalid or out of sequence (a batch is written at once, so
// anything after such a line was never acknowledged), and at a NUL byte where a line
// starts: JSON never holds one, so in a padded tail that is where the data ends. Lines at or
// below the last sealed seq are skipped (a crash between seal and truncation). A writer then
// cuts whatever follows that is not padding it has checked: a torn end, or zeros followed by
// anything else (a power loss can leave later pages of an unacknowledged write on disk
// without the earlier ones).
func (r *Reader) scanTail(tid fileID, off int64) error {
	r.v.tailID = tid
	tr := tailReader{f: r.tail, size: tid.size, pos: off}
	if off == 0 {
		if ok, err := r.readTailHeader(&tr); !ok || err != nil {
			return err
		}
	}
	r.v.hasTail = true
	after := r.v.lastSeq()
	sealed := r.v.lastSealed()
	end := endLine
	// Where the last complete batch ends (markBatch): lines after it are kept only once
	// their batch's last line is.
	batchLines, batchBytes, batchEnd := len(r.v.lines), r.v.tailBytes, r.v.tailEnd
	for {
		line, at, e, err := tr.next()
		if err != nil {
			return fmt.Errorf("read session %s tail: %w", r.id, err)
		}
		if end = e; end != endLine {
			break
		}
		seq, ok := storage.RecordSeq(line)
		if ok && seq <= sealed && len(r.v.lines) == 0 {
			if r.v.staleFrom == 0 {
				r.v.staleFrom = seq
			}
			r.v.tailEnd, batchEnd = tr.pos, tr.pos
			continue
		}
		if !ok || seq != after+1 || !gjson.ValidBytes(line) {
			end = endTorn
			break
		}
		n := len(line)
		more := line[n-1] == ' ' // its batch goes on (markBatch)
		if more {
			n--
		}
		r.v.lines = append(r.v.lines, tailLine{off: at, n: n, seq: seq})
		r.v.tailBytes += int64(len(line) + 1)
		after = seq
		r.v.tailEnd = tr.pos
		if !more {
			batchLines, batchBytes, batchEnd = len(r.v.lines), r.v.tailBytes, r.v.tailEnd
		}
	}
	if len(r.v.lines) > batchLines {
		// The first lines of a batch without its last: an Append that never returned, which
		// is atomic, so none of it is kept; a torn end like any other.
		r.v.lines, r.v.tailBytes, r.v.tailEnd = r.v.lines[:batchLines], batchBytes, batchEnd
		end = endTorn
	}
	if end == endTorn && r.v.tailVer >= paddedTailVersion {
		if err := r.checkTornTail(batchEnd, tid.size); err != nil {
			return err
		}
	}
	r.v.padded = end == endPad && r.v.tailVer >= paddedTailVersion
	if r.v.tailEnd == tid.size {
		r.v.padChecked = true
	}
	if !r.writable {
		return nil
	}
	return r.cutTail(tid)
}

// checkTornTail tells a torn end of the tail that a crash left from damage: appends go
// where the data ends, so a crash tears only the last batch, whose lines from off (where the
// last complete batch ended) to the end hold at most one batch's last line (unmarked,
// markBatch) after the kept records. Two or more complete saves after the point where the
// tail stops reading mean the bad line was durable and damaged later: cutting it would lose
// them, so it is refused (ErrCorrupt), as Verify reports it.
func (r *Reader) checkTornTail(off, size int64) error {
	b := make([]byte, size-off)
	if err := readAt(r.tail, b, off); err != nil {
		return fmt.Errorf("read session %s tail: %w", r.id, err)
	}
	saves, after := 0, r.v.lastSeq()
	for rest := b; ; {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			break
		}
		line := rest[:nl]
		rest = rest[nl+1:]
		// Only records after the kept ones count: stale lines (already sealed) that a torn
		// write left behind the data are no saves of their own.
		if seq, ok := storage.RecordSeq(line); ok && seq > after && line[len(line)-1] != ' ' && gjson.ValidBytes(line) {
			saves++
		}
	}
	if saves < 2 {
		return nil
	}
	return fmt.Errorf("session %s: tail damaged at offset %d: %d complete saves follow, so a crash did not leave it: %w", r.id, off, saves, storage.ErrCorrupt)
}

// readTailHeader reads the tail's header line (scanTail from the start). ok is false when
// there is none: the tail then holds no record, and a writer has started it afresh.
func (r *Reader) readTailHeader(tr *tailReader) (ok bool, err error) {
	line, _, end, err := tr.next()
	if err != nil {
		return false, fmt.Errorf("read session %s tail: %w", r.id, err)
	}
	if end != endLine {
		// No complete header line: the tail holds no record. Tails are created whole,
		// so only damage gets here; a writer starts it afresh.
		if r.writable {
			return false, r.recreateTail()
		}
		r.v.hasTail, r.v.tailEnd, r.v.tailHdrLen, r.v.padded = false, 0, 0, false
		return false, nil
	}
	var th tailHeader
	if err := json.Unmarshal(line, &th); err != nil || th.Version < 1 {
		return false, fmt.Errorf("session %s: tail header line is damaged: %w", r.id, storage.ErrCorrupt)
	}
	if th.Version > TailFormatVersion {
		return false, versionError("session "+r.id+" tail", th.Version, TailFormatVersion, th.By)
	}
	r.v.tailVer = th.Version
	r.v.tailHdrLen, r.v.tailEnd = tr.pos, tr.pos
	r.v.padChecked, r.v.staleFrom = false, 0
	return true, nil
}

// cutTail is scanTail's end for a writer: it checks that what follows the data of a padded
// tail is all zeros, and cuts whatever follows the kept lines that is not (durably, before
// anything is appended over it).
func (r *Reader) cutTail(tid fileID) error {
	if r.v.padded && !r.v.padChecked {
		zero, err := allZero(r.tail, r.v.tailEnd, tid.size)
		if err != nil {
			return fmt.Errorf("read session %s tail: %w", r.id, err)
		}
		r.v.padded, r.v.padChecked = zero, zero
	}
	cut := r.v.tailEnd
	if len(r.v.lines) == 0 {
		cut = r.v.tailHdrLen // only stale lines: the seal that made them stale completed
	}
	if cut == tid.size || (r.v.padded && cut == r.v.tailEnd) {
		return nil
	}
	r.v.padded, r.v.padChecked = false, true
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
	if r.tail != nil {
		r.tail.Close()
		r.tail = nil
	}
	hdr := encodeTailHeader(r.id)
	if err := writeFileAtomic(r.s.fs, r.s.sessDir, r.id+tailSuffix, hdr, durableName); err != nil {
		return fmt.Errorf("session %s: %w", r.id, err)
	}
	f, tid, err := openID(r.s.fs, r.s.tailPath(r.id), os.O_RDWR)
	if err != nil {
		return fmt.Errorf("open session %s tail: %w", r.id, err)
	}
	r.tail, r.tid = f, tid
	r.v.hasTail, r.v.lines, r.v.tailBytes = true, nil, 0
	r.v.tailHdrLen, r.v.tailEnd, r.v.tailVer = int64(len(hdr)), int64(len(hdr)), TailFormatVersion
	r.v.padded, r.v.padChecked = false, true
	r.v.tailID = tid
	return nil
}

// How tailReader.next ended: a line, or what stopped it.
const (
	endLine = iota // a complete line
	endEOF         // the end of the file, where a line would start
	endPad         // a NUL byte where a line would start: padding (or a power loss's zeros)
	endTorn        // a line cut short, or with a NUL byte in it (set by scanTail also for an invalid line)
)

// tailReader reads a tail's lines from an offset a chunk at a time, small at first (a look
// for new lines in a padded tail usually finds a NUL in its first bytes) and doubling, and
// never reads past a NUL byte it needs to see: padding is not read.
type tailReader struct {
	f     file
	size  int64
	pos   int64  // file offset of buf[0]: where the next line starts
	buf   []byte // bytes read and not yet returned
	chunk int
}

const (
	tailFirstRead = 4 << 10
	tailMaxRead   = 256 << 10
)

// next returns the next line (without its newline), its offset, and endLine; or how the
// lines ended. The line is valid until the next call.
func (t *tailReader) next() ([]byte, int64, int, error) {
	for {
		if len(t.buf) > 0 {
			if t.buf[0] == 0 {
				return nil, t.pos, endPad, nil
			}
			if nl := bytes.IndexByte(t.buf, '\n'); nl >= 0 {
				line, at := t.buf[:nl], t.pos
				if bytes.IndexByte(line, 0) >= 0 {
					return nil, at, endTorn, nil
				}
				t.buf, t.pos = t.buf[nl+1:], t.pos+int64(nl+1)
				return line, at, endLine, nil
			}
			if bytes.IndexByte(t.buf, 0) >= 0 {
				return nil, t.pos, endTorn, nil // a NUL before the line's newline
			}
		}
		read := t.pos + int64(len(t.buf))
		if read >= t.size {
			if len(t.buf) == 0 {
				return nil, t.pos, endEOF, nil
			}
			return nil, t.pos, endTorn, nil
		}
		if t.chunk == 0 {
			t.chunk = tailFirstRead
		}
		n := int(min(t.size-read, int64(t.chunk)))
		t.chunk = min(2*t.chunk, tailMaxRead)
		// A new buffer, so that lines returned before stay as they were.
		b := make([]byte, len(t.buf)+n)
		copy(b, t.buf)
		if err := readAt(t.f, b[len(t.buf):], read); err != nil {
			return nil, t.pos, 0, err
		}
		t.buf = b
	}
}

// zeroBlock is compared with a file's bytes by allZero.
var zeroBlock [64 << 10]byte

// allZero reports whether every byte of f in [from, to) is zero.
func allZero(f file, from, to int64) (bool, error) {
	b := make([]byte, min(to-from, int64(len(zeroBlock))))
	for off := from; off < to; {
		n := min(to-off, int64(len(b)))
		if err := readAt(f, b[:n], off); err != nil {
			return false, err
		}
		if !bytes.Equal(b[:n], zeroBlock[:n]) {
			return false, nil
		}
		off += n
	}
	return true, nil
}
