package memory

import (
	"fmt"
	"iter"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/storage"
)

// node is what a session's state keeps of one entry: its place in the tree and its token
// weight, never its content, so a cached session costs about a hundred bytes per entry.
type node struct {
	id, parent string
	seq        uint64
	kind       string
	role       Role
	tokens     int    // estimated tokens of the entry as context
	usage      int    // input+output tokens an assistant message reported, 0 if none
	clientID   string // message id given by the client
	firstKept  string // compactions: first kept entry id ("" = nothing kept)
}

// state is a process's view of one session, rebuilt from the log and kept current by reading
// only what was appended since.
type state struct {
	header      storage.Header
	lastSeq     uint64
	nodes       map[string]*node
	client      map[string]string // client message id → entry id
	leaf        string
	messages    int
	compactions int
	preview     string
	name        string
	model       string
	provider    string
	checkpoint  uint64 // seq of the first entry a resume needs
	updated     time.Time
}

func newState(h storage.Header) *state {
	return &state{header: h, nodes: map[string]*node{}, client: map[string]string{}, updated: h.Created}
}

// apply adds one stored record to the state.
func (st *state) apply(rec storage.Record) error {
	data := rec.Data
	typ := gjson.GetBytes(data, "type").String()
	id := gjson.GetBytes(data, "id").String()
	if id == "" {
		return fmt.Errorf("record %d has no entry id", rec.Seq)
	}
	n := &node{id: id, parent: gjson.GetBytes(data, "parent_id").String(), seq: rec.Seq, kind: typ}
	if ts := gjson.GetBytes(data, "ts"); ts.Exists() {
		if t, err := time.Parse(time.RFC3339Nano, ts.String()); err == nil && t.After(st.updated) {
			st.updated = t
		}
	}
	switch typ {
	case KindMessage:
		msg := gjson.GetBytes(data, "message")
		n.role = Role(msg.Get("role").String())
		n.clientID = msg.Get("id").String()
		n.tokens = compaction.EstimateMessage([]byte(msg.Raw))
		if u := msg.Get("usage"); u.Exists() {
			n.usage = int(u.Get("input_tokens").Int() + u.Get("output_tokens").Int())
		}
		st.messages++
		if st.preview == "" && n.role == RoleUser {
			st.preview = previewOf(msg)
		}
	case KindCompaction:
		c := gjson.GetBytes(data, "compaction")
		n.firstKept = c.Get("first_kept_id").String()
		n.tokens = estimateText(c.Get("summary").String())
		n.clientID = c.Get("key").String()
		st.compactions++
		st.checkpoint = rec.Seq
		if k, ok := st.nodes[n.firstKept]; ok {
			st.checkpoint = k.seq
		}
	case KindBranchSummary:
		n.tokens = estimateText(gjson.GetBytes(data, "branch_summary.summary").String())
	case KindSessionInfo:
		st.name = gjson.GetBytes(data, "session_info.name").String()
	case KindModelChange:
		if m := gjson.GetBytes(data, "model_change.model").String(); m != "" {
			st.model = m
		}
		if p := gjson.GetBytes(data, "model_change.provider").String(); p != "" {
			st.provider = p
		}
	}
	if n.clientID != "" {
		st.client[n.clientID] = id
	}
	st.nodes[id] = n
	st.leaf = id
	st.lastSeq = rec.Seq
	return nil
}

// applyAll adds records in order.
func (st *state) applyAll(recs iter.Seq2[storage.Record, error]) error {
	for rec, err := range recs {
		if err != nil {
			return err
		}
		if err := st.apply(rec); err != nil {
			return err
		}
	}
	return nil
}

// meta renders the listing metadata.
func (st *state) meta(now time.Time) storage.Meta {
	return storage.Meta{
		ID:            st.header.ID,
		Name:          st.name,
		WorkingDir:    st.header.WorkingDir,
		Model:         st.model,
		Provider:      st.provider,
		ParentSession: st.header.ParentSession,
		Created:       st.header.Created,
		Updated:       now,
		Messages:      st.messages,
		Compactions:   st.compactions,
		ContextTokens: st.contextTokens(st.leaf),
		Preview:       st.preview,
		Leaf:          st.leaf,
		Checkpoint:    st.checkpoint,
		LastSeq:       st.lastSeq,
	}
}

// contextTokens estimates what a client sends to continue from leaf: the newest compaction's
// summary, the entries it kept, and everything after it. When an assistant message after the
// compaction reported usage, that figure replaces the estimate of everything up to it.
func (st *state) contextTokens(leaf string) int {
	var after []*node // newest first
	var comp *node
	for n := st.nodes[leaf]; n != nil; n = st.nodes[n.parent] {
		if n.kind == KindCompaction {
			comp = n
			break
		}
		after = append(after, n)
	}
	total := 0
	for i, n := range after {
		if n.usage > 0 {
			total = n.usage
			for _, m := range after[:i] {
				total += m.tokens
			}
			return total
		}
		total += n.tokens
	}
	if comp != nil {
		total += comp.tokens
		if comp.firstKept != "" {
			for k := st.nodes[comp.parent]; k != nil; k = st.nodes[k.parent] {
				total += k.tokens
				if k.id == comp.firstKept {
					break
				}
			}
		}
	}
	return total
}

// has reports whether an entry id is taken.
func (st *state) has(id string) bool { _, ok := st.nodes[id]; return ok }

// newEntryID returns an id not yet used in the session.
func (st *state) newEntryID(taken map[string]bool) string {
	for {
		id := newEntryID()
		if !st.has(id) && !taken[id] {
			return id
		}
	}
}

// estimateText is the chars/4 rule for plain text.
func estimateText(s string) int { return compaction.EstimateText(s) }

// previewOf returns a user message's first text as one line (runs of white space, newlines
// included, become one space), at most 200 bytes.
func previewOf(msg gjson.Result) string {
	var text string
	msg.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() == BlockText {
			if t := strings.TrimSpace(b.Get("text").String()); t != "" {
				text = t
				return false
			}
		}
		return true
	})
	return oneLine(text, 200)
}

// oneLine collapses whitespace runs (newlines included) and cuts s to at most n bytes on a rune
// boundary.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Summarize recomputes a session's listing metadata from its log: pass it as
// local.Options.Summarize so an index rebuilt or reconciled at Open carries the same counts
// a Service maintains.
func Summarize(h storage.Header, recs iter.Seq2[storage.Record, error]) (storage.Meta, error) {
	st := newState(h)
	if err := st.applyAll(recs); err != nil {
		return storage.Meta{}, err
	}
	return st.meta(st.updated), nil
}
