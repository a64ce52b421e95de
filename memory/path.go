package memory

import (
	"context"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/storage"
)

// pathEntry is an entry read back from the log, with its seq and its message JSON as stored.
type pathEntry struct {
	Entry
	seq uint64
	raw []byte // the message JSON (block form) for message entries
}

// sessionPath is the part of a session a resume or compaction needs: the leaf's path from the
// first entry kept by its latest compaction (or from the root) to the leaf.
type sessionPath struct {
	header  storage.Header
	lastSeq uint64
	entries []*pathEntry // root-to-leaf order
	comp    int          // index of the latest compaction on the path, -1 if none
}

// readPath reads the leaf's path. Unless full is set it decodes only from the checkpoint the
// index records (the first entry kept by the newest compaction), so its cost does not grow
// with the history before that compaction; if the leaf's path turns out to reach further back
// (a branch made before that compaction), it falls back to reading everything.
func (s *Service) readPath(ctx context.Context, id string, full bool) (*sessionPath, error) {
	var p *sessionPath
	err := s.store.View(ctx, id, func(r storage.Reader) error {
		from := uint64(1)
		if !full {
			if m, err := s.store.Get(ctx, id); err == nil && m.Checkpoint > 0 && m.Checkpoint <= r.LastSeq() {
				from = m.Checkpoint
			}
		}
		var err error
		p, err = collectPath(r, from, full)
		if err == errNeedFull && from > 1 {
			p, err = collectPath(r, 1, full)
		}
		return err
	})
	if err != nil {
		return nil, mapStoreErr(id, err)
	}
	return p, nil
}

var errNeedFull = fmt.Errorf("path reaches before the checkpoint")

func collectPath(r storage.Reader, from uint64, full bool) (*sessionPath, error) {
	byID := map[string]*pathEntry{}
	leaf := ""
	for rec, err := range r.Records(from) {
		if err != nil {
			return nil, err
		}
		var e pathEntry
		var err error
		if e.Entry, err = decodeEntry(rec.Data); err != nil {
			return nil, fmt.Errorf("decode record %d: %w", rec.Seq, err)
		}
		e.seq = rec.Seq
		if e.Type == KindMessage {
			e.raw = []byte(gjson.GetBytes(rec.Data, "message").Raw)
		}
		byID[e.ID] = &e
		leaf = e.ID
	}
	p := &sessionPath{header: r.Header(), lastSeq: r.LastSeq(), comp: -1}
	var rev []*pathEntry
	stopAt := ""  // first kept id of the newest compaction: the walk ends there
	stop := false // the newest compaction kept nothing: the walk ends at it
	for cur := leaf; cur != "" && !stop; {
		e := byID[cur]
		if e == nil {
			return nil, errNeedFull
		}
		rev = append(rev, e)
		if e.Type == KindCompaction && p.comp < 0 {
			p.comp = len(rev) - 1 // index from the leaf; fixed after reversing
			if !full {
				stopAt = e.Compaction.FirstKeptID
				stop = stopAt == ""
			}
		}
		if stopAt != "" && cur == stopAt {
			break
		}
		cur = e.ParentID
	}
	p.entries = make([]*pathEntry, len(rev))
	for i, e := range rev {
		p.entries[len(rev)-1-i] = e
	}
	if p.comp >= 0 {
		p.comp = len(rev) - 1 - p.comp
	}
	return p, nil
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

// contextTokens estimates the context of a path: summary, kept and newer entries, calibrated by
// reported usage.
func (p *sessionPath) contextTokens() int {
	if p.comp < 0 {
		return compaction.ContextTokens(compactionEntries(p.entries))
	}
	es := []compaction.Entry{compactionEntry(p.entries[p.comp])}
	trustFrom := 1 // usage reported before the compaction counted the history it replaced
	for _, e := range p.context() {
		es = append(es, compactionEntry(e))
		if e.seq < p.entries[p.comp].seq {
			trustFrom = len(es)
		}
	}
	return compaction.ContextTokensFrom(es, trustFrom)
}

// outputMessage renders a context entry as a contract message, or false for entries that are
// not conversation (labels, renames, model changes).
func outputMessage(e *pathEntry) (Message, bool) {
	switch e.Type {
	case KindMessage:
		m := *e.Message
		m.EntryID = e.ID
		return m, true
	case KindBranchSummary:
		return Message{EntryID: e.ID, Role: RoleUser, Content: []Block{{Type: BlockText,
			Text: "The conversation went back to an earlier point; summary of the branch that was left:\n\n" + e.BranchSummary.Summary}}}, true
	}
	return Message{}, false
}
