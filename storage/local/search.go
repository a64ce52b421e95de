package local

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
	"github.com/sessionmem/sessionmem/storage/ftsindex"
)

var _ storage.Searcher = (*Store)(nil)

// Search implements storage.Searcher over the index in <store>/search (Options.Docs must be
// set). Hits carry the session's current name; a hit of a session the store no longer has
// (deleted by a process that could not update the index) is left out. While the index is
// being rebuilt, or cannot be opened, it returns an error wrapping
// storage.ErrSearchUnavailable that says why.
func (s *Store) Search(ctx context.Context, q storage.SearchQuery) (storage.SearchResult, error) {
	if err := s.enter(); err != nil {
		return storage.SearchResult{}, err
	}
	defer s.leave()
	x := s.search
	if x == nil {
		return storage.SearchResult{}, searchUnavailable("this store was opened without a search index")
	}
	ix, err := x.index()
	if err != nil {
		return storage.SearchResult{}, err
	}
	x.caughtUp(ctx)
	x.flush(ctx)
	res, err := ix.Search(ctx, ftsindex.Query{
		Match: q.Match, SessionID: q.SessionID, WorkingDir: q.WorkingDir, Role: q.Role, Kind: q.Kind,
		File: q.File, Since: q.Since, Until: q.Until, Limit: q.Limit, Cursor: q.Cursor, Text: s.docTexts,
	})
	switch {
	case errors.Is(err, ftsindex.ErrInvalid):
		return storage.SearchResult{}, fmt.Errorf("%w: %w", fts.ErrBadQuery, err)
	case errors.Is(err, ftsindex.ErrCorrupt):
		x.noteErr(err)
		return storage.SearchResult{}, searchUnavailable("the search index in %s is damaged and is being rebuilt; try again in a minute", x.dir)
	case errors.Is(err, ftsindex.ErrClosed):
		return storage.SearchResult{}, storage.ErrClosed
	case err != nil:
		return storage.SearchResult{}, fmt.Errorf("search: %w", err)
	}
	out := storage.SearchResult{Hits: make([]storage.SearchHit, 0, len(res.Hits)), NextCursor: res.NextCursor, Windowed: res.Windowed}
	xi := s.idx
	xi.mu.Lock()
	defer xi.mu.Unlock()
	if err := xi.refresh(); err != nil {
		return storage.SearchResult{}, fmt.Errorf("read index: %w", err)
	}
	for _, h := range res.Hits {
		e := xi.ents[h.SessionID]
		if e == nil {
			continue // deleted
		}
		name := h.SessionName
		if m, ok := e.decode(); ok {
			if e.lastSeq < h.Seq {
				continue // an older incarnation's entry, replaced at the next catch-up
			}
			name = m.Name
		}
		out.Hits = append(out.Hits, storage.SearchHit{
			SessionID: h.SessionID, SessionName: name, WorkingDir: h.WorkingDir, Seq: h.Seq,
			EntryID: h.EntryID, Kind: h.Kind, Role: h.Role, Time: h.Time, Score: h.Score,
		})
	}
	return out, nil
}

// docTexts is the index's ftsindex.TextFunc: the texts of docs, built again from their
// records (one View per session), for the words of several terms the index checks against
// the text. A doc whose session or record is gone gets "".
func (s *Store) docTexts(ctx context.Context, refs []ftsindex.DocRef) ([]string, error) {
	out := make([]string, len(refs))
	bySession := map[string][]int{}
	var order []string
	for i, r := range refs {
		if _, ok := bySession[r.SessionID]; !ok {
			order = append(order, r.SessionID)
		}
		bySession[r.SessionID] = append(bySession[r.SessionID], i)
	}
	for _, id := range order {
		err := s.View(ctx, id, func(r storage.Reader) error {
			h := r.Header()
			for _, i := range bySession[id] {
				for rec, err := range r.Records(refs[i].Seq) {
					if err != nil {
						return err
					}
					if rec.Seq == refs[i].Seq {
						for _, d := range s.search.docs(h, rec) {
							if d.Kind == refs[i].Kind {
								out[i] = d.Text
								break
							}
						}
					}
					break
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return nil, err
		}
	}
	return out, nil
}

// firstPassWait bounds how long a search waits for the catch-up its process began at open.
var firstPassWait = 2 * time.Second

// caughtUp waits (at most firstPassWait) until the syncer's first pass has ended. That pass
// indexes what processes killed before their queue flushed saved, and a search made right
// after the store was opened (a CLI command, a restarted server's first call) must find it.
// A rebuild does not hold it up: the pass leaves it to the process that holds it, and Search
// answers ErrSearchUnavailable (memory then scans the sessions).
func (x *searchIdx) caughtUp(ctx context.Context) {
	select {
	case <-x.first:
		return
	default:
	}
	t := time.NewTimer(firstPassWait)
	defer t.Stop()
	select {
	case <-x.first:
	case <-t.C:
	case <-ctx.Done():
	case <-x.ctx.Done():
	}
}

// flush indexes what this process queued (its own saves), so that a search finds what the
// same process saved before, at once; with nothing queued it costs nothing.
func (x *searchIdx) flush(ctx context.Context) {
	x.mu.Lock()
	q := x.q
	x.mu.Unlock()
	if q == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = q.Flush(ctx) // a failure is the queue's to report; search answers what is indexed
}

// index returns the open index, or why search cannot answer now.
func (x *searchIdx) index() (*ftsindex.Index, error) {
	x.mu.Lock()
	ix, openErr := x.ix, x.openErr
	x.mu.Unlock()
	switch {
	case ix == nil && errors.Is(openErr, ftsindex.ErrNewerFormat):
		return nil, searchUnavailable("%v", openErr)
	case ix == nil:
		return nil, searchUnavailable("the search index in %s cannot be opened (%v); it is retried every second", x.dir, openErr)
	case x.rebuilding():
		return nil, searchUnavailable("the search index in %s is being rebuilt from the sessions; try again in a minute ('sessionmem reindex' rebuilds it with progress)", x.dir)
	}
	return ix, nil
}

// SearchStats describe the search index: its file and size, what it holds, and whether it
// is complete.
type SearchStats struct {
	ftsindex.Stats
	// Rebuilding is true while a rebuild is incomplete (Search answers
	// ErrSearchUnavailable meanwhile).
	Rebuilding bool
}

// SearchStats returns the index's file, size and counts. It fails with
// storage.ErrSearchUnavailable when the store has no index (Options.Docs unset) or it
// cannot be opened.
func (s *Store) SearchStats(ctx context.Context) (SearchStats, error) {
	if err := s.enter(); err != nil {
		return SearchStats{}, err
	}
	defer s.leave()
	ix, err := s.searchIndex()
	if err != nil {
		return SearchStats{}, err
	}
	st, err := ix.Stats(ctx)
	return SearchStats{Stats: st, Rebuilding: s.search.rebuilding()}, err
}

// VerifyIndex implements storage.IndexVerifier: it checks the whole index (ftsindex.Verify),
// nil when it is intact. A damaged index is rebuilt in the background (or by Reindex); the
// error wraps ftsindex.ErrCorrupt.
func (s *Store) VerifyIndex(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	ix, err := s.searchIndex()
	if err != nil {
		return err
	}
	err = ix.Verify(ctx)
	s.search.noteErr(err)
	return err
}

// Reindex implements storage.Reindexer: it replaces the index by an empty one and indexes
// every session again, now, calling progress (when set) after each session with the sessions
// done, their number and the bytes of records read. Search answers ErrSearchUnavailable in
// every process until it is done; an interrupted reindex is finished by the next process
// that opens the store.
func (s *Store) Reindex(ctx context.Context, progress func(storage.ReindexProgress)) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	ix, err := s.searchIndex()
	if err != nil && !errors.Is(err, storage.ErrSearchUnavailable) || ix == nil {
		return err
	}
	// pass tells Reindex from the syncer (which it keeps out meanwhile) by a progress
	// function: without one, Reindex's own passes would be kept out too, for ever.
	passProgress := func(int, int, int64) {}
	if progress != nil {
		passProgress = func(done, total int, bytes int64) {
			progress(storage.ReindexProgress{Sessions: done, TotalSessions: total, Bytes: bytes})
		}
	}
	x := s.search
	x.mu.Lock()
	x.reindexing = true
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		x.reindexing = false
		x.mu.Unlock()
	}()
	x.markRebuild()
	if err := ix.Reset(ctx); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	x.mu.Lock()
	x.known, x.corrupt = map[string]known{}, false
	x.mu.Unlock()
	for {
		// The syncer may have taken the rebuild first; then wait for it.
		// A rewrite meanwhile: the next pass replaces the index and starts again.
		if err := x.pass(ctx, true, passProgress); err != nil && !errors.Is(err, errRewrittenMeanwhile) {
			return fmt.Errorf("reindex: %w", err)
		}
		if !x.rebuilding() {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reindex: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := ix.Optimize(ctx); err != nil {
		return fmt.Errorf("reindex: optimize: %w", err)
	}
	return nil
}

// searchIndex returns the open index even while it is being rebuilt.
func (s *Store) searchIndex() (*ftsindex.Index, error) {
	x := s.search
	if x == nil {
		return nil, searchUnavailable("this store was opened without a search index")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.openLocked()
	if x.ix == nil {
		return nil, searchUnavailable("the search index in %s cannot be opened: %v", x.dir, x.openErr)
	}
	return x.ix, nil
}

// createdOf returns a session's creation time from the listing index.
func (s *Store) createdOf(id string) (time.Time, bool) {
	xi := s.idx
	xi.mu.Lock()
	defer xi.mu.Unlock()
	if xi.refresh() != nil {
		return time.Time{}, false
	}
	if e := xi.ents[id]; e != nil {
		if m, ok := e.decode(); ok {
			return m.Created, true
		}
	}
	return time.Time{}, false
}
