package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// Descriptor cache. Opening a session's lock, .zst and tail afresh on every View or Update
// cost about 25 syscalls (open, fcntl, epoll registration, fstat, close, per file): roughly
// 23 µs, a tenth of the fsync an append is for. A session's descriptors are therefore kept
// open between calls and revalidated under the lock by one stat of each path: an open
// descriptor pins its inode, so its inode number cannot be reused by another file, and "the
// path still names this inode" proves the descriptor is current. At most
// Options.MaxOpenSessions idle sessions keep descriptors (least recently used go first).
//
// flock locks belong to the open file description, so one cached lock descriptor serves all
// of this process's callers at once only with in-process coordination (sessLock): an Update
// has the session to itself in this process and takes LOCK_EX; concurrent Views share one
// LOCK_SH, taken by the first and dropped by the last.

// DefaultMaxOpenSessions is the default Options.MaxOpenSessions.
const DefaultMaxOpenSessions = 64

// fileRef is a shared, reference-counted open session file. The cache slot holds one
// reference and each Reader using it another, so replacing or evicting it never closes a
// descriptor that a running View still reads from.
type fileRef struct {
	f        *os.File
	fi       os.FileInfo // of the descriptor at open: its identity
	writable bool
	refs     atomic.Int32
}

func (h *fileRef) put() {
	if h.refs.Add(-1) == 0 {
		h.f.Close()
	}
}

// sessLock coordinates this process's users of one session's cached lock descriptor. It is a
// reader/writer gate whose waits honour ctx; the flock itself is taken by the admitted writer,
// or by the first admitted reader for all readers (others wait while pending), and dropped
// under mu by the writer or the last reader, so a new first reader cannot have its fresh lock
// undone by an old reader's unlock.
type sessLock struct {
	mu      sync.Mutex
	readers int  // admitted readers, including a pending first one
	pending bool // the first reader is taking the shared flock
	writer  bool
	wwait   int           // writers waiting; a reader gap goes to them first
	wake    chan struct{} // closed on every state change
}

// waitLocked drops l.mu until the next state change or the end of ctx, then re-takes it.
func (l *sessLock) waitLocked(ctx context.Context) error {
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	ch := l.wake
	l.mu.Unlock()
	select {
	case <-ch:
		l.mu.Lock()
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		return ctx.Err()
	}
}

func (l *sessLock) broadcastLocked() {
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

func (l *sessLock) enterWriter(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wwait++
	for l.writer || l.readers > 0 {
		if err := l.waitLocked(ctx); err != nil {
			l.wwait--
			l.broadcastLocked() // readers held back for us may go
			return err
		}
	}
	l.wwait--
	l.writer = true
	return nil
}

// enterReader admits a reader; first means the caller must take the shared flock and then
// call readerLocked. Readers join running readers even with a writer waiting, so a View
// nested in a View of the same session cannot deadlock (flock behaves the same way).
func (l *sessLock) enterReader(ctx context.Context) (first bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.writer || l.pending || (l.readers == 0 && l.wwait > 0) {
		if err := l.waitLocked(ctx); err != nil {
			return false, err
		}
	}
	l.readers++
	if l.readers == 1 {
		l.pending = true
		return true, nil
	}
	return false, nil
}

func (l *sessLock) readerLocked(err error) {
	l.mu.Lock()
	l.pending = false
	if err != nil {
		l.readers--
	}
	l.broadcastLocked()
	l.mu.Unlock()
}

// exitReader drops a reader; the last one runs unlock (under l.mu, see sessLock).
func (l *sessLock) exitReader(unlock func()) {
	l.mu.Lock()
	l.readers--
	if l.readers == 0 {
		unlock()
	}
	l.broadcastLocked()
	l.mu.Unlock()
}

func (l *sessLock) exitWriter(unlock func()) {
	l.mu.Lock()
	unlock()
	l.writer = false
	l.broadcastLocked()
	l.mu.Unlock()
}

// use returns id's state with one more user. A state with users is never evicted; its
// lockF is guarded by lk, its file slots by mu; with no users, by Store.mu.
func (s *Store) use(id string) *sessState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.states[id]
	if st == nil {
		st = &sessState{id: id}
		s.states[id] = st
	}
	st.users++
	return st
}

// unuse drops a user. The last user files the state as most recently used and evicts the
// least recently used idle sessions' descriptors beyond the cap.
func (s *Store) unuse(st *sessState) {
	var closing []func()
	s.mu.Lock()
	st.users--
	if st.users == 0 {
		switch {
		case !st.ok && !st.hasFiles():
			// Nothing worth keeping (an unknown id, a deleted session).
			if st.elem != nil {
				s.lru.Remove(st.elem)
				st.elem = nil
			}
			if s.states[st.id] == st {
				delete(s.states, st.id)
			}
		case st.elem == nil:
			st.elem = s.lru.PushFront(st)
		default:
			s.lru.MoveToFront(st.elem)
		}
	}
	for e := s.lru.Back(); e != nil && s.lru.Len() > s.opts.MaxOpenSessions; {
		prev := e.Prev()
		if v := e.Value.(*sessState); v.users == 0 {
			s.lru.Remove(e)
			v.elem = nil
			closing = append(closing, v.detachFiles())
		}
		e = prev
	}
	s.mu.Unlock()
	for _, c := range closing {
		c()
	}
}

// hasFiles and detachFiles need exclusive use of st: users == 0 under Store.mu, or the
// session held exclusively. detachFiles empties the slots at once and returns the closing,
// which may run after Store.mu is released.
func (st *sessState) hasFiles() bool { return st.lockF != nil || st.zst != nil || st.tail != nil }

func (st *sessState) detachFiles() func() {
	lf, zst, tail := st.lockF, st.zst, st.tail
	st.lockF, st.lockFI, st.zst, st.tail = nil, nil, nil, nil
	return func() {
		if lf != nil {
			lf.Close()
		}
		for _, h := range []*fileRef{zst, tail} {
			if h != nil {
				h.put()
			}
		}
	}
}

func (st *sessState) dropData() {
	for _, slot := range []**fileRef{&st.zst, &st.tail} {
		if *slot != nil {
			(*slot).put()
			*slot = nil
		}
	}
}

// closeAllFiles closes every cached descriptor (Store.Close, once no call is running).
func (s *Store) closeAllFiles() {
	s.mu.Lock()
	var closing []func()
	for _, st := range s.states {
		closing = append(closing, st.detachFiles())
		if st.elem != nil {
			s.lru.Remove(st.elem)
			st.elem = nil
		}
	}
	s.mu.Unlock()
	for _, c := range closing {
		c()
	}
}

// lockSession takes the session's lock for this caller: in-process admission, then the flock
// on the cached lock descriptor (opened afresh when missing or no longer the lock file's
// inode). The caller must hold a use of st. ErrNotFound if the session does not exist.
func (s *Store) lockSession(ctx context.Context, st *sessState, exclusive bool) error {
	if exclusive {
		if err := st.lk.enterWriter(ctx); err != nil {
			return fmt.Errorf("session %s: lock: %w", st.id, err)
		}
		if err := s.flockSession(ctx, st, syscall.LOCK_EX); err != nil {
			st.lk.exitWriter(func() {})
			return err
		}
		return nil
	}
	first, err := st.lk.enterReader(ctx)
	if err != nil {
		return fmt.Errorf("session %s: lock: %w", st.id, err)
	}
	if first {
		err = s.flockSession(ctx, st, syscall.LOCK_SH)
		st.lk.readerLocked(err)
	}
	return err
}

// unlockSession undoes lockSession.
func (s *Store) unlockSession(st *sessState, exclusive bool) {
	unlock := func() {
		if st.lockF != nil && unlockFD(st.lockF) != nil {
			// Closing the descriptor releases the lock for certain.
			st.lockF.Close()
			st.lockF, st.lockFI = nil, nil
		}
	}
	if exclusive {
		st.lk.exitWriter(unlock)
	} else {
		st.lk.exitReader(unlock)
	}
}

// flockSession takes the flock; the caller has exclusive use of st.lockF (see sessLock).
func (s *Store) flockSession(ctx context.Context, st *sessState, how int) error {
	lp := s.lockPath(st.id)
	if f := st.lockF; f != nil {
		if err := flockCtx(ctx, f, how); err != nil {
			st.lockF, st.lockFI = nil, nil // flockCtx closes it (see there)
			return fmt.Errorf("session %s: lock %s: %w", st.id, lp, err)
		}
		pi, err := os.Stat(lp)
		if err == nil && os.SameFile(pi, st.lockFI) {
			return nil
		}
		// Deleted (and maybe created again) since: this inode excludes nobody any more.
		f.Close()
		st.lockF, st.lockFI = nil, nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("session %s: stat lock %s: %w", st.id, lp, err)
		}
	}
	// Checked before locking so that probing unknown ids leaves no lock files behind.
	if _, err := os.Stat(s.zstPath(st.id)); errors.Is(err, fs.ErrNotExist) {
		st.mu.Lock()
		st.dropData() // do not keep a deleted session's inodes alive
		st.ok = false
		st.mu.Unlock()
		return notFound(st.id)
	}
	f, fi, err := lockPath(ctx, lp, how == syscall.LOCK_EX)
	if err != nil {
		return fmt.Errorf("session %s: %w", st.id, err)
	}
	st.lockF, st.lockFI = f, fi
	return nil
}

// attachFile returns a reference to the open file at path, reusing the cached one in slot if
// the path still names its inode, and the file's current identity. Called under st.mu with
// the session locked. A missing file empties the slot and returns fs.ErrNotExist.
func attachFile(slot **fileRef, path string, flag int, needWrite bool) (*fileRef, fileID, error) {
	pi, err := os.Stat(path)
	if h := *slot; h != nil {
		if err == nil && os.SameFile(pi, h.fi) && (h.writable || !needWrite) {
			h.refs.Add(1)
			return h, statID(pi), nil
		}
		*slot = nil
		h.put()
	}
	if err != nil {
		return nil, fileID{}, err
	}
	writable := true
	f, err := os.OpenFile(path, os.O_RDWR|flag, 0)
	if err != nil && !needWrite && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		writable = false
		f, err = os.OpenFile(path, os.O_RDONLY, 0)
	}
	if err != nil {
		return nil, fileID{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fileID{}, err
	}
	h := &fileRef{f: f, fi: fi, writable: writable}
	h.refs.Store(2) // the slot's and the caller's
	*slot = h
	return h, statID(fi), nil
}
