package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
	"github.com/sessionmem/sessionmem/storage/ftsindex"
)

// searchDirName is the directory of the full-text index inside the store, and rebuildName
// the marker a rebuild keeps in it (see searchIdx).
const (
	searchDirName = "search"
	rebuildName   = "rebuild.lock"
)

// searchPoll is how often the syncer looks for records other processes appended and did not
// index (a process killed before its queue flushed, or one without an index). A range seen
// missing is indexed at the next look if it is still missing then, so a live writer's own
// queue (100 ms) always wins the race and nothing is indexed twice.
var searchPoll = 400 * time.Millisecond

// chunkRecords and chunkBytes bound what the catch-up reads under one session lock: a
// shared lock blocks that session's saves, so it is taken per chunk, not per session.
const (
	chunkRecords = 1024
	chunkBytes   = 4 << 20
)

// searchIdx is the store's full-text index and what keeps it current: the session files
// are the truth, the index in <store>/search is derived from them (package ftsindex).
//
//   - A save hands its records' docs to a Queue after its fsync, outside the session lock
//     (appended); the Queue indexes them within about 100 ms in one short transaction.
//   - A syncer goroutine compares, every searchPoll, each session's last seq in the listing
//     index with how far it is indexed, and indexes what is missing. At start (and after a
//     reset) it does so for every session: the catch-up. Sessions the store no longer has
//     are deleted from the index.
//   - An index found damaged (ErrCorrupt from any call) is replaced by an empty one (Reset)
//     and filled again. While a rebuild is incomplete the marker search/rebuild.lock exists
//     and Search answers ErrSearchUnavailable; the process rebuilding holds its flock, so
//     when that process dies another takes the rebuild over.
type searchIdx struct {
	s      *Store
	docs   storage.DocsFunc
	dir    string
	marker string

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	first  chan struct{} // closed when the first pass (the catch-up at open) has ended
	kick   chan struct{} // a full pass is wanted (buffered 1)

	mu      sync.Mutex
	ix      *ftsindex.Index
	q       *ftsindex.Queue
	openErr error
	known   map[string]known  // how far each session is indexed or queued by this process
	behind  map[string]uint64 // sessions found behind at the last pass, and their last seq
	corrupt bool              // a call reported ErrCorrupt, or a rewrite: reset at the next pass
	file    string            // the index file the last pass used
	// gen counts rewrites; resetGen is gen as of the last reset, resetCh is closed (and
	// replaced) after each reset. A rewrite (redaction) must leave no byte of the old text
	// in the index, so it is followed by a reset, made by the syncer between two passes so
	// that no batch read before the rewrite lands in the new file.
	gen, resetGen uint64
	resetCh       chan struct{}
	reindexing    bool // Reindex rebuilds (with progress): the syncer keeps out
	// lag is what the last pass found missing from the index (IndexLag).
	lag struct{ records, sessions int64 }
}

// known is how far this process knows a session to be indexed (or queued).
type known struct {
	created time.Time
	through uint64
}

// openSearch opens the index (a failure leaves search unavailable, never the store) and
// starts the syncer.
func openSearch(s *Store) *searchIdx {
	x := &searchIdx{s: s, docs: s.opts.Docs, dir: filepath.Join(s.dir, searchDirName),
		done: make(chan struct{}), first: make(chan struct{}), kick: make(chan struct{}, 1),
		known: map[string]known{}, behind: map[string]uint64{}, resetCh: make(chan struct{})}
	x.marker = filepath.Join(x.dir, rebuildName)
	x.ctx, x.cancel = context.WithCancel(context.Background())
	x.mu.Lock()
	x.openLocked()
	x.mu.Unlock()
	go x.run()
	return x
}

// openLocked opens the index if it is not open; x.mu is held.
func (x *searchIdx) openLocked() {
	if x.ix != nil {
		return
	}
	ix, err := ftsindex.Open(x.ctx, x.dir, ftsindex.Options{})
	if err != nil {
		if x.openErr == nil || x.openErr.Error() != err.Error() {
			x.s.log.Warn("search: index unavailable", "dir", x.dir, "err", err)
		}
		x.openErr = err
		return
	}
	x.ix, x.openErr = ix, nil
	x.q = ix.NewQueue(ftsindex.QueueOptions{OnError: x.onError, OnIndexed: x.onIndexed})
	x.known = map[string]known{}
	// A new index (none before, or one replaced because it was damaged or of an older
	// format) is empty while the store is not: it is being rebuilt until the catch-up ends.
	if ps, err := ix.Sessions(x.ctx); err == nil && len(ps) == 0 && x.storeHasRecords() {
		x.markRebuild()
	}
}

func (x *searchIdx) storeHasRecords() bool {
	xi := x.s.idx
	xi.mu.Lock()
	defer xi.mu.Unlock()
	if xi.refresh() != nil {
		return false
	}
	for _, e := range xi.ents {
		if e.lastSeq > 0 {
			return true
		}
	}
	return false
}

// markRebuild creates the rebuild marker (see searchIdx).
func (x *searchIdx) markRebuild() {
	if f, err := os.OpenFile(x.marker, os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		f.Close()
	}
}

// rebuilding reports whether a rebuild is incomplete.
func (x *searchIdx) rebuilding() bool {
	_, err := os.Stat(x.marker)
	return err == nil
}

func (x *searchIdx) onError(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if errors.Is(err, ftsindex.ErrCorrupt) {
		x.corrupt = true
	}
	// The batches were dropped: look at every session again.
	x.known = map[string]known{}
	x.s.log.Warn("search: indexing failed; the next pass catches up", "err", err)
	x.wake()
}

func (x *searchIdx) onIndexed(ps []ftsindex.Progress) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, p := range ps {
		if k, ok := x.known[p.SessionID]; ok && !p.Deleted && k.created.Equal(p.Created) && p.Through < k.through {
			// The batch left a gap (records another process appended are not indexed yet):
			// the syncer fills it.
			x.known[p.SessionID] = known{created: k.created, through: p.Through}
		}
	}
}

func (x *searchIdx) wake() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// appended hands the records one Update appended to the queue. It runs after the session
// lock is released: nothing here delays another save of the session.
func (x *searchIdx) appended(h storage.Header, name string, recs []storage.Record) {
	if len(recs) == 0 {
		return
	}
	b := ftsindex.Batch{Session: ftsindex.Session{ID: h.ID, Created: h.Created, WorkingDir: h.WorkingDir, Name: name},
		From: recs[0].Seq, Through: recs[len(recs)-1].Seq}
	for _, r := range recs {
		b.Size += len(r.Data)
	}
	// The records' Data belong to the append that wrote them and are never reused, so the
	// queue may turn them into docs later, off the save's path.
	b.Build = func() []fts.Doc {
		var docs []fts.Doc
		for _, r := range recs {
			docs = append(docs, x.docs(h, r)...)
		}
		return docs
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.q == nil {
		return
	}
	if err := x.q.Add(b); err != nil {
		// Refused (the queue holds as much as it may): the syncer indexes the range from the
		// session files once it sees it missing.
		if k, ok := x.known[h.ID]; ok && k.through >= b.From {
			x.known[h.ID] = known{created: k.created, through: b.From - 1}
		}
		return
	}
	k, ok := x.known[h.ID]
	switch {
	case ok && k.created.Equal(h.Created) && b.From <= k.through+1 && b.Through > k.through:
		x.known[h.ID] = known{created: h.Created, through: b.Through}
	case !ok && b.From == 1:
		// A session's first records, queued here: the syncer need not read them back from
		// the files when the queue is slower than its look (it was, under load, for every
		// session this process created).
		x.known[h.ID] = known{created: h.Created, through: b.Through}
	}
}

// deleted removes a deleted session from the index, with a tombstone for its incarnation
// so that batches still queued anywhere cannot bring it back.
func (x *searchIdx) deleted(id string, created time.Time, haveCreated bool) {
	x.mu.Lock()
	ix := x.ix
	delete(x.known, id)
	x.mu.Unlock()
	if ix == nil {
		return // a rebuild, or the next catch-up, drops it
	}
	var err error
	if haveCreated {
		err = ix.DeleteSession(x.ctx, id, created)
	} else {
		err = ix.ForgetSession(x.ctx, id)
	}
	if err != nil {
		x.noteErr(err)
		x.s.log.Warn("search: could not remove a deleted session from the index; search hides it", "session", id, "err", err)
	}
}

// created lifts the tombstone a deleted session left in the index when the id is created
// again with the same Created (a session copied back from an export or another store): the
// index tells incarnations apart by Created, and the tombstone would otherwise hide the new
// one's records for good.
func (x *searchIdx) created(id string, created time.Time) {
	x.mu.Lock()
	ix := x.ix
	x.mu.Unlock()
	if ix == nil {
		return // a rebuild reads the store afresh
	}
	p, err := ix.Progress(x.ctx, id)
	if err == nil && p.Deleted && p.Created.Equal(created) {
		err = ix.ForgetSession(x.ctx, id)
	}
	if err != nil {
		x.noteErr(err)
	}
}

// rewritten notes that a session's text changed in place (redaction): its old text must
// leave the index completely, and deleting rows leaves their bytes in free pages and old
// segments, so the syncer replaces the whole index (see waitReset) and fills it again.
func (x *searchIdx) rewritten(string) {
	x.mu.Lock()
	x.gen++
	x.corrupt = true
	x.mu.Unlock()
	x.wake()
}

// waitReset waits until the syncer has replaced the index after the last rewrite (or ctx
// ends, or a minute passes: the reset then happens later).
func (x *searchIdx) waitReset(ctx context.Context) {
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for {
		x.mu.Lock()
		done, ch := x.resetGen >= x.gen || x.ix == nil, x.resetCh
		x.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-x.ctx.Done():
			return
		case <-timeout.C:
			return
		}
	}
}

func (x *searchIdx) noteErr(err error) {
	if errors.Is(err, ftsindex.ErrCorrupt) {
		x.mu.Lock()
		x.corrupt = true
		x.mu.Unlock()
		x.wake()
	}
}

// close stops the syncer, indexes what is queued and closes the index.
func (x *searchIdx) close() error {
	x.cancel()
	<-x.done
	// Not under x.mu: the queue's last flush reports to onIndexed, which takes it.
	x.mu.Lock()
	ix, q := x.ix, x.q
	x.ix, x.q = nil, nil
	x.mu.Unlock()
	if ix == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := q.Close(ctx)
	return errors.Join(err, ix.Close())
}

// searchUnavailable wraps storage.ErrSearchUnavailable with what to do.
func searchUnavailable(format string, a ...any) error {
	return fmt.Errorf("%w: %s", storage.ErrSearchUnavailable, fmt.Sprintf(format, a...))
}
