package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// DefaultRetentionProtect is how recently a session must have been updated to count as in use,
// when a policy does not say.
const DefaultRetentionProtect = time.Hour

// RetentionPolicy limits what a store keeps. Zero fields mean no limit.
type RetentionPolicy struct {
	// MaxSessions keeps at most this many sessions, the most recently updated ones.
	MaxSessions int
	// MaxAge deletes sessions not updated for longer than this.
	MaxAge time.Duration
	// Protect: sessions updated within this window count as in use and are never deleted,
	// whatever the limits say (default DefaultRetentionProtect). A session another process
	// is writing at that moment is skipped as well.
	Protect time.Duration
	// DryRun reports what would be deleted without deleting.
	DryRun bool
}

// Enabled reports whether the policy limits anything.
func (p RetentionPolicy) Enabled() bool { return p.MaxSessions > 0 || p.MaxAge > 0 }

// RetentionResult says what a retention pass did.
type RetentionResult struct {
	Deleted []string // deleted (or, in a dry run, to be deleted)
	InUse   []string // over a limit but in use, so kept
	Kept    int
}

// lockWait is how long retention waits for a session's lock before deciding another process is
// using it.
const lockWait = 50 * time.Millisecond

// ApplyRetention deletes the sessions the policy no longer allows, oldest first, never touching
// a session in use.
func (s *Service) ApplyRetention(ctx context.Context, p RetentionPolicy) (RetentionResult, error) {
	if p.MaxSessions < 0 || p.MaxAge < 0 || p.Protect < 0 {
		return RetentionResult{}, invalidf("use positive limits, or zero for none", "retention limits must not be negative")
	}
	if p.Protect == 0 {
		p.Protect = DefaultRetentionProtect
	}
	var res RetentionResult
	if !p.Enabled() {
		return res, nil
	}
	metas, err := s.listMetas(ctx, storage.ListQuery{})
	if err != nil {
		return res, err
	}
	now := s.now()
	for i, m := range metas { // newest first
		over := (p.MaxSessions > 0 && i >= p.MaxSessions) || (p.MaxAge > 0 && now.Sub(m.Updated) > p.MaxAge)
		if !over {
			res.Kept++
			continue
		}
		if now.Sub(m.Updated) < p.Protect {
			res.InUse = append(res.InUse, m.ID)
			res.Kept++
			continue
		}
		if p.DryRun {
			res.Deleted = append(res.Deleted, m.ID)
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, lockWait)
		err := s.store.Delete(lctx, m.ID)
		cancel()
		switch {
		case err == nil:
			s.forget(m.ID)
			res.Deleted = append(res.Deleted, m.ID)
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			res.InUse = append(res.InUse, m.ID)
			res.Kept++
		case isNotFound(err):
			// Deleted by someone else meanwhile.
		default:
			return res, fmt.Errorf("retention: delete %s: %w", m.ID, err)
		}
	}
	return res, nil
}
