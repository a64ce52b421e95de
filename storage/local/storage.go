package local

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/klauspost/compress/zstd"
)

// FormatVersion is the on-disk format version written into every file this package creates.
const FormatVersion = 1

// Options tune a Store. The zero value is usable.
type Options struct {
	// SealRecords and SealBytes: the plain tail is sealed into a zstd frame when it holds this
	// many records or bytes (defaults DefaultSealRecords and DefaultSealBytes).
	SealRecords int
	SealBytes   int
	// Logger receives warnings (damaged files skipped, index rebuilt). nil discards.
	Logger *slog.Logger
	// Summarize recomputes a session's listing metadata from its header and records. The store
	// calls it when the index is missing, damaged, or stale for a session (for example after a
	// crash between a tail fsync and the index write). nil: only header fields are filled.
	Summarize storage.SummarizeFunc
	// Now returns the current time; nil means time.Now. Tests inject a clock.
	Now func() time.Time
	// MaxOpenSessions caps how many idle sessions keep their descriptors (lock, .zst, tail:
	// up to three each) open between calls, least recently used closed first (default
	// DefaultMaxOpenSessions). Sessions in use keep theirs regardless.
	MaxOpenSessions int
}

// Default seal thresholds (see Options).
const (
	DefaultSealRecords = 1024
	DefaultSealBytes   = 1 << 20
)

// Store is a directory of session logs plus the listing index. It is safe for concurrent use
// by many goroutines and by many processes sharing the directory.
type Store struct {
	dir      string
	sessDir  string
	opts     Options
	log      *slog.Logger
	enc      *zstd.Encoder
	encSmall *zstd.Encoder
	dec      *zstd.Decoder
	idx      *index

	// life counts running operations so Close can wait for them. Not a sync.RWMutex: calls
	// nest (a Get or View inside a View), and a nested read lock would queue behind Close's
	// pending write lock while Close waits for the outer call.
	life    sync.Mutex
	running int
	idle    chan struct{} // closed when the last running operation leaves after Close began
	closed  bool

	mu      sync.Mutex
	states  map[string]*sessState
	lru     *list.List // of *sessState that may hold open descriptors, most recent first
	written map[string]bool
	bad     map[string]error // sessions found damaged at Open, skipped by List
	warned  map[string]bool
}

// Open opens (creating with 0700 if missing) the store at dir, folding the index and rebuilding
// it from the session files if it is missing or damaged.
//
// Open also reconciles the index with the session files: a session whose files' sizes differ
// from its index line (a crash between a tail fsync and the index write), or that has no line,
// is summarised again; index lines of sessions whose files are gone are dropped. A damaged or
// newer-format session file is logged and skipped, never failing Open. A newer-format index
// fails Open with ErrNewerFormat.
func Open(dir string, opts Options) (*Store, error) {
	if opts.SealRecords <= 0 {
		opts.SealRecords = DefaultSealRecords
	}
	if opts.SealBytes <= 0 {
		opts.SealBytes = DefaultSealBytes
	}
	if opts.MaxOpenSessions <= 0 {
		opts.MaxOpenSessions = DefaultMaxOpenSessions
	}
	s := &Store{
		dir: dir, sessDir: filepath.Join(dir, "sessions"), opts: opts, log: opts.Logger,
		states: map[string]*sessState{}, lru: list.New(), written: map[string]bool{},
		bad: map[string]error{}, warned: map[string]bool{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{dir, s.sessDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("open store %s: %w", dir, err)
		}
	}
	var err error
	s.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true),
		zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	// Below 256 bytes a multi-segment frame header has no content size field; a single
	// segment frame (window = content) always has one and costs nothing at that size.
	s.encSmall, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true),
		zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true), zstd.WithSingleSegment(true))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s.dec, err = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxContentSize))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s.idx, err = openIndex(dir, s.log)
	if err != nil {
		s.dec.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if err := s.reconcile(); err != nil {
		s.idx.close()
		s.dec.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return s, nil
}

// reconcile makes the index agree with the session files (see Open).
func (s *Store) reconcile() error {
	ents, err := os.ReadDir(s.sessDir)
	if err != nil {
		return fmt.Errorf("read sessions: %w", err)
	}
	onDisk := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if id, ok := strings.CutSuffix(name, zstSuffix); ok && storage.ValidID(id) && e.Type().IsRegular() {
			onDisk[id] = true
		}
	}
	x := s.idx
	x.mu.Lock()
	damaged := x.badHd || x.bad > 0
	var stale, gone []string
	for id := range onDisk {
		e := x.ents[id]
		if e == nil {
			stale = append(stale, id)
			continue
		}
		if e.sizes != s.statSizes(id) {
			stale = append(stale, id)
		}
	}
	for id := range x.ents {
		if !onDisk[id] {
			gone = append(gone, id)
		}
	}
	x.mu.Unlock()
	if damaged && len(onDisk) > 0 {
		// A new, empty store has no index yet either; that is not worth a warning.
		s.log.Warn("storage: index missing or damaged; rebuilding from session files", "dir", s.dir, "sessions", len(onDisk))
	}
	sort.Strings(stale)
	type fresh struct {
		meta  storage.Meta
		sizes fileSizes
	}
	fixed := map[string]fresh{}
	for _, id := range stale {
		m, sz, err := s.summarize(id)
		if err != nil {
			s.markBad(id, err)
			continue
		}
		fixed[id] = fresh{m, sz}
	}
	if !damaged && len(fixed) == 0 && len(gone) == 0 {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := lockFD(x.lockF, true); err != nil {
		return fmt.Errorf("lock index: %w", err)
	}
	defer unlockFD(x.lockF)
	if err := x.refresh(); err != nil {
		return err
	}
	for _, id := range gone {
		if _, err := os.Stat(s.zstPath(id)); errors.Is(err, fs.ErrNotExist) {
			delete(x.ents, id)
		}
	}
	for id, f := range fixed {
		// Another process may have written a newer line meanwhile; keep it if it matches.
		if e := x.ents[id]; e != nil && e.sizes == s.statSizes(id) {
			if _, ok := e.decode(); ok {
				continue
			}
		}
		raw, err := jsonMarshal(f.meta)
		if err != nil {
			return err
		}
		x.ents[id] = &indexEntry{raw: raw, sizes: f.sizes}
	}
	return x.rewriteLocked()
}

// statSizes returns a session's file sizes without opening them (-1 for a missing tail).
func (s *Store) statSizes(id string) fileSizes {
	sz := fileSizes{Zst: -1, Tail: -1}
	if fi, err := os.Stat(s.zstPath(id)); err == nil {
		sz.Zst = fi.Size()
	}
	if fi, err := os.Stat(s.tailPath(id)); err == nil {
		sz.Tail = fi.Size()
	}
	return sz
}

// summarize recomputes a session's Meta from its files.
func (s *Store) summarize(id string) (storage.Meta, fileSizes, error) {
	var m storage.Meta
	var sz fileSizes
	err := s.view(context.Background(), id, func(r *Reader) error {
		if s.opts.Summarize != nil {
			var err error
			if m, err = s.opts.Summarize(r.Header(), r.Records(1)); err != nil {
				return fmt.Errorf("summarize session %s: %w", id, err)
			}
		}
		r.fillHeader(&m)
		m.LastSeq = r.LastSeq()
		if m.Updated.IsZero() {
			m.Updated = r.modTime()
		}
		sz = r.sizes()
		return nil
	})
	return m, sz, err
}

func (r *Reader) modTime() time.Time {
	t := r.v.zstID.mtime
	if r.v.hasTail && r.v.tailID.mtime > t {
		t = r.v.tailID.mtime
	}
	return time.Unix(0, t).UTC()
}

func (s *Store) markBad(id string, err error) {
	s.mu.Lock()
	s.bad[id] = err
	warn := !s.warned[id]
	s.warned[id] = true
	s.mu.Unlock()
	if warn {
		s.log.Warn("storage: skipping damaged session", "session", id, "err", err)
	}
}

func (s *Store) isBad(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bad[id]
}

func (s *Store) clearBad(id string) {
	s.mu.Lock()
	delete(s.bad, id)
	s.mu.Unlock()
}

func (s *Store) markWritten(id string) {
	s.mu.Lock()
	s.written[id] = true
	s.mu.Unlock()
}

func (s *Store) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

func (s *Store) enter() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return storage.ErrClosed
	}
	s.running++
	return nil
}

func (s *Store) leave() {
	s.life.Lock()
	defer s.life.Unlock()
	s.running--
	if s.running == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Close seals the tails this process wrote to and releases resources. It waits for running
// operations; later calls return ErrClosed.
func (s *Store) Close() error {
	s.life.Lock()
	if s.closed {
		s.life.Unlock()
		return nil
	}
	s.closed = true // from now on enter refuses, nested calls of running operations included
	var idle chan struct{}
	if s.running > 0 {
		idle = make(chan struct{})
		s.idle = idle
	}
	s.life.Unlock()
	if idle != nil {
		<-idle
	}
	s.mu.Lock()
	ids := make([]string, 0, len(s.written))
	for id := range s.written {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	var errs []error
	for _, id := range ids {
		err := s.update(context.Background(), id, func(w *Writer) error { return w.Seal() })
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	s.closeAllFiles()
	s.idx.close()
	s.dec.Close()
	s.enc.Close()
	s.encSmall.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store %s: %w", s.dir, err)
	}
	return nil
}

// Create writes a new session (header frame, empty tail, index entry) durably. It returns
// ErrExists if the id is taken and ErrInvalidID for a bad id. Storage sets h.Version, and
// h.Created if zero; m gets the header fields, and Updated = Created if zero.
func (s *Store) Create(ctx context.Context, h storage.Header, m storage.Meta) error {
	if err := checkID(h.ID); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	id := h.ID
	h.Version = FormatVersion
	if h.Created.IsZero() {
		h.Created = s.now()
	}
	if h.Nonce == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		h.Nonce = hex.EncodeToString(b[:])
	}
	frame, err := encodeHeaderFrame(h)
	if err != nil {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	lf, _, err := lockPath(ctx, s.lockPath(id), true)
	if err != nil {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	defer lf.Close()
	if _, err := os.Stat(s.zstPath(id)); err == nil {
		return fmt.Errorf("create session %s: %w", id, storage.ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	// The tail first: the .zst rename is the commit point, and a tail without a .zst is
	// ignored (and replaced by the next Create of that id).
	tailHdr := encodeTailHeader(id)
	if err := writeFileAtomic(s.sessDir, id+tailSuffix, tailHdr, false); err != nil {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	if err := writeFileAtomic(s.sessDir, id+zstSuffix, frame, true); err != nil {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	s.clearBad(id)
	r := &Reader{s: s, id: id}
	r.v = sessView{verified: true, hasTail: true, hdr: h, hdrEnd: int64(len(frame)), zstEnd: int64(len(frame)),
		tailHdrLen: int64(len(tailHdr)), tailEnd: int64(len(tailHdr))}
	if fi, err := os.Stat(s.zstPath(id)); err == nil {
		r.v.zstID = statID(fi)
	}
	if fi, err := os.Stat(s.tailPath(id)); err == nil {
		r.v.tailID = statID(fi)
	}
	st := s.use(id)
	st.mu.Lock()
	st.v, st.ok = r.v, true
	st.mu.Unlock()
	s.unuse(st)
	if m.Updated.IsZero() {
		m.Updated = h.Created
	}
	r.fillMeta(&m)
	if err := s.idx.put(id, m, r.sizes()); err != nil {
		s.log.Warn("storage: index write failed; it is reconciled at next open", "session", id, "err", err)
	}
	return nil
}

// Get returns one session's metadata from the index (no session file is opened).
func (s *Store) Get(ctx context.Context, id string) (storage.Meta, error) {
	if err := checkID(id); err != nil {
		return storage.Meta{}, err
	}
	if err := s.enter(); err != nil {
		return storage.Meta{}, err
	}
	defer s.leave()
	if err := s.isBad(id); err != nil {
		return storage.Meta{}, err
	}
	x := s.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.refresh(); err != nil {
		return storage.Meta{}, fmt.Errorf("read index: %w", err)
	}
	e := x.ents[id]
	if e == nil {
		return storage.Meta{}, notFound(id)
	}
	m, ok := e.decode()
	if !ok {
		return storage.Meta{}, fmt.Errorf("session %s: index entry does not decode: %w", id, storage.ErrCorrupt)
	}
	return *m, nil
}

// List returns the metadata of the sessions q selects, newest Updated first (ties by id),
// re-reading only what other processes appended to the index since the last call. Damaged
// sessions are skipped (and logged once).
func (s *Store) List(ctx context.Context, q storage.ListQuery) ([]storage.Meta, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	nbad := len(s.bad)
	s.mu.Unlock()
	x := s.idx
	x.mu.Lock()
	if err := x.refresh(); err != nil {
		x.mu.Unlock()
		return nil, fmt.Errorf("read index: %w", err)
	}
	var undecodable []string
	if x.sortedGen != x.gen || x.sorted == nil {
		// Decode and sort only after the index changed; a warm List just filters and copies.
		x.sorted = x.sorted[:0]
		for id, e := range x.ents {
			m, ok := e.decode()
			if !ok {
				undecodable = append(undecodable, id)
				continue
			}
			x.sorted = append(x.sorted, m)
		}
		sort.Slice(x.sorted, func(i, j int) bool { return storage.NewerFirst(x.sorted[i], x.sorted[j]) })
		x.sortedGen = x.gen
	}
	start := 0
	if q.After != nil {
		start = sort.Search(len(x.sorted), func(i int) bool { return !q.After.Before(x.sorted[i]) })
	}
	var out []storage.Meta
	for _, m := range x.sorted[start:] {
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
		if nbad > 0 && s.isBad(m.ID) != nil {
			continue
		}
		if q.Selects(m) {
			out = append(out, *m) // a copy: the cache must not be changed through it
		}
	}
	x.mu.Unlock()
	for _, id := range undecodable {
		s.markBad(id, fmt.Errorf("index entry does not decode: %w", storage.ErrCorrupt))
	}
	return out, nil
}

// Update runs fn while holding the session's exclusive cross-process lock. Writes happen through
// the Writer. It returns ErrNotFound if the session does not exist (checked after locking).
// Opening for update repairs a torn end left by a crash. The Writer is valid only inside fn.
func (s *Store) Update(ctx context.Context, id string, fn func(w storage.Writer) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return s.update(ctx, id, func(w *Writer) error { return fn(w) })
}

func (s *Store) update(ctx context.Context, id string, fn func(w *Writer) error) error {
	r, err := s.openSession(ctx, id, true)
	if err != nil {
		return err
	}
	w := &Writer{Reader: *r}
	defer w.release()
	s.clearBad(id)
	return fn(w)
}

// View runs fn while holding the session's shared cross-process lock (no writer can seal or
// append meanwhile). The Reader is valid only inside fn.
func (s *Store) View(ctx context.Context, id string, fn func(r storage.Reader) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return s.view(ctx, id, func(r *Reader) error { return fn(r) })
}

func (s *Store) view(ctx context.Context, id string, fn func(r *Reader) error) error {
	r, err := s.openSession(ctx, id, false)
	if err != nil {
		return err
	}
	defer r.release()
	return fn(r)
}

// Delete removes a session's files and its index entry. ErrNotFound if it does not exist.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	zp, lp := s.zstPath(id), s.lockPath(id)
	if _, err := os.Stat(zp); errors.Is(err, fs.ErrNotExist) {
		return notFound(id)
	}
	st := s.use(id)
	defer s.unuse(st)
	if err := s.lockSession(ctx, st, true); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return err
		}
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	defer s.unlockSession(st, true)
	// Removing the lock file while holding it is safe: lockers re-check the inode. Every
	// descriptor of the session is closed here (the lock's last, which releases it), so this
	// process keeps no deleted inode alive.
	defer func() {
		os.Remove(lp)
		st.mu.Lock()
		closeFiles := st.detachFiles()
		st.v, st.ok = sessView{}, false
		st.mu.Unlock()
		closeFiles()
	}()
	if _, err := os.Stat(zp); errors.Is(err, fs.ErrNotExist) {
		return notFound(id)
	}
	// The .zst goes first: without it the session does not exist, whatever else remains.
	if err := os.Remove(zp); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := os.Remove(s.tailPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete session %s tail: %w", id, err)
	}
	if err := syncDir(s.sessDir); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	s.mu.Lock()
	delete(s.written, id)
	s.mu.Unlock()
	s.clearBad(id)
	if err := s.idx.del(id); err != nil {
		s.log.Warn("storage: index write failed; it is reconciled at next open", "session", id, "err", err)
	}
	return nil
}

var _ storage.Store = (*Store)(nil)
var _ storage.Writer = (*Writer)(nil)
