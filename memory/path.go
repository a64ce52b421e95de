package memory

import (
	"context"
	"fmt"
	"sort"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/storage"
)

// pathView is a snapshot of part of the leaf's path: the entries from a start entry to the
// leaf, oldest first, taken from the state under its lock. Nodes never change once applied,
// so the view may be read after the lock is released.
type pathView struct {
	nodes     []node
	leaf      int32
	ctxTokens int   // the session's context tokens
	est       int   // the same by characters alone (node.est)
	pinTok    int   // context tokens of the pinned messages on the path
	comp      int32 // the newest compaction on the path, -1 if none
	linear    bool
	lo        int32   // linear: the entries are nodes[lo..leaf]
	idx       []int32 // branched: the entries' indexes, ascending
}

func (v *pathView) len() int {
	if v.linear {
		return int(v.leaf - v.lo + 1)
	}
	return len(v.idx)
}

// at returns the index (in nodes) of the p-th entry.
func (v *pathView) at(p int) int32 {
	if v.linear {
		return v.lo + int32(p)
	}
	return v.idx[p]
}

// find returns the position of entry i in the view.
func (v *pathView) find(i int32) (int, bool) {
	if v.linear {
		if i < v.lo || i > v.leaf {
			return 0, false
		}
		return int(i - v.lo), true
	}
	p := sort.Search(len(v.idx), func(p int) bool { return v.idx[p] >= i })
	return p, p < len(v.idx) && v.idx[p] == i
}

// view returns the path from entry `from` (the leaf's ancestor or the leaf itself; -1 for
// the root) to the leaf. The caller holds st.mu.
func (st *state) pathFrom(from int32) *pathView {
	v := &pathView{nodes: st.nodes[:len(st.nodes):len(st.nodes)], leaf: st.leafIdx, comp: -1, linear: st.linear}
	if st.leafIdx < 0 {
		v.linear, v.lo = true, 0
		return v
	}
	v.ctxTokens, v.est, v.pinTok = st.nodes[st.leafIdx].ctxTokens, st.nodes[st.leafIdx].est, st.nodes[st.leafIdx].pinTok
	v.comp = st.nodes[st.leafIdx].comp
	if from < 0 {
		from = 0
		if !st.linear {
			from = -1
		}
	}
	if st.linear {
		v.lo = from
		return v
	}
	path := st.pathOf()
	if from >= 0 {
		path = path[sort.Search(len(path), func(p int) bool { return path[p] >= from }):]
	}
	v.idx = path
	return v
}

// pathOf returns the current path of a branched session, root first, caching it: a save that
// continues from the cached leaf extends it instead of walking again. The caller holds st.mu.
func (st *state) pathOf() []int32 {
	leaf := st.leafIdx
	if n := len(st.path); n > 0 && st.path[n-1] == leaf {
		return st.path
	}
	if n := len(st.path); n > 0 && st.nodes[leaf].parent == st.path[n-1] {
		st.path = append(st.path, leaf)
		return st.path
	}
	var rev []int32
	for i := leaf; i >= 0; i = st.nodes[i].parent {
		rev = append(rev, i)
	}
	path := make([]int32, len(rev))
	for k, i := range rev {
		path[len(rev)-1-k] = i
	}
	st.path = path
	return path
}

// contextView returns the entries a client continues from: those the newest compaction kept
// and everything after it (the compactions among them return no message), or the whole path.
func (st *state) contextView() *pathView {
	from := int32(-1)
	if st.leafIdx >= 0 {
		if c := st.nodes[st.leafIdx].comp; c >= 0 {
			from = st.nodes[c].firstKept
			if from < 0 {
				from = c
			}
		}
	}
	return st.pathFrom(from)
}

// reseekGap is how many records off the path a reader skips before it seeks instead.
const reseekGap = 64

// each calls fn with the records of the view's entries from position from on, in order, until
// fn returns false or an error. It seeks to the first and, on a branched path, again past long
// runs of records that are not on it, so it decodes what it passes plus about a frame per seek.
func (v *pathView) each(r storage.Reader, from int, fn func(p int, rec storage.Record) (bool, error)) error {
	missing := func(p int) error {
		return fmt.Errorf("record %d missing from the log: %w", v.at(p)+1, storage.ErrCorrupt)
	}
	for p := from; p < v.len(); {
		reseek := false
		for rec, err := range r.Records(uint64(v.at(p)) + 1) {
			if err != nil {
				return err
			}
			want := uint64(v.at(p)) + 1
			if rec.Seq < want {
				if want-rec.Seq > reseekGap {
					reseek = true
					break
				}
				continue
			}
			if rec.Seq > want {
				return missing(p)
			}
			more, err := fn(p, rec)
			if err != nil || !more {
				return err
			}
			if p++; p == v.len() {
				return nil
			}
		}
		if !reseek {
			return missing(p)
		}
	}
	return nil
}

// pathEntry is an entry read back from the log, with its seq and its message JSON as stored.
type pathEntry struct {
	Entry
	seq uint64
	raw []byte // the message JSON (block form) for message entries
}

// sessionPath is the part of a session a compaction, a fork or an export needs: the leaf's
// path from the first entry kept by its latest compaction (or from the root) to the leaf.
type sessionPath struct {
	header    storage.Header
	lastSeq   uint64
	entries   []*pathEntry // root-to-leaf order
	comp      int          // index of the latest compaction on the path, -1 if none
	ctxTokens int          // the session's context tokens
	est       int          // the same estimated by characters alone
	pinTok    int          // context tokens of the pinned messages on the path
	window    int          // the context window the latest save gave, 0 if not known
}

// readPath reads the leaf's path: from the root if full is set, else from the first entry the
// newest compaction kept (or that compaction, if it kept nothing). Only the path's records are
// decoded.
func (s *Service) readPath(ctx context.Context, id string, full bool) (*sessionPath, error) {
	var p *sessionPath
	err := s.store.View(ctx, id, func(r storage.Reader) error {
		st, err := s.current(id, r)
		if err != nil {
			return err
		}
		var v *pathView
		if full {
			v = st.pathFrom(-1)
		} else {
			v = st.contextView()
		}
		window := st.window
		st.mu.Unlock()
		p = &sessionPath{header: r.Header(), lastSeq: r.LastSeq(), comp: -1, ctxTokens: v.ctxTokens, est: v.est, pinTok: v.pinTok, window: window}
		p.entries = make([]*pathEntry, 0, v.len())
		return v.each(r, 0, func(_ int, rec storage.Record) (bool, error) {
			e, err := readEntry(rec)
			if err != nil {
				return false, err
			}
			if e.Type == KindCompaction {
				p.comp = len(p.entries)
			}
			p.entries = append(p.entries, e)
			return true, nil
		})
	})
	if err != nil {
		return nil, mapStoreErr(id, err)
	}
	return p, nil
}

// readEntry decodes one record.
func readEntry(rec storage.Record) (*pathEntry, error) {
	e := &pathEntry{seq: rec.Seq}
	var raw string
	var err error
	if e.Entry, raw, err = decodeRecord(rec.Data); err != nil {
		return nil, fmt.Errorf("decode record %d: %w", rec.Seq, err)
	}
	if e.Type == KindMessage {
		e.raw = []byte(raw)
	}
	return e, nil
}

// compaction returns the newest compaction on the path, nil if none.
func (p *sessionPath) compaction() *Compaction {
	if p.comp < 0 {
		return nil
	}
	return p.entries[p.comp].Compaction
}

// context returns the entries a client continues from: those kept by the newest compaction and
// everything after it (the compaction itself excluded).
func (p *sessionPath) context() []*pathEntry {
	if p.comp < 0 {
		return p.entries
	}
	c := p.entries[p.comp].Compaction
	var out []*pathEntry
	inKept := false
	for i, e := range p.entries {
		if i == p.comp {
			inKept = false
			continue
		}
		if c.FirstKeptID != "" && e.ID == c.FirstKeptID {
			inKept = true
		}
		if i > p.comp || inKept {
			out = append(out, e)
		}
	}
	return out
}

// compactionEntries converts path entries for package compaction.
func compactionEntries(es []*pathEntry) []compaction.Entry {
	out := make([]compaction.Entry, 0, len(es))
	for _, e := range es {
		out = append(out, compactionEntry(e))
	}
	return out
}

func compactionEntry(e *pathEntry) compaction.Entry {
	switch e.Type {
	case KindMessage:
		return compaction.Entry{ID: e.ID, Kind: compaction.KindMessage, Message: e.raw}
	case KindCompaction:
		return compaction.Entry{ID: e.ID, Kind: compaction.KindCompaction, Summary: e.Compaction.Summary}
	case KindBranchSummary:
		return compaction.Entry{ID: e.ID, Kind: compaction.KindBranchSummary, Summary: e.BranchSummary.Summary}
	}
	return compaction.Entry{ID: e.ID, Kind: compaction.KindOther}
}

// contextTokens is the session's context estimate (state.contextTokens) when the path was read.
func (p *sessionPath) contextTokens() int { return p.ctxTokens }

// outputMessage renders a context entry as a contract message, or false for entries that are
// not conversation (compactions, labels, renames, model changes).
func outputMessage(e *pathEntry) (Message, bool) {
	switch e.Type {
	case KindMessage:
		m := *e.Message
		m.EntryID = e.ID
		return m, true
	case KindBranchSummary:
		return Message{EntryID: e.ID, Role: RoleUser, Content: []Block{{Type: BlockText,
			Text: branchSummaryIntro + e.BranchSummary.Summary}}}, true
	}
	return Message{}, false
}
