package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// sessionsOnDisk returns the ids of the sessions that have a .zst, and sweeps the temp files
// a crashed writer left beside them and beside index.jsonl.
func (s *Store) sessionsOnDisk() (map[string]bool, error) {
	ents, err := s.fs.ReadDir(s.sessDir)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	onDisk := map[string]bool{}
	var temps []string
	for _, e := range ents {
		name := e.Name()
		if id, ok := strings.CutSuffix(name, zstSuffix); ok && storage.ValidID(id) && e.Type().IsRegular() {
			onDisk[id] = true
		} else if isTempName(name) {
			temps = append(temps, name)
		}
	}
	s.sweepTemps(s.sessDir, temps)
	if ents, err := s.fs.ReadDir(s.dir); err == nil { // index.jsonl's temp files
		temps = temps[:0]
		for _, e := range ents {
			temps = append(temps, e.Name())
		}
		s.sweepTemps(s.dir, temps)
	}
	return onDisk, nil
}

// reconcile makes the index agree with the session files (see Open).
func (s *Store) reconcile() error {
	onDisk, err := s.sessionsOnDisk()
	if err != nil {
		return err
	}
	x := s.idx
	x.mu.Lock()
	damaged := x.badHd || x.bad > 0
	var stale, gone []string
	judged := map[string]*indexEntry{} // the line each stale session had (nil: none)
	for id := range onDisk {
		e := x.ents[id]
		if e == nil || !s.filesAt(id, e.sizes) {
			stale = append(stale, id)
			judged[id] = e
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
	if testHookReconcileWrite != nil {
		testHookReconcileWrite()
	}
	err = x.exclusive(func() error {
		for _, id := range gone {
			if _, err := s.fs.Stat(s.zstPath(id)); errors.Is(err, fs.ErrNotExist) {
				delete(x.ents, id)
			}
		}
		for id, f := range fixed {
			raw, err := jsonMarshal(f.meta)
			if err != nil {
				return err
			}
			// Other processes write while this one opens. A line written since the files were
			// judged (a writer finishing the append that made its line look stale, appending
			// again, sealing) is as new as the summary or newer, and its metadata is the
			// writer's own: the summary does not replace it (rewriting the index from x.ents
			// would bypass fold's rule that a line never replaces a newer one); at the same
			// last_seq it brings only the sizes it saw. The line that was judged stale (or
			// damaged, or left by a crash) is replaced whole.
			if e := x.ents[id]; e != nil && e != judged[id] {
				if m, ok := e.decode(); ok && m.LastSeq >= f.meta.LastSeq {
					if s.filesAt(id, e.sizes) || m.LastSeq > f.meta.LastSeq {
						continue
					}
					raw = e.raw
				}
			}
			x.ents[id] = &indexEntry{raw: raw, sizes: f.sizes, lastSeq: f.meta.LastSeq}
		}
		return x.rewriteLocked()
	})
	if err != nil && (storage.DiskFull(err) || storage.ReadOnly(err)) {
		// The listing index is derived data, and this process lists from what it just
		// summarized: a full disk (or a store that may not be written) must not keep the
		// store from opening, for reads and for the saves that work again once there is
		// room. The next open rewrites it.
		s.log.Warn("storage: the listing index could not be rewritten; it is retried at the next open", "err", err)
		return nil
	}
	return err
}

// testHookReconcileWrite, when set by a test, runs between reconcile's summaries and its
// index write: where another process's writes race it.
var testHookReconcileWrite func()

// filesAt reports whether a session's files still end where an index line says they did:
// the .zst's size, and the tail's size, or, for a padded tail, a NUL byte (padding) right
// where the line says its data ends: appends into padding leave the size as it was. A live
// writer's sealer may cut that padding between the stat and the read (an idle tail's trim,
// which writes no index line since its data did not move); the read then fails, and the
// file, stat again, ends where the line says: the line is as current as before the trim.
func (s *Store) filesAt(id string, sz fileSizes) bool {
	fi, err := s.fs.Stat(s.zstPath(id))
	if err != nil || fi.Size() != sz.Zst {
		return false
	}
	fi, err = s.fs.Stat(s.tailPath(id))
	switch {
	case err != nil:
		return sz.Tail == -1
	case fi.Size() == sz.Tail:
		return true
	case sz.Tail < 0 || fi.Size() < sz.Tail:
		return false
	}
	f, err := s.fs.OpenFile(s.tailPath(id), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	if err := readAt(f, b[:], sz.Tail); err != nil {
		fi, err := f.Stat()
		return err == nil && fi.Size() == sz.Tail
	}
	return b[0] == 0
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
