package memory

import (
	"context"
	"fmt"

	"github.com/sessionmem/sessionmem/storage"
)

// Fork copies the path root..from_id (default the leaf) into a new session whose
// parent_session_id is the source. Entry ids are kept, so ids seen in the source still name
// the same entries in the fork.
func (s *Service) Fork(ctx context.Context, req ForkRequest) (ForkResult, error) {
	if err := checkSessionID("session_id", req.SessionID); err != nil {
		return ForkResult{}, err
	}
	if req.FromID != "" && !validID(req.FromID) {
		return ForkResult{}, invalidf("pass an entry id (leaf_id, entry_id) or omit from_id to fork at the leaf", "from_id %q is not a valid id", clip(req.FromID, 80))
	}
	if err := checkMeta(req.Name, "", ""); err != nil {
		return ForkResult{}, err
	}
	p, err := s.readPath(ctx, req.SessionID, true)
	if err != nil {
		return ForkResult{}, err
	}
	entries := p.entries
	if req.FromID != "" {
		from := s.gateID(gateSalt(p.header), req.FromID) // entry ids are stored gated
		end := -1
		for i, e := range entries {
			if e.ID == from {
				end = i
				break
			}
		}
		if end < 0 {
			return ForkResult{}, notFoundf("pass an entry_id of the session's current path (see session_resume), or omit from_id",
				"from_id %q is not on the current path of session %s", req.FromID, req.SessionID)
		}
		entries = entries[:end+1]
	}
	src, err := s.store.Get(ctx, req.SessionID)
	if err != nil {
		return ForkResult{}, mapStoreErr(req.SessionID, err)
	}
	now := s.now()
	id := s.newSessionID()
	h := storage.Header{ID: id, Created: now, WorkingDir: p.header.WorkingDir, ParentSession: req.SessionID}
	if err := s.create(ctx, h, storage.Meta{ID: id, WorkingDir: h.WorkingDir, ParentSession: req.SessionID, Created: now, Updated: now}); err != nil {
		return ForkResult{}, mapStoreErr(id, fmt.Errorf("create fork: %w", err))
	}
	var res ForkResult
	err = s.update(ctx, id, func(w storage.Writer) error {
		st, err := s.current(id, w)
		if err != nil {
			return err
		}
		defer st.mu.Unlock()
		b := newBatch(st, "", now)
		for _, e := range entries {
			b.parent = e.ParentID
			b.add(e.Entry)
		}
		name := req.Name
		if name == "" && src.Name != "" {
			name = src.Name + " (fork)"
		}
		if name != "" {
			b.add(Entry{Type: KindSessionInfo, SessionInfo: &SessionInfo{Name: name}})
		}
		if src.Model != "" || src.Provider != "" {
			b.add(Entry{Type: KindModelChange, ModelChange: &ModelChange{Model: src.Model, Provider: src.Provider}})
		}
		if err := s.commit(w, st, b, now); err != nil {
			return err
		}
		res = ForkResult{SessionID: id, ParentSessionID: req.SessionID, MessageCount: st.messages}
		return nil
	})
	if err != nil {
		return ForkResult{}, mapStoreErr(id, err)
	}
	return res, nil
}
