package memory

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/fileops"
	"github.com/sessionmem/sessionmem/storage"
)

// cacheSize bounds how many sessions' states a process keeps, and cacheBudget what they take
// together (state.cost): a state costs a few hundred bytes per entry, so 64 sessions of 2,000
// messages held 20 MiB of a saving server's heap. 4 MiB keeps eight such sessions (an agent
// works in one or two at a time; a state evicted is rebuilt from its snapshot) and took 4 MB
// off the peak of a server saving 400 MB, against 8 MiB. The most recently used state is kept
// whatever its size. (A variable for tests.)
const cacheSize = 64

var cacheBudget = 4 << 20

// Service is what the tools call. It is safe for concurrent use, and several processes may
// share one store.
type Service struct {
	store storage.Store
	opts  Options
	log   *slog.Logger
	now   func() time.Time
	files fileops.Extractor

	mu        sync.Mutex
	cache     map[string]*state
	lru       []lruEntry // least recently used first
	cacheUsed int        // the bytes of the states in lru (state.cost)

	snaps *snapshotter // nil when the store keeps no snapshots
	pre   prefetcher   // resume pages built ahead (resume_prefetch.go)
}

// New returns a Service over store.
func New(store storage.Store, opts Options) *Service {
	s := &Service{store: store, opts: opts, log: opts.Logger, now: opts.Now,
		files: fileops.Extractor{Mapping: opts.FileMapping}, cache: map[string]*state{}}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	if ss, ok := store.(storage.Snapshots); ok {
		s.pre.gens = ss
		if !opts.NoSnapshots {
			s.snaps = newSnapshotter(s, ss)
		}
	}
	return s
}

// Close writes the state snapshots still due (see snapshot.go) and stops writing them in the
// background, and waits for the resume pages being built ahead (resume_prefetch.go), building
// no more. The Service stays usable; the store is the caller's to close, after this.
func (s *Service) Close() error {
	if s.snaps != nil {
		s.snaps.close()
	}
	s.pre.close()
	return nil
}

// Store returns the underlying store.
func (s *Service) Store() storage.Store { return s.store }

func (s *Service) newSessionID() string {
	if s.opts.NewID != nil {
		return s.opts.NewID()
	}
	return newSessionID(s.now())
}

// current returns the session's state brought up to date with the log, with st.mu held: the
// caller unlocks it when done. The caller holds the session in the store (View or Update), so
// the log does not change meanwhile; st.mu keeps this process's other callers of the same
// session (concurrent Views) from applying records at the same time. Only what was appended
// since the cached state's last record is read; a session deleted and created again (another
// header nonce) is read from the start.
func (s *Service) current(id string, r storage.Reader) (*state, error) {
	last := r.LastSeq()
	h := r.Header()
	gen := ""
	if s.snaps != nil {
		gen = s.snaps.store.Generation(r)
	}
	s.mu.Lock()
	st := s.cache[id]
	s.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		if st.lastSeq > last || st.header.Nonce != h.Nonce || !st.header.Created.Equal(h.Created) || st.gen != gen {
			st.mu.Unlock()
			st = nil
		}
	}
	if st == nil {
		// Cached before it is built, locked: a concurrent caller (a resume racing the warm-up
		// at start, two first calls) waits for this build instead of reading the log again.
		st = newState(h)
		st.gen = gen
		st.mu.Lock()
		s.remember(id, st)
		// No snapshot covers fewer than snapshotMinGrowth records (see snapshotter.write), so
		// a shorter session does not look for one.
		if s.snaps != nil && last > snapshotMinGrowth {
			if snap, err := decodeSnapshot(h, s.snaps.store.LoadSnapshot(r)); err == nil && snap.lastSeq <= last {
				st.adopt(snap)
				st.snapSeq = snap.lastSeq
				s.log.Debug("state restored from its snapshot", "session", id, "records", snap.lastSeq, "newer", last-snap.lastSeq)
			}
		}
	}
	if from := st.lastSeq + 1; from <= last {
		if err := st.applyAll(r.Records(from)); err != nil {
			st.mu.Unlock()
			s.forget(id)
			return nil, fmt.Errorf("read session %s: %w", id, err)
		}
		s.snapshotLater(id, st)
	}
	s.remember(id, st)
	return st, nil
}

// Warm builds the cached states of the n most recently updated sessions of at most
// maxWarmRecords records and reads their first pages, so that the first resume after a server
// start (usually of the session the agent worked on last) need not read a whole log or
// decode a frame. Servers call it in the
// background at start; a call for a session being warmed waits for that build.
func (s *Service) Warm(ctx context.Context, n int) error {
	metas, err := s.listMetas(ctx, storage.ListQuery{Limit: n})
	if err != nil {
		return err
	}
	for _, m := range metas {
		if m.LastSeq > maxWarmRecords {
			continue
		}
		err := s.store.View(ctx, m.ID, func(r storage.Reader) error {
			st, err := s.current(m.ID, r)
			if err == nil {
				st.mu.Unlock()
			}
			return err
		})
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	// Read each one's first page too, the session worked on last at the end: the store then
	// holds the frames that page is cut from (storage/local keeps the last two decoded), so
	// the client's first resume decodes nothing.
	for i := len(metas) - 1; i >= 0; i-- {
		if metas[i].LastSeq > maxWarmRecords {
			continue
		}
		if _, err := s.Resume(ctx, ResumeRequest{SessionID: metas[i].ID, Raw: true}); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// maxWarmRecords bounds what Warm reads per session.
const maxWarmRecords = 20000

// lruEntry is a state in the cache's LRU order and what it cost when last used.
type lruEntry struct {
	id    string
	bytes int
}

// remember caches st as the most recently used state, evicting the least recently used
// beyond cacheSize states or cacheBudget bytes. The caller holds st.mu (st.cost reads it).
func (s *Service) remember(id string, st *state) {
	cost := st.cost()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(id)
	s.lru = append(s.lru, lruEntry{id: id, bytes: cost})
	s.cacheUsed += cost
	s.cache[id] = st
	for len(s.lru) > 1 && (len(s.lru) > cacheSize || s.cacheUsed > cacheBudget) {
		delete(s.cache, s.lru[0].id)
		s.cacheUsed -= s.lru[0].bytes
		s.lru = s.lru[1:]
	}
}

func (s *Service) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cache, id)
	s.dropLocked(id)
}

// dropLocked takes id out of the LRU order; s.mu is held.
func (s *Service) dropLocked(id string) {
	for i, x := range s.lru {
		if x.id == id {
			s.cacheUsed -= x.bytes
			s.lru = append(s.lru[:i], s.lru[i+1:]...)
			return
		}
	}
}

// Save appends messages, creating the session when SessionID is empty.
func (s *Service) Save(ctx context.Context, req SaveRequest) (SaveResult, error) {
	if err := checkSave(req); err != nil {
		return SaveResult{}, err
	}
	creating := req.SessionID == ""
	msgs := stripEntryIDs(req.Messages) // the gate redacts them in commit
	if creating {
		if err := s.preCheckPinned(msgs); err != nil {
			return SaveResult{}, err
		}
	}
	id := req.SessionID
	now := s.now()
	if creating {
		id = s.newSessionID()
		h := storage.Header{ID: id, Created: now, WorkingDir: req.WorkingDir}
		m := storage.Meta{ID: id, WorkingDir: req.WorkingDir, Created: now, Updated: now}
		if err := s.create(ctx, h, m); err != nil {
			return SaveResult{}, mapSaveErr(id, fmt.Errorf("create session: %w", err))
		}
	}
	var res SaveResult
	err := s.update(ctx, id, func(w storage.Writer) error {
		st, err := s.current(id, w)
		if err != nil {
			return err
		}
		defer st.mu.Unlock()
		// What the state holds went through the gate, so compare with what the gate makes of
		// the request.
		salt := gateSalt(st.header)
		parent := st.leaf
		if req.ParentID != "" {
			pid := s.gateID(salt, req.ParentID)
			if !st.has(pid) {
				return notFoundf("pass leaf_id from an earlier session_save or an entry_id from session_resume",
					"parent_id %q is not an entry of session %s", req.ParentID, id)
			}
			parent = pid
		}
		b := newBatch(st, parent, now)
		s.addMetaChanges(b, req.Name, req.Model, req.Provider, time.Time{})
		for i := range msgs {
			m := msgs[i]
			if m.ID != "" && !b.claimClient(s.gateID(salt, m.ID)) {
				continue
			}
			b.add(Entry{Type: KindMessage, Message: &m})
			res.Saved++
		}
		if err := s.checkPinned(st, b); err != nil {
			return err
		}
		if req.ContextWindow > 0 {
			st.window = req.ContextWindow
		}
		if err := s.commit(w, st, b, now); err != nil {
			return err
		}
		res.SessionID = id
		res.MessageCount = st.messages
		res.LeafID = st.leaf
		res.ContextTokens = st.contextTokens()
		res.ShouldCompact = compaction.ShouldCompact(res.ContextTokens, req.ContextWindow)
		res.WorkingDir = st.header.WorkingDir
		res.OtherWorkingDir = !creating && req.WorkingDir != "" && !sameDir(s.redact(req.WorkingDir), res.WorkingDir)
		return nil
	})
	if err != nil {
		return SaveResult{}, mapSaveErr(id, err)
	}
	return res, nil
}

// checkSave refuses a save request that is malformed, before anything is read or written.
func checkSave(req SaveRequest) error {
	creating := req.SessionID == ""
	if creating {
		if req.WorkingDir == "" {
			return invalidf("pass working_dir (the project's absolute path) when creating a session, or pass session_id to add to an existing one",
				"working_dir is required when session_id is omitted")
		}
		if req.ParentID != "" {
			return invalidf("omit parent_id when creating a session", "parent_id given for a new session")
		}
	} else if err := checkSessionID("session_id", req.SessionID); err != nil {
		return err
	}
	if err := checkWorkingDir(req.WorkingDir); err != nil {
		return err
	}
	if req.ParentID != "" && !validID(req.ParentID) {
		return invalidf("pass an entry id from leaf_id or a message's entry_id", "parent_id %q is not a valid id", clip(req.ParentID, 80))
	}
	if err := checkMeta(req.Name, req.Model, req.Provider); err != nil {
		return err
	}
	if req.ContextWindow < 0 {
		return invalidf("pass the model's context window in tokens, or omit it", "context_window is negative")
	}
	if err := validateMessages(req.Messages); err != nil {
		return err
	}
	return nil
}

func checkMeta(name, model, provider string) error {
	for _, f := range []struct{ field, v string }{{"name", name}, {"model", model}, {"provider", provider}} {
		if len(f.v) > MaxNameBytes {
			return invalidf(fmt.Sprintf("keep %s under %d bytes", f.field, MaxNameBytes), "%s is %d bytes long", f.field, len(f.v))
		}
		if strings.ContainsAny(f.v, "\x00\n\r") {
			return invalidf(fmt.Sprintf("pass %s as one line of text", f.field), "%s contains a line break or NUL", f.field)
		}
	}
	return nil
}

// batch builds the entries one call appends, chaining each to the one before.
type batch struct {
	st      *state
	parent  string
	now     time.Time
	entries []Entry
	taken   map[string]bool
	barrier bool // seal before the first record (compactions start a new frame)
}

func newBatch(st *state, parent string, now time.Time) *batch {
	return &batch{st: st, parent: parent, now: now, taken: map[string]bool{}}
}

// claimClient reports whether a client id (a message's, an imported summary's key), as the
// gate makes it, is new to the session and to the batch, and claims it for the batch.
func (b *batch) claimClient(id string) bool {
	if _, dup := b.st.client[id]; dup || b.taken["client:"+id] {
		return false
	}
	b.taken["client:"+id] = true
	return true
}

// addMetaChanges adds the entries that rename the session or change its model, when the
// request's (redacted) values differ from the session's; at (zero: the batch's time) is when.
func (s *Service) addMetaChanges(b *batch, name, model, provider string, at time.Time) {
	name, model, provider = s.redact(name), s.redact(model), s.redact(provider)
	if name != "" && name != b.st.name {
		b.add(Entry{Type: KindSessionInfo, SessionInfo: &SessionInfo{Name: name}, Time: at})
	}
	if (model != "" && model != b.st.model) || (provider != "" && provider != b.st.provider) {
		b.add(Entry{Type: KindModelChange, ModelChange: &ModelChange{Model: model, Provider: provider}, Time: at})
	}
}

// add appends e as a child of the previous entry, assigning a fresh id unless e has one.
func (b *batch) add(e Entry) {
	if e.ID == "" {
		e.ID = b.st.newEntryID(b.taken)
	}
	b.taken[e.ID] = true
	e.ParentID = b.parent
	if e.Time.IsZero() {
		e.Time = b.now
	}
	b.entries = append(b.entries, e)
	b.parent = e.ID
}

// commit appends the batch and applies it to st: one storage append (one write, one fsync),
// or one per compaction in the batch, since each compaction must start a new frame. With
// nothing to write it touches nothing. On failure the cached state is dropped, since it may be
// half-applied.
func (s *Service) commit(w storage.Writer, st *state, b *batch, updated time.Time) error {
	id := st.header.ID
	var seg []storage.Record
	flush := func() error {
		if len(seg) == 0 {
			return nil
		}
		m, err := s.gateMeta(gateSalt(st.header), st.meta(updated))
		if err != nil {
			return err
		}
		written, err := w.Append(seg, m)
		if err != nil {
			s.forget(id)
			return fmt.Errorf("append to session %s: %w", id, err)
		}
		if len(written) != len(seg) || written[len(written)-1].Seq != st.lastSeq {
			// Records we did not see slipped in; rebuild from the log next time.
			s.forget(id)
		} else {
			s.snapshotLater(id, st)
		}
		seg = nil
		return nil
	}
	for i, e := range b.entries {
		e, err := s.gateEntry(st.header, e) // the gate: nothing reaches disk without it
		if err != nil {
			return err
		}
		data, err := encodeEntry(e)
		if err != nil {
			return err
		}
		barrier := e.Type == KindCompaction || (b.barrier && i == 0)
		if barrier {
			if err := flush(); err != nil {
				return err
			}
		}
		r := storage.Record{Seq: st.lastSeq + 1, Kind: e.Type, Data: data, Barrier: barrier, Key: entryKey(e)}
		if err := st.apply(r); err != nil {
			s.forget(id)
			return err
		}
		seg = append(seg, r)
	}
	return flush()
}

// List lists sessions newest first.
func (s *Service) List(ctx context.Context, req ListRequest) (ListResult, error) {
	limit, err := checkLimit(req.Limit, 20, 100)
	if err != nil {
		return ListResult{}, err
	}
	if err := checkWorkingDir(req.WorkingDir); err != nil {
		return ListResult{}, err
	}
	if len(req.Query) > MaxQueryBytes {
		return ListResult{}, invalidf(fmt.Sprintf("shorten query to under %d bytes", MaxQueryBytes), "query is %d bytes long", len(req.Query))
	}
	var after *listCursor
	if req.Cursor != "" {
		var c listCursor
		if err := decodeToken("l1.", req.Cursor, &c); err != nil || c.ID == "" {
			return ListResult{}, stalef("pass next_cursor exactly as session_list returned it, or omit cursor to start over",
				"cursor is not a session_list cursor")
		}
		if c.Query != req.Query || c.WorkingDir != req.WorkingDir {
			return ListResult{}, stalef("repeat the same working_dir and query with a cursor, or omit cursor to start over",
				"cursor belongs to a listing with other filters")
		}
		after = &c
	}
	q := storage.ListQuery{WorkingDir: req.WorkingDir, Text: req.Query, Limit: limit + 1}
	if after != nil {
		q.After = &storage.ListPosition{Updated: after.Updated, ID: after.ID}
	}
	metas, err := s.listMetas(ctx, q)
	if err != nil {
		return ListResult{}, err
	}
	res := ListResult{Sessions: []Session{}}
	for _, m := range metas {
		if len(res.Sessions) == limit {
			last := res.Sessions[len(res.Sessions)-1]
			res.NextCursor = encodeToken("l1.", listCursor{Updated: last.UpdatedAt, ID: last.ID, Query: req.Query, WorkingDir: req.WorkingDir})
			break
		}
		res.Sessions = append(res.Sessions, sessionOf(m))
	}
	return res, nil
}

type listCursor struct {
	Updated    time.Time `json:"u"`
	ID         string    `json:"i"`
	Query      string    `json:"q,omitempty"`
	WorkingDir string    `json:"w,omitempty"`
}

// listMetas returns the sessions q selects in newest-first order.
func (s *Service) listMetas(ctx context.Context, q storage.ListQuery) ([]storage.Meta, error) {
	q.WorkingDir = s.redact(q.WorkingDir) // stored working dirs went through the gate
	metas, err := s.store.List(ctx, q)
	if err != nil {
		return nil, mapStoreErr("", fmt.Errorf("list sessions: %w", err))
	}
	return metas, nil
}

func checkLimit(limit, def, max int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > max:
		return 0, invalidf(fmt.Sprintf("pass a limit from 1 to %d, or omit it for %d", max, def), "limit %d is out of range", limit)
	}
	return limit, nil
}

func sessionOf(m storage.Meta) Session {
	return Session{
		ID:              m.ID,
		Name:            m.Name,
		WorkingDir:      m.WorkingDir,
		Model:           m.Model,
		Provider:        m.Provider,
		ParentSessionID: m.ParentSession,
		CreatedAt:       m.Created.UTC(),
		UpdatedAt:       m.Updated.UTC(),
		MessageCount:    m.Messages,
		Compactions:     m.Compactions,
		ContextTokens:   m.ContextTokens,
		Preview:         m.Preview,
	}
}

// Get returns one session's metadata.
func (s *Service) Get(ctx context.Context, sessionID string) (Session, error) {
	if err := checkSessionID("session_id", sessionID); err != nil {
		return Session{}, err
	}
	m, err := s.store.Get(ctx, sessionID)
	if err != nil {
		return Session{}, mapStoreErr(sessionID, err)
	}
	return sessionOf(m), nil
}

// Delete removes a session.
func (s *Service) Delete(ctx context.Context, sessionID string) (DeleteResult, error) {
	if err := checkSessionID("session_id", sessionID); err != nil {
		return DeleteResult{}, err
	}
	if err := s.store.Delete(ctx, sessionID); err != nil {
		return DeleteResult{}, mapStoreErr(sessionID, err)
	}
	s.forget(sessionID)
	return DeleteResult{Deleted: true}, nil
}
