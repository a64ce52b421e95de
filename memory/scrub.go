package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/storage"
)

// ErrCannotRewrite is returned by RedactStored when the store cannot rewrite sessions in
// place (it does not implement storage.Rewriter).
var ErrCannotRewrite = errors.New("this store cannot rewrite sessions in place")

// errDryRun aborts a rewrite that was only meant to find out whether one is needed.
var errDryRun = errors.New("dry run")

// RedactStored passes everything session id already holds through today's gate and, when
// that changes anything, rewrites the session in place (storage.Rewriter), so that nothing
// an older sessionmem (or older rules) let through stays on disk: names of every rename,
// model changes, message text and ids, summaries, file lists, the header's working_dir.
// With dryRun it only reports whether a rewrite is needed.
//
// Ids are mapped the way the gate maps them on every call (stand-ins salted with the
// session), so links between records and later lookups keep working. A session id holding
// a secret cannot be changed (it names the session's files); such a session is reported
// with an error and left as it is.
func (s *Service) RedactStored(ctx context.Context, id string, dryRun bool) (bool, error) {
	rw, ok := s.store.(storage.Rewriter)
	if !ok {
		return false, ErrCannotRewrite
	}
	if s.opts.Redact == nil {
		return false, nil
	}
	old, err := s.store.Get(ctx, id)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return false, mapStoreErr(id, err)
	}
	found := false
	changed, err := rw.Rewrite(ctx, id, func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		nh := h
		hv, hch, err := s.walk("", reflect.ValueOf(h), gateText)
		if err != nil {
			return h, nil, storage.Meta{}, err
		}
		if hch {
			nh = hv.Interface().(storage.Header)
		}
		found = hch
		data := make([][]byte, len(recs))
		st := newState(nh)
		for i, rec := range recs {
			out, err := s.redactRecord(h, rec.Data)
			if err != nil {
				return h, nil, storage.Meta{}, fmt.Errorf("record %d: %w", rec.Seq, err)
			}
			view := rec
			if out != nil {
				data[i], found = out, true
				view.Data = out
			}
			if err := st.apply(view); err != nil {
				return h, nil, storage.Meta{}, err
			}
		}
		if dryRun {
			return h, nil, storage.Meta{}, errDryRun
		}
		updated := st.updated
		if old.Updated.After(updated) {
			updated = old.Updated
		}
		m, err := s.gateMeta(gateSalt(nh), st.meta(updated))
		return nh, data, m, err
	})
	if errors.Is(err, errDryRun) {
		return found, nil
	}
	s.forget(id)
	if err != nil {
		return false, mapStoreErr(id, err)
	}
	return changed, nil
}

// redactRecord returns a stored record's data as the gate would store it now, or nil when
// the gate changes nothing. Entries of a kind this version does not know are redacted as
// plain JSON (every string and key), since their fields have no known classes.
func (s *Service) redactRecord(h storage.Header, data []byte) ([]byte, error) {
	e, err := decodeEntry(data)
	if err != nil {
		return nil, err
	}
	switch e.Type {
	case KindMessage, KindCompaction, KindBranchSummary, KindLabel, KindSessionInfo, KindModelChange:
		v, changed, err := s.walk(gateSalt(h), reflect.ValueOf(e), gateText)
		if err != nil || !changed {
			return nil, err
		}
		return encodeEntry(v.Interface().(Entry))
	}
	var obj map[string]any
	r := gjson.ParseBytes(data)
	raw := []byte(r.Raw)
	out := s.redactJSON(raw)
	if string(out) == string(raw) {
		return nil, nil
	}
	if err := json.Unmarshal(out, &obj); err != nil {
		return nil, err
	}
	delete(obj, "seq")
	return message.MarshalNoEscape(obj)
}

// RedactReport says what RedactStore did (or, in a dry run, would do).
type RedactReport struct {
	Sessions int              // sessions looked at
	Changed  []string         // sessions rewritten (or needing it)
	Failed   map[string]error // sessions that could not be read or rewritten
}

// RedactStore runs RedactStored on every session, then drops the superseded copies of the
// listing metadata (storage.Rewriter.CompactMeta), so that a rename's old name, kept in
// older index lines, goes too. each, if set, is told about every session as it is done.
func (s *Service) RedactStore(ctx context.Context, dryRun bool, each func(id string, changed bool, err error)) (RedactReport, error) {
	rw, ok := s.store.(storage.Rewriter)
	if !ok {
		return RedactReport{}, ErrCannotRewrite
	}
	ids, err := s.store.IDs(ctx)
	if err != nil {
		return RedactReport{}, fmt.Errorf("list sessions: %w", err)
	}
	rep := RedactReport{Failed: map[string]error{}}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Sessions++
		changed, err := s.RedactStored(ctx, id, dryRun)
		switch {
		case err != nil:
			rep.Failed[id] = err
		case changed:
			rep.Changed = append(rep.Changed, id)
		}
		if each != nil {
			each(id, changed, err)
		}
	}
	// Old index lines can only hold what the sessions held: with no session changed, they
	// hold nothing to remove.
	if !dryRun && len(rep.Changed) > 0 {
		if err := rw.CompactMeta(ctx); err != nil {
			return rep, fmt.Errorf("compact the listing metadata: %w", err)
		}
	}
	return rep, nil
}
