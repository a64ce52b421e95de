package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/tidwall/gjson"
)

// Verify checks one session's files completely and, with repair, cuts the torn ends a crash
// left. It returns an error only when it could not check (invalid id, ErrNotFound, ErrClosed,
// ctx, I/O); what it found in the files is in the report, each torn end a repairable problem
// that says which file and how many bytes (verifyFiles has the figures).
func (s *Store) Verify(ctx context.Context, id string, repair bool) (storage.VerifyReport, error) {
	rep, err := s.verifyFiles(ctx, id, repair)
	return rep.report(), err
}

// verifyFiles is Verify, reporting in the terms of the files.
//
// Without repair it holds the session's shared lock and writes nothing: it walks every record
// header checking the xxh64, decodes every frame checking the zstd content checksum, the
// content size and that every line is a JSON object with the next seq, and reads the tail,
// classifying its lines as kept, stale or torn. It reads the files afresh, ignoring what this
// Store has cached.
//
// With repair it holds the exclusive lock, runs the same check, and when the session is not
// damaged but torn lets the writer's recovery (what the next Update would do anyway) cut the
// torn ends, then checks again. TornSealed and TornTail are then the measured difference of
// the file sizes. A damaged session is left exactly as it is.
func (s *Store) verifyFiles(ctx context.Context, id string, repair bool) (fileReport, error) {
	rep := fileReport{ID: id}
	if err := checkID(id); err != nil {
		return rep, err
	}
	if err := s.enter(); err != nil {
		return rep, err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	if _, err := s.fs.Stat(s.zstPath(id)); errors.Is(err, fs.ErrNotExist) {
		return rep, notFound(id)
	}
	lf, _, err := lockPath(ctx, s.fs, s.lockPath(id), repair)
	if err != nil {
		return rep, fmt.Errorf("session %s: %w", id, err)
	}
	r := &Reader{s: s, id: id, lock: lf, writable: repair}
	defer r.release()
	if err := r.openFiles(); err != nil {
		return rep, err
	}
	if err := r.check(ctx, &rep); err != nil {
		return rep, err
	}
	if !repair || rep.Damaged != nil || rep.NewerFormat != nil {
		return rep, nil
	}
	if !rep.Torn() {
		s.clearBad(id)
		return rep, nil
	}
	zstBefore, tailBefore := r.zid.size, r.tid.size
	st := s.state(id)
	st.mu.Lock()
	st.ok = false // re-read from the files, never from the cache
	err = r.refresh(st)
	if err == nil {
		st.v, st.ok = r.v, true
	}
	st.mu.Unlock()
	if err != nil {
		if errors.Is(err, storage.ErrCorrupt) {
			rep.Damaged = err
			return rep, nil
		}
		return rep, err
	}
	after := fileReport{ID: id}
	if err := r.check(ctx, &after); err != nil {
		return rep, err
	}
	if after.Damaged == nil && after.NewerFormat == nil && after.Torn() {
		after.Damaged = fmt.Errorf("session %s: still torn after repair: %w", id, storage.ErrCorrupt)
	}
	after.Repaired = true
	after.NoTail = rep.NoTail
	after.StaleLines, after.DroppedLines = rep.StaleLines, rep.DroppedLines
	after.TornSealed = zstBefore - r.v.zstID.size
	if rep.NoTail {
		after.TornTail = tailBefore // missing (0) or replaced whole
	} else {
		after.TornTail = tailBefore - r.v.tailID.size
	}
	if after.Damaged == nil && after.NewerFormat == nil {
		s.clearBad(id)
	}
	return after, nil
}

// check fills rep from the attached files, read afresh. Damage and newer formats go into rep;
// the error is for failures to read.
func (r *Reader) check(ctx context.Context, rep *fileReport) error {
	c := *r // scratch copy: its view is built here and discarded
	c.writable = false
	c.v = sessView{}
	torn, done, err := c.checkSealed(rep)
	if done {
		return err
	}
	if done, err := c.checkFrames(ctx, rep); done {
		return err
	}
	err = c.checkTail(rep)
	if torn != nil && rep.TailRecords == 0 && rep.Damaged == nil {
		rep.Damaged = fmt.Errorf("session %s: last record at offset %d (records %d-%d) fails its checks and the tail does not hold its records, so a crash did not leave it: %w",
			c.id, torn.at, torn.first, torn.first+uint64(torn.count)-1, storage.ErrCorrupt)
	}
	return err
}

// classifyInto records err in rep when it is damage or a newer format, and returns the error
// check must still report (nil for those).
func classifyInto(rep *fileReport, err error) error {
	switch {
	case errors.Is(err, storage.ErrNewerFormat):
		rep.NewerFormat = err
		return nil
	case errors.Is(err, storage.ErrCorrupt):
		rep.Damaged = err
		return nil
	}
	return err
}

// tornRecord is the intact header of a torn last sealed record, and where it starts.
type tornRecord struct {
	recHeader
	at int64
}

// checkSealed walks the sealed part as a writer does (every xxh64 checked) and measures a torn
// end. done reports that check ends here, with err.
func (c *Reader) checkSealed(rep *fileReport) (torn *tornRecord, done bool, err error) {
	fi, err := c.zst.Stat()
	if err != nil {
		return nil, true, fmt.Errorf("stat session %s: %w", c.id, err)
	}
	size := fi.Size()
	if err := c.readHeader(size); err != nil {
		return nil, true, classifyInto(rep, err)
	}
	frames, end, err := walkRecords(c.zst, c.v.hdrEnd, size, 1, true, nil)
	if err != nil {
		return nil, true, fmt.Errorf("read session %s: %w", c.id, err)
	}
	c.v.frames, c.v.zstEnd = frames, end
	rep.SealedBytes = end
	if end == size {
		return nil, false, nil
	}
	found, err := validRecordAfter(c.zst, end, size)
	if err != nil {
		return nil, true, fmt.Errorf("read session %s: %w", c.id, err)
	}
	if found {
		rep.Damaged = fmt.Errorf("session %s: damaged record at offset %d followed by intact ones: %w", c.id, end, storage.ErrCorrupt)
		return nil, true, nil
	}
	rep.TornSealed = size - end
	// A seal is fsynced before the tail is emptied, and its records are in the tail until
	// then (Append writes a barrier's records there first), so a seal torn by a crash has
	// its records still in the tail. A torn end whose record header is intact and
	// continues the sequence while the tail does not hold that seq is therefore a
	// durable record damaged later: cutting it would lose its records (and then every
	// tail line after them, which no longer continues the sequence).
	var hb [recordHeaderSize]byte
	n := min(size-end, recordHeaderSize)
	if err := readAt(c.zst, hb[:n], end); err != nil {
		return nil, true, fmt.Errorf("read session %s: %w", c.id, err)
	}
	if rh, ok := parseRecordHeader(hb[:n]); ok && rh.first == c.v.lastSealed()+1 {
		torn = &tornRecord{rh, end}
	}
	return torn, false, nil
}

// checkFrames decodes every sealed record and checks that each line is JSON. done reports
// that check ends here, with err.
func (c *Reader) checkFrames(ctx context.Context, rep *fileReport) (done bool, err error) {
	var content, comp []byte
	for _, fr := range c.v.frames {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		content, comp, err = c.decodeFrame(fr, content, comp)
		if err != nil {
			return true, classifyInto(rep, err)
		}
		// decodeFrame checked the seq prefix of every line; the rest must be JSON too.
		for off := 0; off < len(content); {
			nl := bytes.IndexByte(content[off:], '\n')
			if !gjson.ValidBytes(content[off : off+nl]) {
				rep.Damaged = fmt.Errorf("session %s: record %d (frame at offset %d) is not valid JSON: %w",
					c.id, fr.first+uint64(countLines(content[:off])), fr.off, storage.ErrCorrupt)
				return true, nil
			}
			off += nl + 1
		}
		rep.Frames++
		rep.Records += int(fr.count)
		rep.LastSeq = fr.last()
	}
	return false, nil
}

// checkTail scans the plain tail as a reader does, and measures what a writer would cut.
func (c *Reader) checkTail(rep *fileReport) error {
	if c.tail == nil {
		rep.NoTail = true
		return nil
	}
	fi, err := c.tail.Stat()
	if err != nil {
		return fmt.Errorf("stat session %s tail: %w", c.id, err)
	}
	tid := statID(fi)
	if err := c.scanTail(tid, 0); err != nil {
		return classifyInto(rep, err)
	}
	if !c.v.hasTail {
		rep.NoTail, rep.TornTail = true, tid.size
		return nil
	}
	keep := c.v.tailEnd
	if len(c.v.lines) == 0 {
		keep = c.v.tailHdrLen
	}
	// Padding (zeros to the end of a padded tail) is not torn; zeros followed by anything else
	// are (a writer cuts them all).
	tornTo := tid.size
	if c.v.padded {
		zero, err := allZero(c.tail, c.v.tailEnd, tid.size)
		if err != nil {
			return fmt.Errorf("read session %s tail: %w", c.id, err)
		}
		if zero {
			tornTo = c.v.tailEnd
		}
	}
	rep.TailBytes, rep.TailPadding, rep.TornTail = keep, tid.size-tornTo, tornTo-keep
	rep.TailRecords = len(c.v.lines)
	rep.Records += rep.TailRecords
	if n := len(c.v.lines); n > 0 {
		rep.LastSeq = c.v.lines[n-1].seq
	}
	staleEnd := c.v.tailEnd
	if len(c.v.lines) > 0 {
		staleEnd = c.v.lines[0].off
	}
	b := make([]byte, tid.size-c.v.tailHdrLen)
	if err := readAt(c.tail, b, c.v.tailHdrLen); err != nil {
		return fmt.Errorf("read session %s tail: %w", c.id, err)
	}
	rep.StaleLines = countLines(b[:staleEnd-c.v.tailHdrLen])
	rep.DroppedLines = countLines(b[c.v.tailEnd-c.v.tailHdrLen:])
	return nil
}

func countLines(b []byte) int { return bytes.Count(b, []byte{'\n'}) }

// IDs returns the id of every session that has a file in the store, sorted, including the
// damaged and newer-format sessions that List skips (Verify can say what is wrong with them).
func (s *Store) IDs(ctx context.Context) ([]string, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	ents, err := s.fs.ReadDir(s.sessDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), zstSuffix); ok && storage.ValidID(id) && e.Type().IsRegular() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}
