package local

import (
	"bytes"
	"container/list"
	"errors"
	"fmt"
	"iter"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/tidwall/gjson"
)

// Reader reads one locked session. It is valid only inside the View or Update callback that
// received it.
type Reader struct {
	s        *Store
	id       string
	st       *sessState // the cached view this call updates
	lock     file       // holds the session's lock; closing it releases the lock
	zst      file
	tail     file   // nil if the session has no tail file
	zid, tid fileID // the files' identities when opened
	writable bool
	done     bool
	v        sessView
	tornSeal int64 // opening: the sealed log's torn end starts here (settleTornSeal)
	// tornRecord: a record header there continues the sequence: a record that was durable,
	// whatever became of its body.
	tornRecord bool
	// uncached: frames decoded for this call are not kept in the store's cache (the search
	// catch-up reads each once, and would push out what resumes and searches reuse).
	uncached bool
}

// release closes the session's files and then the lock, removing the lock file of a session
// left at rest (restLock): a writer at once, a reader through the sealer (restlock.go).
func (r *Reader) release() {
	r.done = true
	atRest := r.lock != nil && r.tail != nil && isAbsent(r.tail)
	for _, f := range []file{r.tail, r.zst} {
		if f != nil {
			f.Close()
		}
	}
	switch {
	case !atRest:
	case !r.writable && r.s.sealer.deferRest() && r.s.sealer.leftLock(r.id):
	default:
		r.s.restLock(r.id, r.lock, r.writable)
	}
	if r.lock != nil {
		r.lock.Close()
	}
	r.tail, r.zst, r.lock = nil, nil, nil
}

// ID returns the session id.
func (r *Reader) ID() string { return r.id }

// Header returns the session header.
func (r *Reader) Header() storage.Header { return r.v.hdr }

// LastSeq returns the seq of the newest durable record (0 for an empty session).
func (r *Reader) LastSeq() uint64 { return r.v.lastSeq() }

var errReaderDone = errors.New("storage: Reader or Writer used after its View or Update returned")

// tailChunk is how much of the plain tail Records reads at a time.
const tailChunk = 256 << 10

// Records yields the records with Seq >= from, in order. It starts decoding at the frame that
// holds from, never decoding earlier frames, and reads the plain tail a chunk at a time from
// the line that holds from. A damaged frame stops iteration with an error wrapping ErrCorrupt
// (only possible for a reader racing a damaged file; writers repair on open).
//
// Record.Data points into buffers that are reused or shared: it must not be kept past the
// iteration step or modified.
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
		for i := sort.Search(len(frames), func(i int) bool { return frames[i].last() >= from }); i < len(frames); i++ {
			content, err := r.frame(frames[i])
			if err != nil {
				yield(storage.Record{}, err)
				return
			}
			seq := frames[i].first
			for len(content) > 0 {
				nl := bytes.IndexByte(content, '\n')
				line := content[:nl]
				content = content[nl+1:]
				if line[nl-1] == ' ' {
					line = line[:nl-1] // a batch mark (markBatch) that an older build sealed
				}
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
		var buf []byte
		for j := sort.Search(len(lines), func(j int) bool { return lines[j].seq >= from }); j < len(lines); {
			start := lines[j].off
			k := j + 1
			for k < len(lines) && lines[k].off+int64(lines[k].n)+1-start <= tailChunk {
				k++
			}
			end := lines[k-1].off + int64(lines[k-1].n) + 1
			buf = grow(buf, int(end-start))
			if err := readAt(r.tail, buf, start); err != nil {
				yield(storage.Record{}, fmt.Errorf("read session %s tail: %w", r.id, err))
				return
			}
			for _, l := range lines[j:k] {
				p := l.off - start
				if !yield(makeRecord(l.seq, buf[p:p+int64(l.n)]), nil) {
					return
				}
			}
			j = k
		}
	}
}

func makeRecord(seq uint64, line []byte) storage.Record {
	return storage.Record{Seq: seq, Kind: gjson.GetBytes(line, "type").String(), Data: line}
}

// frame returns the checked content of one sealed record, from the store's cache of recently
// decoded frames or decoded now (and cached). The content is shared: never modified.
//
// A frame another call is decoding is waited for, not decoded again: a server's warm-up and
// the client's first resume, started together, both want the session's newest frames, and
// on a busy machine the second decode of a 2 MB frame took 30 ms of the first page's time.
func (r *Reader) frame(fr frameInfo) ([]byte, error) {
	key := frameKey{ino: r.v.zstID.ino, off: fr.off, sum: fr.sum}
	if r.uncached {
		if content := r.s.frames.get(key); content != nil {
			return content, nil
		}
		content, _, err := r.decodeFrame(fr, nil, nil)
		return content, err
	}
	for {
		content, wait := r.s.frames.claim(key)
		if content != nil {
			return content, nil
		}
		if wait != nil {
			<-wait // then from the cache, or decoded here if it was not kept
			continue
		}
		return r.decodeClaimed(key, fr)
	}
}

// decodeClaimed decodes the frame the caller claimed and ends the claim, whatever happens.
func (r *Reader) decodeClaimed(key frameKey, fr frameInfo) (content []byte, err error) {
	defer func() { r.s.frames.done(key, content) }()
	content, _, err = r.decodeFrame(fr, nil, nil)
	if err != nil {
		content = nil
	}
	return content, err
}

// decodeFrame reads, checks and decompresses one record into content (reused). It returns the
// content only if all of it is good: checksum, size, and a `{"seq":N` line for each record.
func (r *Reader) decodeFrame(fr frameInfo, content, comp []byte) ([]byte, []byte, error) {
	comp = grow(comp, recordHeaderSize+int(fr.frameLen))
	if err := readAt(r.zst, comp, fr.off); err != nil {
		return content, comp, fmt.Errorf("read session %s: %w", r.id, err)
	}
	content, err := r.s.decodeRecord(r.id, fr, comp, content)
	return content, comp, err
}

// decodeRecord checks and decompresses the record comp holds (its header and frame, as read
// from the file at fr.off) into content (reused). On error it returns content as given.
func (s *Store) decodeRecord(id string, fr frameInfo, comp, content []byte) ([]byte, error) {
	corrupt := func(why string) error {
		return fmt.Errorf("session %s: record at offset %d: %s: %w", id, fr.off, why, storage.ErrCorrupt)
	}
	rh, ok := parseRecordHeader(comp)
	if !ok || rh.frameLen != fr.frameLen || rh.first != fr.first || rh.count != fr.count {
		return content, corrupt("header changed")
	}
	frame := comp[recordHeaderSize:]
	if recordSum(comp, frame) != rh.sum {
		return content, corrupt("checksum mismatch")
	}
	cs, ok := frameContentSize(frame)
	if !ok {
		return content, corrupt("no content size")
	}
	// Pre-sizing the destination avoids the decoder growing it frame by frame (quadratic).
	if uint64(cap(content)) < cs {
		content = make([]byte, 0, cs)
	}
	out, err := s.dec.DecodeAll(frame, content[:0])
	if err != nil {
		return content, corrupt(err.Error())
	}
	if uint64(len(out)) != cs || len(out) == 0 || out[len(out)-1] != '\n' {
		return content, corrupt("content size mismatch")
	}
	// Check every line before yielding any, so a caller never sees part of a bad frame.
	seq, rest := fr.first, out
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if got, ok := storage.RecordSeq(rest[:nl]); !ok || got != seq || seq > fr.last() {
			return content, corrupt("record sequence mismatch")
		}
		rest = rest[nl+1:]
		seq++
	}
	if seq != fr.last()+1 {
		return content, corrupt("record count mismatch")
	}
	return out, nil
}

// frameCacheBytes and frameCacheEntries bound the decoded frames a Store keeps. A resume
// that pages through a session starts each page inside the frame the previous page ended in;
// keeping its last frames saves decoding them again (per page, a frame of 1 to 2 MiB, as
// large batches leave them, would otherwise be decoded up to five times). A search reads the
// records of its best candidates twice, once to check a phrase or path against the text and
// once for the snippets, in up to a page's worth of frames: 16 MiB keeps them between the two.
// More would only help reading the same sessions over and over, at a cost in memory a
// long-running server should not pay.
const (
	frameCacheBytes   = 16 << 20
	frameCacheEntries = 16
)

// frameKey names a sealed record's content: the file, the record's offset and its checksum
// (a record written at the same offset after a torn one was cut has another checksum).
type frameKey struct {
	ino uint64
	off int64
	sum uint64
}

type cachedFrame struct {
	key     frameKey
	content []byte
}

// frameCache keeps recently decoded frames, least recently used dropped first.
type frameCache struct {
	decoded  atomic.Int64 // frames decoded for the cache (claim's callers), for tests
	mu       sync.Mutex
	max      int64
	size     int64
	lru      *list.List // of *cachedFrame, most recent first
	byKey    map[frameKey]*list.Element
	decoding map[frameKey]chan struct{} // frames being decoded (claim), closed when done
}

func newFrameCache(max int64) *frameCache {
	return &frameCache{max: max, lru: list.New(), byKey: map[frameKey]*list.Element{}, decoding: map[frameKey]chan struct{}{}}
}

// claim returns k's content if it is cached; else a channel closed when the call decoding it
// is done, if one is; else nil and nil: the caller decodes it and must call done.
func (c *frameCache) claim(k frameKey) ([]byte, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[k]; e != nil {
		c.lru.MoveToFront(e)
		return e.Value.(*cachedFrame).content, nil
	}
	if ch := c.decoding[k]; ch != nil {
		return nil, ch
	}
	c.decoding[k] = make(chan struct{})
	c.decoded.Add(1)
	return nil, nil
}

// done ends the decoding of k that claim gave the caller: content (nil if it failed) is
// cached, and the calls waiting for it go on.
func (c *frameCache) done(k frameKey, content []byte) {
	if content != nil {
		c.put(k, content)
	}
	c.mu.Lock()
	ch := c.decoding[k]
	delete(c.decoding, k)
	c.mu.Unlock()
	close(ch)
}

func (c *frameCache) get(k frameKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[k]; e != nil {
		c.lru.MoveToFront(e)
		return e.Value.(*cachedFrame).content
	}
	return nil
}

func (c *frameCache) put(k frameKey, content []byte) {
	n := int64(cap(content))
	if n > c.max/2 {
		return // one huge frame would push out everything else
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey[k] != nil {
		return
	}
	c.byKey[k] = c.lru.PushFront(&cachedFrame{key: k, content: content})
	c.size += n
	for c.size > c.max || c.lru.Len() > frameCacheEntries {
		old := c.lru.Remove(c.lru.Back()).(*cachedFrame)
		delete(c.byKey, old.key)
		c.size -= int64(cap(old.content))
	}
}
