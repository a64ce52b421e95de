package local

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
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
	// IdleSeal: a tail this process wrote to is sealed in the background once no append has
	// reached it for this long (default DefaultIdleSeal; negative: never). Tails smaller than
	// MinIdleSealBytes wait for IdleSeal × idleSmallFactor, so a slow conversation is not cut
	// into tiny frames.
	IdleSeal time.Duration
	// MaxPlainBytes bounds the plain tails this process wrote to, all sessions together
	// (default DefaultMaxPlainBytes; negative: no bound). Above it the background sealer
	// seals the largest idle tails first, without waiting for IdleSeal.
	MaxPlainBytes int64
	// Logger receives warnings (damaged files skipped, index rebuilt). nil discards.
	Logger *slog.Logger
	// Summarize recomputes a session's listing metadata from its header and records. The store
	// calls it when the index is missing, damaged, or stale for a session (for example after a
	// crash between a tail fsync and the index write). nil: only header fields are filled.
	Summarize storage.SummarizeFunc
	// Now returns the current time; nil means time.Now. Tests inject a clock.
	Now func() time.Time
	// MaxCachedSessions caps how many sessions' views (frame tables and tail line offsets, a
	// few KB each) the store keeps between calls, least recently used dropped first (default
	// DefaultMaxCachedSessions). A dropped view is read again from the files when needed.
	MaxCachedSessions int

	// Docs, when set, gives the store a full-text index in <store>/search (storage.Searcher):
	// it turns each stored record into what is indexed (memory.Docs). nil: no index, and
	// Search answers storage.ErrSearchUnavailable.
	Docs storage.DocsFunc

	// sealTick overrides how often the background sealer looks (tests).
	sealTick time.Duration
	// closeSealers overrides how many seals Close runs at once (tests: the power-loss test
	// numbers a workload's disk operations, which must come in the same order every run).
	closeSealers int
	// fs is the file system the store works in: nil is the operating system's (tests
	// simulate a disk that loses power).
	fs fileSystem
	// firstInTail sends a new session's first append to its tail like any other (tests of
	// the tail; see writeFirst).
	firstInTail bool
}

// Defaults for Options.
const (
	DefaultSealRecords       = 1024
	DefaultSealBytes         = 1 << 20
	DefaultIdleSeal          = 15 * time.Second
	MinIdleSealBytes         = 16 << 10
	DefaultMaxPlainBytes     = 64 << 20
	DefaultMaxCachedSessions = 1024
)

// Store is a directory of session logs plus the listing index. It is safe for concurrent use
// by many goroutines and by many processes sharing the directory.
type Store struct {
	dir      string
	sessDir  string
	fs       fileSystem
	opts     Options
	log      *slog.Logger
	enc      *zstd.Encoder
	encSmall *zstd.Encoder
	dec      *zstd.Decoder
	// encBetter compresses frames of fewer than betterBelow bytes; made on first use
	// (betterEncoder), so a process that seals only large frames never holds its tables.
	betterOnce sync.Once
	encBetter  *zstd.Encoder
	idx        *index
	frames     *frameCache
	sealer     *sealer
	search     *searchIdx // nil without Options.Docs

	// life counts running operations so Close can wait for them. Not a sync.RWMutex: calls
	// nest (a Get or View inside a View), and a nested read lock would queue behind Close's
	// pending write lock while Close waits for the outer call.
	life    sync.Mutex
	running int
	idle    chan struct{} // closed when the last running operation leaves after Close began
	closed  bool

	mu     sync.Mutex
	states map[string]*sessState
	lru    *list.List       // of *sessState, most recently used first
	bad    map[string]error // sessions found damaged at Open, skipped by List
	warned map[string]bool
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
	if opts.IdleSeal == 0 {
		opts.IdleSeal = DefaultIdleSeal
	}
	if opts.MaxPlainBytes == 0 {
		opts.MaxPlainBytes = DefaultMaxPlainBytes
	}
	if opts.MaxCachedSessions <= 0 {
		opts.MaxCachedSessions = DefaultMaxCachedSessions
	}
	if opts.fs == nil {
		opts.fs = osFS{}
	}
	s := &Store{
		dir: dir, sessDir: filepath.Join(dir, "sessions"), fs: opts.fs, opts: opts, log: opts.Logger,
		states: map[string]*sessState{}, lru: list.New(), bad: map[string]error{}, warned: map[string]bool{},
		frames: newFrameCache(frameCacheBytes),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{dir, s.sessDir} {
		if err := mkdirDurable(s.fs, d); err != nil {
			return nil, fmt.Errorf("open store %s: %w", dir, err)
		}
	}
	var err error
	// A window of a seal's size: frames hold about SealBytes (1 MiB) of records, so a larger
	// window finds no more matches, and the encoder keeps a history buffer of twice the
	// window (the default 8 MiB kept 24 MiB of a saving process's heap).
	s.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true),
		zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(encoderWindow))
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
	s.idx, err = openIndex(s.fs, dir, s.log, s.encodeFrame, s.dec)
	if err != nil {
		s.dec.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if err := s.reconcile(); err != nil {
		s.idx.close()
		s.dec.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s.sealer = newSealer(s)
	if opts.Docs != nil {
		s.search = openSearch(s)
	}
	return s, nil
}

// state returns id's cached view, creating it, and files it as the most recently used; views
// beyond MaxCachedSessions are dropped, least recently used first. A call that still holds a
// dropped view only updates an orphan, so dropping needs no coordination.
func (s *Store) state(id string) *sessState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.states[id]
	if st == nil {
		st = &sessState{id: id}
		s.states[id] = st
		st.elem = s.lru.PushFront(st)
	} else {
		s.lru.MoveToFront(st.elem)
	}
	for s.lru.Len() > s.opts.MaxCachedSessions {
		old := s.lru.Remove(s.lru.Back()).(*sessState)
		delete(s.states, old.id)
	}
	return st
}

// forgetState drops id's cached view (a deleted session, or files replaced behind the store's
// back in tests).
func (s *Store) forgetState(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.states[id]; st != nil {
		s.lru.Remove(st.elem)
		delete(s.states, id)
	}
}

// dropState forgets what this process knows of id's files and that it wrote to it, so the
// next call reads the files from scratch (tests use it after replacing files behind the
// store's back).
func (s *Store) dropState(id string) {
	s.forgetState(id)
	s.sealer.forget(id)
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

// Close stops the background sealer, waits for running operations, seals the tails this
// process wrote to and releases resources. Later calls return ErrClosed.
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
	s.sealer.stop()
	if idle != nil {
		<-idle
	}
	ids := s.sealer.written()
	sort.Strings(ids)
	// The seals first: a client gives a server a few seconds to exit before it kills it,
	// and the index is derived data, which the next Open catches up on.
	errs := s.sealAll(ids)
	s.restIdle(s.sealer.restingDue(true), true)
	if s.search != nil {
		if err := s.search.close(); err != nil {
			s.log.Warn("search: closing the index", "err", err) // derived data: the next open catches up
		}
	}
	if err := s.idx.compactClose(); err != nil {
		s.log.Warn("storage: index rewrite failed; it is retried later", "err", err)
	}
	s.idx.close()
	s.dec.Close()
	s.enc.Close()
	s.encSmall.Close()
	if s.encBetter != nil && s.encBetter != s.enc {
		s.encBetter.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store %s: %w", s.dir, err)
	}
	return nil
}

// encoderWindow is the seal encoder's window (see Open).
const encoderWindow = 1 << 20

// betterBelow: frames of fewer bytes than this (and at least 256) are compressed at zstd's
// better level instead of its default. They are small sessions' (a session saved once is one
// such frame, written by its first save; a slow conversation's idle seals make more), where a
// disk block is the unit: a 5-message session of ~2 KB messages takes about 3.5 KB, and a few
// percent less moves the ones just over 4 KiB into one block. Its encoder's tables take 4 MB
// where the default's take 1 MB; the larger frames of long sessions (a save of 50 messages is
// about 100 KB) never use it. Compressing 10 KB takes about 50 µs more at this level, on the
// first save's path (writeFirst) and off it for seals.
const betterBelow = 64 << 10

// encodeFrame compresses src into one zstd frame that records its content size (a frame of
// fewer than 256 bytes has the field only if it is a single segment: encSmall) and appends
// it to dst. It serves index.jsonl's snapshot, and never picks betterBelow's encoder as
// encodeRecord does: a store of a hundred sessions has a snapshot under 64 KiB, and a
// process that only saves long sessions would hold that encoder's 4 MB of tables for it.
func (s *Store) encodeFrame(src, dst []byte) []byte {
	if len(src) < 256 {
		return s.encSmall.EncodeAll(src, dst)
	}
	return s.enc.EncodeAll(src, dst)
}

// betterEncoder returns the encoder of frames under betterBelow, made on first use.
func (s *Store) betterEncoder() *zstd.Encoder {
	s.betterOnce.Do(func() {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderCRC(true),
			zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(betterBelow))
		if err != nil {
			s.log.Warn("storage: no encoder for small frames; they take the default level", "err", err)
			enc = s.enc
		}
		s.encBetter = enc
	})
	return s.encBetter
}

// closeSealers is how many seals Close runs at once. A seal is mostly its fsync, and fsyncs
// of several files share the file system's journal commits: a process that wrote to a
// thousand sessions seals them in about a third of the time one at a time takes, which
// matters because clients give a server a few seconds to exit before they kill it.
const closeSealers = 4

// sealAll seals (and removes the tails of) the sessions ids, closeSealers at a time, and
// returns the failures.
func (s *Store) sealAll(ids []string) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		next = make(chan string)
	)
	n := closeSealers
	if s.opts.closeSealers > 0 {
		n = s.opts.closeSealers
	}
	for range min(n, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				err := s.update(context.Background(), id, func(w *Writer) error { return w.sealIdle() })
				if err != nil && !errors.Is(err, storage.ErrNotFound) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	return errs
}

var _ storage.Store = (*Store)(nil)
var _ storage.Writer = (*Writer)(nil)
