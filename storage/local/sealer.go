package local

import (
	"errors"
	"io/fs"
	"sort"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// idleSmallFactor: a tail smaller than MinIdleSealBytes waits this many times IdleSeal, so a
// conversation with long pauses is not cut into tiny frames (a frame of a few records keeps
// a third of the ratio a 1 MiB frame reaches).
const idleSmallFactor = 8

// sealer seals, in the background, the tails this process wrote to once they sit idle, and
// keeps the plain bytes of those tails under Options.MaxPlainBytes. A small tail waits longer
// for its seal (idleSmallFactor), but its padding goes after IdleSeal: an idle session keeps
// no zeros on disk for appends that are not coming. It never waits for a
// session: it takes the session's lock only if nobody holds it (a save in progress here or in
// another process) and skips a tail another process appended to recently, so no save ever
// waits behind a seal it started. Close seals what is left.
type sealer struct {
	s *Store

	mu    sync.Mutex
	tails map[string]*tailInfo // every session this process appended to since Open
	plain int64                // the sum of their tail bytes, as last seen
	// resting: sessions a read of this process left at rest with their lock file, and when
	// (restlock.go).
	resting map[string]time.Time

	quit chan struct{}
	done chan struct{}
}

type tailInfo struct {
	bytes  int64     // plain bytes in the tail after this process's last append or seal
	last   time.Time // last append this process made (or saw, for tails others append to)
	padded bool      // the tail had padding after this process's last append
}

func newSealer(s *Store) *sealer {
	z := &sealer{s: s, tails: map[string]*tailInfo{}, resting: map[string]time.Time{}, quit: make(chan struct{}), done: make(chan struct{})}
	if s.opts.IdleSeal < 0 && s.opts.MaxPlainBytes < 0 {
		close(z.done)
		return z
	}
	go z.run(z.tick())
	return z
}

// tickEvery is how often the sealer looks at the tails (a scan of a small map): within a
// quarter of IdleSeal after it elapsed, at most 20 times and at least once a second.
func tickEvery(idle time.Duration) time.Duration {
	if idle <= 0 {
		return time.Second
	}
	return min(max(idle/4, 50*time.Millisecond), time.Second)
}

// tick is how often the sealer looks, and how long a tail must have been left alone before the
// plain bound may seal it.
func (z *sealer) tick() time.Duration {
	if z.s.opts.sealTick > 0 {
		return z.s.opts.sealTick
	}
	return tickEvery(z.s.opts.IdleSeal)
}

// wrote records an append by this process that left tailBytes in the tail, and padding
// after them if padded.
func (z *sealer) wrote(id string, tailBytes int64, padded bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	t := z.tails[id]
	if t == nil {
		t = &tailInfo{}
		z.tails[id] = t
	}
	z.plain += tailBytes - t.bytes
	t.bytes, t.last, t.padded = tailBytes, z.s.now(), padded
}

// sealed records that id's tail is empty now (and unpadded).
func (z *sealer) sealed(id string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if t := z.tails[id]; t != nil {
		z.plain -= t.bytes
		t.bytes, t.padded = 0, false
	}
}

// forget stops tracking a deleted session.
func (z *sealer) forget(id string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	delete(z.resting, id)
	if t := z.tails[id]; t != nil {
		z.plain -= t.bytes
		delete(z.tails, id)
	}
}

// written returns the sessions this process appended to.
func (z *sealer) written() []string {
	z.mu.Lock()
	defer z.mu.Unlock()
	ids := make([]string, 0, len(z.tails))
	for id := range z.tails {
		ids = append(ids, id)
	}
	return ids
}

// plainBytes returns the tracked tails' plain bytes.
func (z *sealer) plainBytes() int64 {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.plain
}

// stop ends the background loop and waits for a seal in progress.
func (z *sealer) stop() {
	select {
	case <-z.quit:
	default:
		close(z.quit)
	}
	<-z.done
}

func (z *sealer) run(every time.Duration) {
	defer close(z.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-z.quit:
			return
		case <-t.C:
		}
		seal, trim := z.due()
		for _, id := range seal {
			select {
			case <-z.quit:
				return
			default:
			}
			z.trySeal(id, (*Writer).sealIdle)
		}
		for _, id := range trim {
			z.trySeal(id, (*Writer).trimPadding)
		}
		z.s.restIdle(z.restingDue(false), false)
		z.compactIndex()
	}
}

// compactIndex rewrites the index once this process has written nothing to it for IdleSeal
// and most of its lines are superseded (an index line per save adds up).
func (z *sealer) compactIndex() {
	s := z.s
	if s.opts.IdleSeal < 0 || s.enter() != nil {
		return
	}
	defer s.leave()
	z.mu.Lock()
	busy := false
	for _, t := range z.tails {
		busy = busy || s.now().Sub(t.last) < s.opts.IdleSeal
	}
	z.mu.Unlock()
	if busy {
		return
	}
	if err := s.idx.compactIdle(); err != nil {
		s.log.Warn("storage: index rewrite failed; it is retried later", "err", err)
	}
}

// due returns the tails to seal now: the idle ones, then, while the tracked plain bytes stay
// above MaxPlainBytes, the largest others that saw no append for a tick; and the padded tails
// to trim: idle for IdleSeal, not sealed yet.
func (z *sealer) due() (ids, trim []string) {
	opts := z.s.opts
	now := z.s.now()
	z.mu.Lock()
	defer z.mu.Unlock()
	var rest []string
	plain := z.plain
	for id, t := range z.tails {
		switch z.dueLocked(t, now) {
		case dueIdle:
			ids = append(ids, id)
			plain -= t.bytes
			continue
		case dueIfOver:
			rest = append(rest, id)
		}
		if t.padded && opts.IdleSeal >= 0 && now.Sub(t.last) >= opts.IdleSeal {
			trim = append(trim, id)
		}
	}
	if opts.MaxPlainBytes >= 0 && plain > opts.MaxPlainBytes {
		sort.Slice(rest, func(i, j int) bool { return z.tails[rest[i]].bytes > z.tails[rest[j]].bytes })
		for _, id := range rest {
			if plain <= opts.MaxPlainBytes {
				break
			}
			ids = append(ids, id)
			plain -= z.tails[id].bytes
		}
	}
	return ids, trim
}

type dueKind int

const (
	notDue    dueKind = iota
	dueIdle           // idle for IdleSeal (longer for a small tail)
	dueIfOver         // idle for a tick: sealed if the plain bytes are over the bound
)

func (z *sealer) dueLocked(t *tailInfo, now time.Time) dueKind {
	opts := z.s.opts
	if t.bytes == 0 {
		return notDue
	}
	idle := now.Sub(t.last)
	wait := opts.IdleSeal
	if t.bytes < MinIdleSealBytes {
		wait *= idleSmallFactor
	}
	switch {
	case opts.IdleSeal >= 0 && idle >= wait:
		return dueIdle
	case idle >= z.tick():
		return dueIfOver
	}
	return notDue
}

// isDue reports whether id is still due after its last append time moved (another process
// appended): idle long enough, or over the plain bound and idle for a tick.
func (z *sealer) isDue(id string) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	t := z.tails[id]
	if t == nil {
		return false
	}
	switch z.dueLocked(t, z.s.now()) {
	case dueIdle:
		return true
	case dueIfOver:
		return z.s.opts.MaxPlainBytes >= 0 && z.plain > z.s.opts.MaxPlainBytes
	}
	return false
}

// trySeal seals id's tail (or trims its padding: do is Seal or trimPadding) if nobody holds
// the session and nobody, in this process or another, appended to it for as long as due
// required. A session it cannot take now stays due and is tried again at the next tick.
func (z *sealer) trySeal(id string, do func(*Writer) error) {
	s := z.s
	if s.enter() != nil {
		return // closing: Close seals what is left
	}
	defer s.leave()
	// Another process's append shows in the tail's mtime: count it as an append, so the tail
	// must be idle for everyone.
	fi, err := s.fs.Stat(s.tailPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err == nil {
		z.mu.Lock()
		t := z.tails[id]
		moved := t != nil && fi.ModTime().After(t.last)
		if moved {
			t.last = fi.ModTime()
		}
		z.mu.Unlock()
		if moved && !z.isDue(id) {
			return
		}
	}
	lf, ok, err := tryLock(s.fs, s.lockPath(id))
	if err != nil || !ok {
		return
	}
	r, err := s.openLocked(id, lf, true)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			z.forget(id)
		}
		return
	}
	w := &Writer{Reader: *r}
	defer w.release()
	if err := do(w); err != nil {
		s.log.Warn("storage: background seal failed; the tail stays plain", "session", id, "err", err)
	}
	z.mu.Lock()
	if t := z.tails[id]; t != nil {
		z.plain += w.v.tailBytes - t.bytes
		t.bytes, t.padded = w.v.tailBytes, w.v.padded
	}
	z.mu.Unlock()
}
