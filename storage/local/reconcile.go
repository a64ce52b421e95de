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
		if !s.filesAt(id, e.sizes) {
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
	return x.exclusive(func() error {
		for _, id := range gone {
			if _, err := os.Stat(s.zstPath(id)); errors.Is(err, fs.ErrNotExist) {
				delete(x.ents, id)
			}
		}
		for id, f := range fixed {
			// Another process may have written a newer line meanwhile; keep it if it matches.
			if e := x.ents[id]; e != nil && s.filesAt(id, e.sizes) {
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
	})
}

// filesAt reports whether a session's files still end where an index line says they did:
// the .zst's size, and the tail's size, or, for a padded tail, a NUL byte (padding) right
// where the line says its data ends: appends into padding leave the size as it was.
func (s *Store) filesAt(id string, sz fileSizes) bool {
	fi, err := os.Stat(s.zstPath(id))
	if err != nil || fi.Size() != sz.Zst {
		return false
	}
	fi, err = os.Stat(s.tailPath(id))
	switch {
	case err != nil:
		return sz.Tail == -1
	case fi.Size() == sz.Tail:
		return true
	case sz.Tail < 0 || fi.Size() < sz.Tail:
		return false
	}
	f, err := openFile(s.tailPath(id), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	return readAt(f, b[:], sz.Tail) == nil && b[0] == 0
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
