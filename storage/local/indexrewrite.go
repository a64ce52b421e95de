package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/sessionmem/sessionmem/storage"
)

// The listing index's rewrites: index.jsonl written whole (its lines folded into one
// compressed snapshot) when it has grown past its live size, when it is damaged or missing,
// and what is kept when that cannot be written.

// compactIdle rewrites the index when more than half of its lines are superseded (and it
// holds more than a few dozen), so a store at rest keeps one line per session instead of one
// per save. The background sealer calls it; it takes the index lock only if nobody holds it.
func (x *index) compactIdle() error { return x.compact(1) }

// compactClose is compactIdle on Close, at more than one superseded line in eight: a process
// that created sessions leaves three lines for each (create, save, seal), and the next one
// may not stay long enough to compact them.
func (x *index) compactClose() error { return x.compact(8) }

// compact rewrites the index when more than 1/frac of its live lines are superseded (and more
// than a few dozen), if nobody holds the index lock.
func (x *index) compact(frac int) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lockF == nil {
		return nil
	}
	if err := x.lockF.Lock(true, false); err != nil {
		if errors.Is(err, errLockBusy) {
			return nil
		}
		return fmt.Errorf("lock index: %w", err)
	}
	defer x.lockF.Unlock()
	if err := x.refresh(); err != nil {
		return err
	}
	if x.badHd || x.lines-len(x.ents) <= max(len(x.ents)/frac, 32) {
		return nil
	}
	return x.rewriteLocked()
}

// rewriteLocked replaces the index with one line per live session (atomically); the caller
// holds the exclusive index lock and has folded everything.
func (x *index) rewriteLocked() error {
	ids := make([]string, 0, len(x.ents))
	for id := range x.ents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var lines []byte
	for _, id := range ids {
		e := x.ents[id]
		sz := e.sizes
		b, err := json.Marshal(indexLine{ID: id, Files: &sz, Meta: e.raw})
		if err != nil {
			return fmt.Errorf("encode index line: %w", err)
		}
		lines = append(append(lines, b...), '\n')
	}
	hd := indexHeader{Version: IndexFormatVersion, Index: "sessionmem", By: storage.WriterVersion()}
	var snap []byte
	if len(lines) > 0 {
		snap = x.encode(lines, make([]byte, 0, len(lines)/5+64))
		hd.Snapshot = int64(len(snap))
	}
	hb, _ := json.Marshal(hd)
	buf := append(append(append(make([]byte, 0, len(hb)+1+len(snap)), hb...), '\n'), snap...)
	// Our handle on the old file goes first (reload opens the new one): a file system without
	// POSIX rename semantics (Windows' FAT and exFAT, network shares) refuses to replace an
	// open file.
	if x.f != nil {
		x.f.Close()
		x.f = nil
	}
	if err := writeFileAtomic(x.fs, x.dir, indexName, buf, durableName); err != nil {
		x.keepUnsaved()
		return fmt.Errorf("rewrite index: %w", err)
	}
	ents := x.ents
	if err := x.reload(); err != nil {
		return err
	}
	if len(x.ents) != len(ents) {
		return fmt.Errorf("rewrite index: read back %d sessions, wrote %d", len(x.ents), len(ents))
	}
	return nil
}

// keepUnsaved keeps the entries in memory after a failed rewrite, which closed the file
// first: the file as it was is opened again as folded to its end (what this process knows
// is then listed until the file changes), or, when there is none, nothing reads it back
// until one appears. The next write rewrites it (writeLocked).
func (x *index) keepUnsaved() {
	f, err := x.fs.OpenFile(x.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil && storage.ReadOnly(err) {
		f, err = x.fs.OpenFile(x.path, os.O_RDONLY, 0)
	}
	var fi os.FileInfo
	if err == nil {
		if fi, err = f.Stat(); err != nil {
			f.Close()
		}
	}
	if err != nil {
		x.unsaved = true
		return
	}
	x.f, x.ino, x.off, x.unsaved = f, statID(fi).ino, fi.Size(), true
}
