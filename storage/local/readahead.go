package local

import (
	"sort"
)

// readAheadFrames is how many sealed frames ReadAhead makes sure of from the one holding its
// seq: a resume page (up to 100,000 tokens, about 400 KB) starts inside the frame the last
// page ended in and may run into the next one (frames hold up to 1 MiB of records, more
// after a large batch).
const readAheadFrames = 2

// ReadAhead implements storage.ReadAheader: it starts decoding into the store's frame cache,
// in the background, the sealed frames from the one holding seq from on (readAheadFrames of
// them) that are neither cached nor being decoded. It reads their bytes now, while the
// Reader holds the session, so the decode needs no lock and no file: the cache key names the
// file (inode), offset and checksum, so a session rewritten meanwhile cannot be served from
// it. A call that later reads one of these frames waits for the decode instead of repeating
// it (frameCache.claim), so reading ahead never costs a page more than the decode it would
// have done itself. Records in the plain tail need no reading ahead: they are read as they
// are, a chunk at a time.
func (r *Reader) ReadAhead(from uint64) {
	if r.done || r.uncached || r.zst == nil {
		return
	}
	frames := r.v.frames
	i := sort.Search(len(frames), func(i int) bool { return frames[i].last() >= from })
	for j := i; j < len(frames) && j < i+readAheadFrames; j++ {
		fr := frames[j]
		key := frameKey{ino: r.v.zstID.ino, off: fr.off, sum: fr.sum}
		content, wait := r.s.frames.claim(key)
		if content != nil || wait != nil {
			continue
		}
		comp := make([]byte, recordHeaderSize+int(fr.frameLen))
		if readAt(r.zst, comp, fr.off) != nil || r.s.enter() != nil {
			r.s.frames.done(key, nil) // a later read reports what is wrong
			continue
		}
		go func() {
			// Close waits for this (enter above), and closes the decoder only after it.
			defer r.s.leave()
			var content []byte
			defer func() { r.s.frames.done(key, content) }()
			var err error
			if content, err = r.s.decodeRecord(r.id, fr, comp, nil); err != nil {
				content = nil // a later read decodes it again and reports the damage
			}
		}()
	}
}
