package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/sessionmem/sessionmem/storage"
)

// Create writes a new session (header frame, index entry) durably. It returns
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
	lf, _, err := lockPath(ctx, s.fs, s.lockPath(id), true)
	if err != nil {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	created := false
	defer func() {
		if created {
			s.restLock(id, lf, true) // no tail yet: at rest
		}
		lf.Close()
	}()
	if _, err := s.fs.Stat(s.zstPath(id)); err == nil {
		return fmt.Errorf("create session %s: %w", id, storage.ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	// A new session has no tail file (notail.go): its first append writes its records into
	// the .zst, or the tail whole. A tail that a Delete of this id left behind (it removes the
	// .zst first) would be read as the new session's, so it goes first, durably: the .zst's
	// rename is the commit point.
	if err := s.fs.Remove(s.tailPath(id)); err == nil {
		if err := syncDir(s.fs, s.sessDir); err != nil {
			return fmt.Errorf("create session %s: %w", id, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("create session %s: remove old tail: %w", id, err)
	}
	if err := writeFileAtomic(s.fs, s.sessDir, id+zstSuffix, frame, durableName); err != nil {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	created = true
	s.clearBad(id)
	tail := newAbsentTail(s.tailPath(id), id)
	r := &Reader{s: s, id: id, tail: tail} // for sizes: no tail file
	ti, _ := tail.Stat()
	r.v = sessView{verified: true, hasTail: true, hdr: h, hdrEnd: int64(len(frame)), hdrRaw: frame, zstEnd: int64(len(frame)),
		tailHdrLen: int64(len(tail.hdr)), tailEnd: int64(len(tail.hdr)), tailVer: TailFormatVersion, padChecked: true,
		tailID: statID(ti)}
	if fi, err := s.fs.Stat(s.zstPath(id)); err == nil {
		r.v.zstID = statID(fi)
	}
	st := s.state(id)
	st.mu.Lock()
	st.v, st.ok = r.v, true
	st.mu.Unlock()
	if m.Updated.IsZero() {
		m.Updated = h.Created
	}
	r.fillMeta(&m)
	if err := s.idx.put(id, m, r.sizes()); err != nil {
		s.log.Warn("storage: index write failed; it is reconciled at next open", "session", id, "err", err)
	}
	if s.search != nil {
		s.search.created(id, h.Created)
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
		// Sort again only after the index changed (entries decode once, when first listed);
		// a warm List just filters and copies.
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
	err = fn(w)
	if s.search != nil && len(w.added) > 0 {
		// After the lock is released: indexing never delays the session's next save.
		w.release()
		s.search.appended(w.v.hdr, w.name, w.added)
	}
	return err
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
	if _, err := s.fs.Stat(zp); errors.Is(err, fs.ErrNotExist) {
		return notFound(id)
	}
	if s.search != nil {
		// After the files are gone (the deferred calls run last to first): from then on no
		// catch-up can index the session again.
		created, ok := s.createdOf(id)
		defer func() {
			if !s.exists(id) {
				s.search.deleted(id, created, ok)
			}
		}()
	}
	lf, _, err := lockPath(ctx, s.fs, lp, true)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	// Removing the lock file while holding it is safe: lockers re-check the inode.
	defer func() {
		s.fs.Remove(lp)
		lf.Close()
	}()
	if _, err := s.fs.Stat(zp); errors.Is(err, fs.ErrNotExist) {
		return notFound(id)
	}
	// The .zst goes first: without it the session does not exist, whatever else remains. Its
	// removal is made durable before the others: a file system need not keep a directory's
	// changes in order until it is synced, and a power loss that kept the tail's removal and
	// not the .zst's would bring the session back without its latest records.
	if err := s.fs.Remove(zp); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := syncDir(s.fs, s.sessDir); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := s.fs.Remove(s.tailPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete session %s tail: %w", id, err)
	}
	if err := s.removeSnapshot(id); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := syncDir(s.fs, s.sessDir); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	s.forgetState(id)
	s.sealer.forget(id)
	s.clearBad(id)
	if err := s.idx.del(id); err != nil {
		s.log.Warn("storage: index write failed; it is reconciled at next open", "session", id, "err", err)
	}
	return nil
}
