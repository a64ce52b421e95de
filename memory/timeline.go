package memory

import (
	"context"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// Timeline paging limits.
const (
	DefaultTimelineLimit = 50
	MaxTimelineLimit     = 500
	// DefaultTimelineTokens bounds a page by the entries' estimated tokens (as context), so
	// a page of huge tool outputs stays small; a page always holds at least one entry.
	DefaultTimelineTokens = 50000
)

// TimelineRequest asks for a page of a session's whole current path, compacted parts
// included: what a person reading the session sees, oldest first. At most one of Before,
// After and Around names an entry of the current path; with none the page ends at the leaf
// (the newest entries).
type TimelineRequest struct {
	SessionID string
	// Before asks for the entries just before this one, After for those just after it,
	// Around for a page that holds it in its middle.
	Before, After, Around string
	// Limit is 1..MaxTimelineLimit entries (0: DefaultTimelineLimit); MaxTokens bounds the
	// page's estimated tokens (0: DefaultTimelineTokens).
	Limit, MaxTokens int
}

// TimelineEntry is one entry of the timeline: a message, a compaction (with its summary,
// file lists and facts) or the summary of a branch that was left. Renames, labels and model
// changes are not listed.
type TimelineEntry struct {
	EntryID string    `json:"entry_id"`
	Kind    string    `json:"kind"`
	Time    time.Time `json:"time"`
	// Position is the entry's place on the current path, 0 for the root; positions of
	// listed entries grow but may skip the entries that are not listed.
	Position      int            `json:"position"`
	Message       *Message       `json:"message,omitempty"`
	Compaction    *Compaction    `json:"compaction,omitempty"`
	BranchSummary *BranchSummary `json:"branch_summary,omitempty"`
}

// TimelineResult is one page of a timeline.
type TimelineResult struct {
	SessionID string          `json:"session_id"`
	Entries   []TimelineEntry `json:"entries"`
	// More entries precede (HasBefore) or follow (HasAfter) the page on the current path:
	// ask again with Before the first entry's id or After the last one's.
	HasBefore bool `json:"has_before"`
	HasAfter  bool `json:"has_after"`
	// Length is the number of entries on the current path, listed or not; Leaf is the
	// newest one's id ("" for an empty session).
	Length int    `json:"length"`
	Leaf   string `json:"leaf"`
}

// listed reports whether the timeline shows entries of kind k.
func listed(k string) bool {
	return k == KindMessage || k == KindCompaction || k == KindBranchSummary
}

// Timeline returns a page of the session's current path (see TimelineRequest). A page reads
// only its own records: the cached state says which entries are on the path and how large
// they are, and the store seeks to the first.
func (s *Service) Timeline(ctx context.Context, req TimelineRequest) (TimelineResult, error) {
	if err := checkSessionID("session_id", req.SessionID); err != nil {
		return TimelineResult{}, err
	}
	limit, err := checkLimit(req.Limit, DefaultTimelineLimit, MaxTimelineLimit)
	if err != nil {
		return TimelineResult{}, err
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultTimelineTokens
	}
	anchors := 0
	for _, a := range []string{req.Before, req.After, req.Around} {
		if a != "" {
			anchors++
			if err := checkSessionID("entry id", a); err != nil {
				return TimelineResult{}, err
			}
		}
	}
	if anchors > 1 {
		return TimelineResult{}, invalidf("pass at most one of before, after and around", "more than one anchor entry given")
	}
	id := req.SessionID
	var res TimelineResult
	err = s.store.View(ctx, id, func(r storage.Reader) error {
		st, err := s.current(id, r)
		if err != nil {
			return err
		}
		v := st.pathFrom(-1)
		lo, hi, err := timelineWindow(st, v, req, limit, maxTokens)
		st.mu.Unlock()
		if err != nil {
			return err
		}
		res = TimelineResult{SessionID: id, Entries: []TimelineEntry{}, Length: v.len()}
		if v.leaf >= 0 {
			res.Leaf = v.nodes[v.leaf].id
		}
		res.HasBefore = hasListed(v, 0, lo)
		res.HasAfter = hasListed(v, hi, v.len())
		if lo >= hi {
			return nil
		}
		return v.each(r, lo, func(p int, rec storage.Record) (bool, error) {
			if p >= hi {
				return false, nil
			}
			if !listed(v.nodes[v.at(p)].kind) {
				return true, nil
			}
			e, err := readEntry(rec)
			if err != nil {
				return false, err
			}
			res.Entries = append(res.Entries, TimelineEntry{EntryID: e.ID, Kind: e.Type, Time: e.Time, Position: p,
				Message: e.Message, Compaction: e.Compaction, BranchSummary: e.BranchSummary})
			return p+1 < hi, nil
		})
	})
	if err != nil {
		return TimelineResult{}, mapStoreErr(id, err)
	}
	return res, nil
}

// timelineWindow chooses the page: positions [lo, hi) of v holding at most limit listed
// entries and, beyond the first, at most maxTokens. The caller holds st.mu.
func timelineWindow(st *state, v *pathView, req TimelineRequest, limit, maxTokens int) (lo, hi int, err error) {
	n := v.len()
	anchor := func(eid string) (int, error) {
		i, ok := st.ids[eid]
		p, on := 0, false
		if ok {
			p, on = v.find(i)
		}
		if !on || !listed(st.nodes[i].kind) {
			return 0, notFoundf("open the session again from its newest entries",
				"entry %q is not on session %s's current path", clip(eid, 80), req.SessionID)
		}
		return p, nil
	}
	// grow widens [lo, hi) by one listed entry forward (dir 1) or backward (-1), reporting
	// false when there is none or the page is full.
	count, tokens := 0, 0
	grow := func(dir int) bool {
		for {
			var p int
			if dir > 0 {
				if hi >= n {
					return false
				}
				p = hi
			} else {
				if lo <= 0 {
					return false
				}
				p = lo - 1
			}
			nd := &v.nodes[v.at(p)]
			if listed(nd.kind) {
				if count >= limit || count > 0 && tokens+nd.tokens > maxTokens {
					return false
				}
				count++
				tokens += nd.tokens
			}
			if dir > 0 {
				hi++
			} else {
				lo--
			}
			if listed(nd.kind) {
				return true
			}
		}
	}
	switch {
	case req.After != "":
		p, err := anchor(req.After)
		if err != nil {
			return 0, 0, err
		}
		lo, hi = p+1, p+1
		for grow(1) {
		}
	case req.Before != "":
		p, err := anchor(req.Before)
		if err != nil {
			return 0, 0, err
		}
		lo, hi = p, p
		for grow(-1) {
		}
	case req.Around != "":
		p, err := anchor(req.Around)
		if err != nil {
			return 0, 0, err
		}
		lo, hi = p, p
		grow(1)
		// Alternate, so the anchor sits in the middle; once one side ends the other fills.
		for back, fwd := true, true; back || fwd; {
			if back {
				back = grow(-1)
			}
			if fwd {
				fwd = grow(1)
			}
		}
	default:
		lo, hi = n, n
		for grow(-1) {
		}
	}
	return lo, hi, nil
}

// hasListed reports whether positions [from, to) of v hold a listed entry.
func hasListed(v *pathView, from, to int) bool {
	for p := from; p < to; p++ {
		if listed(v.nodes[v.at(p)].kind) {
			return true
		}
	}
	return false
}
