package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/klauspost/compress/zstd"
	"github.com/tidwall/gjson"
)

const (
	indexName     = "index.jsonl"
	indexLockName = "index.lock"
	// minRewriteLines keeps a store with few sessions from rewriting its index every few
	// appends; above it the index is rewritten at more than 2 lines per live session, so it
	// stays within about twice its live size however it is written to (a rewrite costs one
	// write of the live lines, once per as many lines appended: O(1) per save amortized).
	minRewriteLines = 256
)

// fileSizes say where a session's files ended when its index line was written: the .zst's
// size, and the tail's (where its data ends, for a padded tail; -1: no tail). Files that no
// longer end there at Open mean the line is stale (a crash between a tail's sync and the
// index write): Store.filesAt.
type fileSizes struct {
	Zst  int64 `json:"zst"`
	Tail int64 `json:"tail"`
}

// indexLine is one line of index.jsonl after the header line.
type indexLine struct {
	ID      string          `json:"id"`
	Deleted bool            `json:"deleted,omitempty"`
	Files   *fileSizes      `json:"files,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

type indexHeader struct {
	Version int    `json:"v"`
	Index   string `json:"index"`
	// By is the sessionmem version that wrote the index (storage.WriterVersion).
	By string `json:"by,omitempty"`
	// Snapshot is the length of the zstd frame that follows the header line (version 2):
	// the lines a rewrite kept, compressed (see IndexFormatVersion).
	Snapshot int64 `json:"snapshot,omitempty"`
}

// IndexFormatVersion is the version of index.jsonl this package writes and reads up to.
// Version 2 keeps the lines a rewrite writes (one per live session, about 350 bytes each)
// compressed, in a zstd frame of Snapshot bytes right after the header line, about a seventh
// of their size; the lines appended after it are plain, as in version 1. A rewrite of a
// version 1 index (its compaction, under index.lock) writes version 2, which builds before it
// refuse to open (ErrNewerFormat).
const IndexFormatVersion = 2

// snapshotIndexVersion is the first index version with a compressed snapshot.
const snapshotIndexVersion = 2

type indexEntry struct {
	raw     []byte        // the meta JSON as stored
	meta    *storage.Meta // decoded on first use
	bad     bool          // raw does not decode
	sizes   fileSizes
	lastSeq uint64
}

func (e *indexEntry) decode() (*storage.Meta, bool) {
	if e.meta == nil && !e.bad {
		var m storage.Meta
		if err := json.Unmarshal(e.raw, &m); err != nil {
			e.bad = true
		} else {
			e.meta = &m
		}
	}
	return e.meta, !e.bad
}

// created returns the session's creation time, without decoding the rest of the meta.
func (e *indexEntry) created() (time.Time, bool) {
	if e.meta != nil {
		return e.meta.Created, true
	}
	r := gjson.GetBytes(e.raw, "created")
	if r.Type != gjson.String {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, r.Str)
	return t, err == nil
}

// index is the in-memory fold of index.jsonl plus the read position, so that each call only
// parses what other processes appended since.
type index struct {
	fs fileSystem
	// encode compresses the snapshot into one frame with its content size (Store.encodeFrame);
	// dec decompresses it.
	encode func(src, dst []byte) []byte
	dec    *zstd.Decoder
	dir    string
	path   string
	log    *slog.Logger
	mu     sync.Mutex
	lockF  file
	f      file // O_RDWR|O_APPEND; nil while the file does not exist
	ino    uint64
	off    int64  // bytes folded so far (always at a line boundary)
	lines  int    // entry lines in the current file
	bad    int    // damaged lines in the current file
	gen    uint64 // bumped whenever ents changes, to invalidate List's sorted cache
	badHd  bool   // the header line is missing or damaged
	// unsaved: ents hold more than the file, whose rewrite failed (a full disk, a store that
	// may not be written; keepUnsaved): a missing file is not read again until it changes.
	unsaved bool
	ents    map[string]*indexEntry

	sorted    []*storage.Meta // List's cache: decoded entries, newest first
	sortedGen uint64
}

func openIndex(fsys fileSystem, dir string, log *slog.Logger, encode func(src, dst []byte) []byte, dec *zstd.Decoder) (*index, error) {
	x := &index{fs: fsys, encode: encode, dec: dec, dir: dir, path: filepath.Join(dir, indexName), log: log, ents: map[string]*indexEntry{}}
	// Read where it may not be written, as sessions are (openLockFile); no process writes
	// there when the lock file cannot even be made.
	lf, err := openLockFile(fsys, filepath.Join(dir, indexLockName), true)
	if err != nil {
		return nil, fmt.Errorf("open index lock: %w", err)
	}
	x.lockF = lf
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.reload(); err != nil {
		lf.Close()
		return nil, err
	}
	return x, nil
}

func (x *index) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f != nil {
		x.f.Close()
		x.f = nil
	}
	x.lockF.Close()
}

// reload folds the whole file from scratch.
func (x *index) reload() error {
	if x.f != nil {
		x.f.Close()
		x.f = nil
	}
	x.ents, x.off, x.lines, x.bad, x.badHd, x.ino, x.unsaved = map[string]*indexEntry{}, 0, 0, 0, false, 0, false
	x.gen++
	f, err := x.fs.OpenFile(x.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil && storage.ReadOnly(err) {
		// Read where it may not be written (openIndex); an append then fails, saying so.
		f, err = x.fs.OpenFile(x.path, os.O_RDONLY, 0)
	}
	if errors.Is(err, fs.ErrNotExist) {
		x.badHd = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat index: %w", err)
	}
	x.f, x.ino = f, statID(fi).ino
	return x.readNew(fi.Size())
}

// refresh folds what was appended since the last call, or reloads after a rewrite. It returns
// the file's size (-1 if it does not exist).
func (x *index) refresh() error {
	_, err := x.refreshSize()
	return err
}

func (x *index) refreshSize() (int64, error) {
	if x.f == nil {
		if x.unsaved {
			if _, err := x.fs.Stat(x.path); errors.Is(err, fs.ErrNotExist) {
				return -1, nil // keep what we know, as below
			}
		}
		if err := x.reload(); err != nil || x.f == nil {
			return -1, err
		}
		// Measured below like any later refresh: the size must count a partial last line
		// that reload left unfolded, or the next append would not end it first.
	}
	fi, err := x.fs.Stat(x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil // keep what we know; the next write recreates the file
	}
	if err != nil {
		return -1, fmt.Errorf("stat index: %w", err)
	}
	id := statID(fi)
	switch {
	case id.ino != x.ino || id.size < x.off:
		if err := x.reload(); err != nil {
			return -1, err
		}
	case id.size > x.off:
		if err := x.readNew(id.size); err != nil {
			return -1, err
		}
	}
	return id.size, nil
}

// readNew folds the complete lines in [x.off, size), from the start of the file the header
// line and the snapshot after it. A partial last line (a writer mid-write, or one that
// crashed) is left for later: the next appender terminates it first.
func (x *index) readNew(size int64) error {
	buf := make([]byte, size-x.off)
	if _, err := x.f.ReadAt(buf, x.off); err != nil {
		return fmt.Errorf("read index: %w", err)
	}
	pos := 0
	if x.off == 0 {
		nl := bytes.IndexByte(buf, '\n')
		if nl < 0 {
			return nil
		}
		snap, err := x.header(buf[:nl])
		if err != nil {
			return err
		}
		pos = nl + 1
		if snap > 0 {
			// A snapshot is written whole (a rewrite renames the file into place), so one
			// cut short is damage, like one that does not decode.
			snap = min(snap, int64(len(buf)-pos))
			x.foldSnapshot(buf[pos : pos+int(snap)])
			pos += int(snap)
		}
	}
	for {
		nl := bytes.IndexByte(buf[pos:], '\n')
		if nl < 0 {
			break
		}
		x.fold(buf[pos : pos+nl])
		pos += nl + 1
	}
	x.off += int64(pos)
	return nil
}

// header checks the header line and returns the length of the snapshot after it (0: none).
func (x *index) header(line []byte) (int64, error) {
	var h indexHeader
	if err := json.Unmarshal(line, &h); err != nil || h.Version < 1 || h.Index != "sessionmem" || h.Snapshot < 0 {
		x.badHd = true
		return 0, nil
	}
	if h.Version > IndexFormatVersion {
		return 0, versionError("index "+x.path, h.Version, IndexFormatVersion, h.By)
	}
	if h.Version < snapshotIndexVersion {
		return 0, nil
	}
	return h.Snapshot, nil
}

// foldSnapshot folds the lines of a version 2 index's snapshot. One that does not decode
// (its checksum included) leaves the index damaged: Open rebuilds it from the session files,
// and the next write rewrites it.
func (x *index) foldSnapshot(b []byte) {
	var lines []byte
	cs, ok := frameContentSize(b)
	if ok {
		var err error
		// Sized ahead (the decoder would grow it block by block), but not by a damaged size.
		lines, err = x.dec.DecodeAll(b, make([]byte, 0, min(cs, 64*uint64(len(b)))))
		ok = err == nil && uint64(len(lines)) == cs && len(lines) > 0 && lines[len(lines)-1] == '\n'
	}
	if !ok {
		x.badHd = true
		return
	}
	for len(lines) > 0 {
		nl := bytes.IndexByte(lines, '\n')
		x.fold(lines[:nl])
		lines = lines[nl+1:]
	}
}

// fold applies one line read from the file.
func (x *index) fold(line []byte) {
	switch x.apply(line) {
	case lineBad:
		x.bad++
	case lineOK:
		x.lines++
	}
}

type lineKind int

const (
	lineOK lineKind = iota
	lineBad
)

// apply folds one line into ents. A line older than the entry it would replace (a lower
// last_seq; lines of one session are written under its lock, in order, so this only guards
// against a damaged or hand-edited log) leaves the entry alone; a "reset" line always wins.
func (x *index) apply(line []byte) lineKind {
	if !gjson.ValidBytes(line) {
		return lineBad
	}
	// One pass over the top-level keys (GetMany would scan the line once per path).
	var id string
	var deleted, hasFiles, reset bool
	var sizes fileSizes
	var meta gjson.Result
	gjson.ParseBytes(line).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			id = v.Str
		case "deleted":
			deleted = v.Bool()
		case "reset":
			reset = v.Bool()
		case "files":
			hasFiles = v.IsObject()
			sizes = fileSizes{Zst: v.Get("zst").Int(), Tail: v.Get("tail").Int()}
		case "meta":
			meta = v
		}
		return true
	})
	if !storage.ValidID(id) {
		return lineBad
	}
	x.gen++
	if deleted {
		delete(x.ents, id)
		return lineOK
	}
	if !meta.IsObject() || !hasFiles {
		return lineBad
	}
	x.setEntry(id, &indexEntry{raw: []byte(meta.Raw), sizes: sizes, lastSeq: meta.Get("last_seq").Uint()}, reset)
	return lineOK
}

// setEntry makes e the entry of id, unless the entry there is newer (see apply).
func (x *index) setEntry(id string, e *indexEntry, reset bool) {
	if old := x.ents[id]; old != nil && old.lastSeq > e.lastSeq && !reset {
		return
	}
	x.ents[id] = e
}

// exclusive runs fn holding this process's index mutex and the cross-process index lock,
// with the entries refreshed from what other processes appended: every index writer goes
// through it (or through exclusiveAt).
func (x *index) exclusive(fn func() error) error {
	return x.exclusiveAt(func(int64) error { return fn() })
}

// exclusiveAt is exclusive for appenders: fn gets the index file's size as the refresh under
// the lock found it (-1: missing or unusable), which writeLocked needs (nobody else appends
// while the lock is held, so a second stat would tell nothing new).
func (x *index) exclusiveAt(fn func(size int64) error) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.lockF.Lock(true, true); err != nil {
		return fmt.Errorf("lock index: %w", err)
	}
	defer x.lockF.Unlock()
	size, err := x.refreshSize()
	if err != nil {
		return err
	}
	return fn(size)
}

// write appends one line under the cross-process index lock.
func (x *index) write(line indexLine) error {
	b, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encode index line: %w", err)
	}
	b = append(b, '\n')
	return x.exclusiveAt(func(size int64) error {
		return x.writeLocked(b, size, nil)
	})
}

// encodeIndexLine writes what json.Marshal(indexLine{...}) would, without encoding the meta a
// second time to check it (an id needs no escaping). It returns the meta's JSON too.
func encodeIndexLine(id string, m storage.Meta, sz fileSizes) (raw, line []byte, err error) {
	raw, err = json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("encode meta: %w", err)
	}
	line = make([]byte, 0, len(raw)+len(id)+64)
	line = append(line, `{"id":"`...)
	line = append(line, id...)
	line = append(line, `","files":{"zst":`...)
	line = strconv.AppendInt(line, sz.Zst, 10)
	line = append(line, `,"tail":`...)
	line = strconv.AppendInt(line, sz.Tail, 10)
	line = append(line, `},"meta":`...)
	line = append(line, raw...)
	return raw, append(line, "}\n"...), nil
}

// writeLocked appends b, complete lines, to the index and folds them into the entries. size is
// the file's size as refreshed under the lock (exclusiveAt). known, when set, is b's one line
// already decoded (put): it is applied as it is instead of being parsed back from b.
func (x *index) writeLocked(b []byte, size int64, known *knownLine) error {
	if size < 0 || x.badHd {
		if err := x.rewriteLocked(); err != nil {
			return err
		}
		size = x.off
	}
	if size > x.off {
		// A crashed writer left a partial line: end it so ours stays readable.
		b = append([]byte{'\n'}, b...)
	}
	if _, err := x.f.Write(b); err != nil {
		return fmt.Errorf("append index: %w", err)
	}
	// We hold the lock, so the file is now exactly what we folded plus b.
	if size > x.off {
		x.bad++
	}
	if known != nil {
		x.gen++
		x.setEntry(known.id, known.e, false)
		x.lines++
	} else {
		for _, line := range bytes.Split(bytes.Trim(b, "\n"), []byte{'\n'}) {
			x.fold(line)
		}
	}
	x.off = size + int64(len(b))
	if x.lines > minRewriteLines && x.lines > 2*len(x.ents) {
		return x.rewriteLocked()
	}
	return nil
}

// put writes id's line with m.
func (x *index) put(id string, m storage.Meta, sz fileSizes) error {
	raw, line, err := encodeIndexLine(id, m, sz)
	if err != nil {
		return err
	}
	known := &knownLine{id: id, e: &indexEntry{raw: raw, sizes: sz, lastSeq: m.LastSeq}}
	return x.exclusiveAt(func(size int64) error {
		return x.writeLocked(line, size, known)
	})
}

// knownLine is an index line's session id and entry, as the writer encoded them.
type knownLine struct {
	id string
	e  *indexEntry
}

// update writes a line for id built from its current entry (folded under the lock, so a
// newer line from another process is not overwritten with older fields).
func (x *index) update(id string, fn func(old storage.Meta, ok bool) storage.Meta, sz fileSizes) error {
	return x.exclusiveAt(func(size int64) error {
		var old storage.Meta
		e, ok := x.ents[id]
		if ok {
			var m *storage.Meta
			if m, ok = e.decode(); ok {
				old = *m
			}
		}
		raw, err := json.Marshal(fn(old, ok))
		if err != nil {
			return fmt.Errorf("encode meta: %w", err)
		}
		b, err := json.Marshal(indexLine{ID: id, Files: &sz, Meta: raw})
		if err != nil {
			return fmt.Errorf("encode index line: %w", err)
		}
		return x.writeLocked(append(b, '\n'), size, nil)
	})
}

func (x *index) del(id string) error {
	return x.write(indexLine{ID: id, Deleted: true})
}
