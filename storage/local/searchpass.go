package local

import (
	"context"
	"errors"
	"os"
	"sort"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/ftsindex"
)

// The syncer's passes (see searchIdx): what is missing from the index, found by comparing
// each session's last seq in the listing with the index's progress. searchfeed.go reads and
// indexes it.

// run is the syncer: a full pass at start, then one look every searchPoll.
func (x *searchIdx) run() {
	defer close(x.done)
	t := time.NewTicker(searchPoll)
	defer t.Stop()
	full := true
	first := x.first
	for {
		err := x.pass(x.ctx, full, nil)
		if first != nil {
			close(first)
			first = nil
		}
		switch {
		case err == nil:
			full = false
		case x.ctx.Err() != nil:
			return
		case errors.Is(err, errReadStopped), errors.Is(err, errRewrittenMeanwhile):
			// Closing, or a reset is due (rewritten kicked the syncer): nothing to report.
		default:
			x.noteErr(err)
			x.s.log.Warn("search: catch-up failed; retrying", "err", err)
		}
		select {
		case <-x.ctx.Done():
			return
		case <-t.C:
		case <-x.kick:
			full = true
		}
	}
}

// pass brings the index up to date with the store. A full pass looks at every session
// without grace and deletes from the index the sessions the store no longer has; it also
// does the rebuild after a reset (taking the rebuild marker's lock). progress, when set,
// is told about each session read (reindex).
func (x *searchIdx) pass(ctx context.Context, full bool, progress func(sessions, total int, bytes int64)) error {
	ix, full, lock, err := x.prepare(ctx, full, progress)
	if err != nil || ix == nil {
		return err
	}
	if lock != nil {
		defer lock.Close()
	}
	// A full pass reads every indexed session's progress in one query (a search waits for
	// the first pass, and a query per session took 300 ms of it on a store of 5,000
	// sessions); the sessions indexed to their last seq are then left out at once.
	var indexed map[string]ftsindex.Progress
	var ps []ftsindex.Progress
	if full {
		var err error
		if ps, err = ix.Sessions(ctx); err != nil {
			return err
		}
		indexed = make(map[string]ftsindex.Progress, len(ps))
		for _, p := range ps {
			indexed[p.SessionID] = p
		}
	}
	metas, all := x.candidates(full, indexed)
	if full {
		if err := x.dropGone(ctx, ix, ps, all); err != nil {
			return err
		}
	}
	todo, err := x.missing(ctx, ix, metas, indexed, full, progress == nil)
	if err != nil {
		return err
	}
	if len(todo) > 0 {
		if err := x.feed(ctx, ix, todo, progress); err != nil {
			return err
		}
	}
	if lock != nil {
		os.Remove(x.marker) // while holding its lock: the rebuild is complete
	}
	return nil
}

// prepare opens the index for a pass, resets it when it was found damaged or held rewritten
// text, notices a file replaced under this process, and takes over an incomplete rebuild
// whose rebuilder died (returning the marker's lock, held until the pass ends). A nil index
// means no pass now: the index is unavailable, Reindex keeps the syncer out, or another
// process rebuilds. full comes back true when the pass must look at every session.
func (x *searchIdx) prepare(ctx context.Context, full bool, progress func(sessions, total int, bytes int64)) (*ftsindex.Index, bool, *os.File, error) {
	x.mu.Lock()
	x.openLocked()
	ix, corrupt := x.ix, x.corrupt
	x.mu.Unlock()
	if ix == nil {
		return nil, full, nil, nil // unavailable; openLocked logged why
	}
	if corrupt {
		if err := x.reset(ctx, ix); err != nil {
			return nil, full, nil, err
		}
		full = true
	}
	// The file replaced under us (deleted by hand, or another process's reset): what this
	// process knew is about the old one.
	if _, err := ix.Size(ctx); err != nil {
		return nil, full, nil, err
	}
	// x.file under x.mu: Reindex runs passes of its own beside the syncer's.
	f := ix.File()
	x.mu.Lock()
	replaced, fresh := f != x.file, x.file != ""
	if replaced {
		x.file, x.known = f, map[string]known{}
	}
	x.mu.Unlock()
	if replaced {
		if fresh {
			if ps, err := ix.Sessions(ctx); err == nil && len(ps) == 0 && x.storeHasRecords() {
				x.markRebuild()
			}
		}
		full = true
	}
	x.mu.Lock()
	keepOut := x.reindexing && progress == nil
	x.mu.Unlock()
	if keepOut {
		return nil, full, nil, nil
	}
	// A rebuild marker whose lock nobody holds: its rebuilder died, take it over.
	if !x.rebuilding() {
		return ix, full, nil, nil
	}
	lock, ok, err := tryLockPath(x.marker)
	if err != nil {
		return nil, full, nil, err
	}
	if !ok {
		return nil, full, nil, nil // another process rebuilds
	}
	x.mu.Lock()
	x.known = map[string]known{}
	x.mu.Unlock()
	return ix, true, lock, nil
}

// dropGone deletes from the index the sessions it has (indexed) and the store no longer has
// (have: every session of the store with records).
func (x *searchIdx) dropGone(ctx context.Context, ix *ftsindex.Index, indexed []ftsindex.Progress, have map[string]bool) error {
	for _, p := range indexed {
		if !have[p.SessionID] && !x.s.exists(p.SessionID) {
			if err := ix.DeleteSession(ctx, p.SessionID, p.Created); err != nil {
				return err
			}
		}
	}
	return nil
}

// missing compares each candidate's last seq with how far the index has it and returns what
// to index. Outside a full pass a session is indexed only when it was already behind at the
// previous look (the writer's own queue gets that long). indexed, when set (a full pass),
// holds every indexed session's progress. lag records what was found missing (IndexLag)
// when set.
func (x *searchIdx) missing(ctx context.Context, ix *ftsindex.Index, metas []storage.Meta, indexed map[string]ftsindex.Progress, full, lag bool) ([]feed, error) {
	var todo []feed
	newBehind := map[string]uint64{}
	var lagRecords, lagSessions int64
	for _, m := range metas {
		p, ok := indexed[m.ID]
		if !ok {
			// Not a full pass, or not indexed, or deleted (indexed has no tombstones).
			var err error
			if p, err = ix.Progress(ctx, m.ID); err != nil {
				return nil, err
			}
		}
		from := p.Through + 1
		if !p.Created.Equal(m.Created) || p.Through > m.LastSeq {
			lagRecords, lagSessions = lagRecords+int64(m.LastSeq), lagSessions+1
		} else if p.Through < m.LastSeq && !p.Deleted {
			lagRecords, lagSessions = lagRecords+int64(m.LastSeq-p.Through), lagSessions+1
		}
		switch {
		case p.Deleted && p.Created.Equal(m.Created):
			x.setKnown(m.ID, m.Created, m.LastSeq) // deleted while we listed it
			continue
		case !p.Created.Equal(m.Created) && (p.Through > 0 || !p.Created.IsZero()):
			from = 1 // another incarnation of the id; the batch replaces it
		case p.Through > m.LastSeq:
			// The session is shorter than what is indexed (restored from an older copy).
			if err := ix.ForgetSession(ctx, m.ID); err != nil {
				return nil, err
			}
			from = 1
		case p.Through >= m.LastSeq:
			x.setKnown(m.ID, m.Created, p.Through)
			continue
		}
		if !full {
			x.mu.Lock()
			seen := x.behind[m.ID]
			x.mu.Unlock()
			newBehind[m.ID] = m.LastSeq
			if seen == 0 {
				continue // give the writer's own queue time; index at the next look
			}
		}
		todo = append(todo, feed{meta: m, from: from})
	}
	x.mu.Lock()
	x.behind = newBehind
	if lag {
		x.lag.records, x.lag.sessions = lagRecords, lagSessions
	}
	x.mu.Unlock()
	return todo, nil
}

// reset replaces a damaged index (or one that held rewritten text) by an empty one and
// marks the rebuild.
func (x *searchIdx) reset(ctx context.Context, ix *ftsindex.Index) error {
	x.mu.Lock()
	gen, q := x.gen, x.q
	x.mu.Unlock()
	if q != nil {
		// Saves queued before a rewrite hold the old text: they go into the index being
		// replaced, not into its successor.
		_ = q.Flush(ctx)
	}
	x.markRebuild()
	if err := ix.Reset(ctx); err != nil {
		return err
	}
	x.mu.Lock()
	x.corrupt = gen != x.gen // a rewrite meanwhile: once more
	x.known = map[string]known{}
	x.resetGen = gen
	close(x.resetCh)
	x.resetCh = make(chan struct{})
	x.mu.Unlock()
	x.s.log.Info("search: index replaced; rebuilding it from the sessions", "dir", x.dir)
	return nil
}

func (x *searchIdx) setKnown(id string, created time.Time, through uint64) {
	x.mu.Lock()
	x.setKnownLocked(id, created, through)
	x.mu.Unlock()
}

// setKnownLocked is setKnown with x.mu held.
func (x *searchIdx) setKnownLocked(id string, created time.Time, through uint64) {
	x.known[id] = known{created: created, through: through}
	delete(x.behind, id)
}

// candidates lists the sessions whose last seq is beyond what this process knows to be
// indexed, or (a full pass) than indexed has, most recently updated first; a full pass also
// returns every session of the store with records (all).
func (x *searchIdx) candidates(full bool, indexed map[string]ftsindex.Progress) (out []storage.Meta, all map[string]bool) {
	xi := x.s.idx
	xi.mu.Lock()
	if err := xi.refresh(); err != nil {
		xi.mu.Unlock()
		return nil, nil
	}
	if full {
		all = make(map[string]bool, len(xi.ents))
	}
	x.mu.Lock()
	for id, e := range xi.ents {
		if e.lastSeq == 0 {
			continue
		}
		if full {
			all[id] = true
		}
		if p, ok := indexed[id]; ok && p.Through == e.lastSeq {
			// Indexed to its last seq: the index's incarnation must be the store's. The
			// created time alone is read (decoding every meta took a third of a first pass).
			if c, ok := e.created(); ok && c.Equal(p.Created) {
				x.setKnownLocked(id, c, p.Through)
				continue
			}
		}
		m, ok := e.decode()
		if !ok {
			continue
		}
		if k, ok := x.known[id]; ok && k.created.Equal(m.Created) && k.through >= e.lastSeq {
			continue
		}
		out = append(out, *m)
	}
	x.mu.Unlock()
	xi.mu.Unlock()
	// Most recently updated first: what agents look for is most often recent, and a
	// rebuild that is interrupted has then indexed what matters most.
	sort.Slice(out, func(i, j int) bool { return storage.NewerFirst(&out[i], &out[j]) })
	return out, all
}

// exists reports whether the store has a session file for id.
func (s *Store) exists(id string) bool {
	_, err := os.Stat(s.zstPath(id))
	return err == nil
}
