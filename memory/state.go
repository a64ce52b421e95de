package memory

import (
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/storage"
)

// node is what a session's state keeps of one entry: its place in the tree, its token weight
// and running totals along its path, never its content, so a cached session costs about a
// hundred bytes per entry.
//
// The totals make every figure a save or a resume page needs a look-up instead of a walk:
// each node holds what the session would report if that entry were its leaf. A new entry's
// totals follow from its parent's, so applying a record costs O(1) whatever the session's
// length (a compaction also walks the entries it keeps, once).
type node struct {
	id       string
	clientID string // message id given by the client, or an imported compaction's key
	kind     string
	role     Role
	parent   int32 // index of the parent entry in state.nodes, -1 for a root
	// firstKept is, for a compaction, the index of the first entry it keeps when that entry
	// is on the compaction's path; -1 when it keeps nothing.
	firstKept int32
	tokens    int // estimated tokens of the entry as context
	usage     int // input+output tokens an assistant message reported, 0 if none

	// Totals along the path from the root to this entry.
	ctxTokens int   // context tokens with this entry as the leaf (see contextTokens)
	est       int   // the same context estimated by characters alone, no usage (see calibration)
	msgs      int   // message entries on the path
	out       int   // tokens of the conversation resume returns: messages and branch summaries
	comp      int32 // the newest compaction on the path (this entry included), -1 if none

	// Pinned messages (contract v2): pin is the nearest pinned message on the path, this
	// entry included (-1 if none), so the pinned messages before any entry are a walk over
	// those alone (see pinnedBefore); pinTok is their tokens, this entry's included.
	pinned bool
	pin    int32
	pinTok int
}

// state is a process's view of one session, built from the log once and kept current by
// applying only what was appended since. Entries are kept in log order: a session's records
// are numbered 1, 2, 3... without gaps, so the entry with seq q is nodes[q-1].
//
// mu guards everything; a caller holds it while it reads or applies. Applied nodes are
// never changed again and nodes only grows, so a slice taken under mu may be read after
// mu is released (see contextView).
type state struct {
	mu          sync.Mutex
	header      storage.Header
	lastSeq     uint64
	nodes       []node
	ids         map[string]int32  // entry id → index
	client      map[string]string // client message id (or compaction key) → entry id
	leaf        string
	leafIdx     int32
	linear      bool // every entry's parent is the entry before it: the path is the whole log
	messages    int  // messages on the current path
	compactions int
	preview     string
	name        string
	model       string
	provider    string
	checkpoint  uint64 // seq of the first entry a resume needs
	updated     time.Time
	// pinnedCost is what all pinned messages of the session (every branch) weigh against
	// MaxPinnedTokens, in the contract's measure: the JSON resume returns, divided by 4.
	pinnedCost int
	// window is the context window the latest session_save in this process gave (0: not
	// known), which compaction uses to keep the kept part under the compaction threshold.
	window int

	// path caches the current path of a branched session (see pathOf); comps caches decoded
	// compactions by index, for resume's first page.
	path  []int32
	comps map[int32]*Compaction

	// gen is the store's generation of the content the state was built from (see
	// storage.Snapshots; "" when the store keeps no snapshots): a rewrite by another process
	// changes it, and the state is built again. snapSeq is the last record the newest
	// snapshot this process wrote or read covers.
	gen     string
	snapSeq uint64

	// logBytes is the size of the records applied (their JSON): what building the state from
	// the log would read, which decides whether a snapshot is worth keeping.
	logBytes int64
}

func newState(h storage.Header) *state {
	return &state{header: h, ids: map[string]int32{}, client: map[string]string{}, leafIdx: -1, linear: true,
		updated: h.Created}
}

// branchSummaryIntro starts the text a branch summary is returned as (see outputMessage).
const branchSummaryIntro = "The conversation went back to an earlier point; summary of the branch that was left:\n\n"

// apply adds one stored record to the state.
func (st *state) apply(rec storage.Record) error {
	i := int32(len(st.nodes))
	if rec.Seq != uint64(i)+1 {
		return fmt.Errorf("record %d follows record %d", rec.Seq, i)
	}
	// A view, not a copy: the strings kept below are cloned.
	data := unsafe.String(unsafe.SliceData(rec.Data), len(rec.Data))
	var typ, id, parent, ts string
	var body gjson.Result
	gjson.Parse(data).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = v.Str
		case "id":
			id = v.Str
		case "parent_id":
			parent = v.Str
		case "ts":
			ts = v.Str
		case KindMessage, KindCompaction, KindBranchSummary, KindSessionInfo, KindModelChange:
			body = v
		}
		return true
	})
	if id == "" {
		return fmt.Errorf("record %d has no entry id", rec.Seq)
	}
	n := node{id: strings.Clone(id), kind: kindName(typ), parent: -1, firstKept: -1, comp: -1, pin: -1}
	if p, ok := st.ids[parent]; ok && parent != "" {
		n.parent = p
	}
	if ts != "" {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil && t.After(st.updated) {
			st.updated = t
		}
	}
	outTokens := 0
	switch n.kind {
	case KindMessage:
		outTokens = st.applyMessage(&n, body)
	case KindCompaction:
		n.tokens = estimateText(body.Get("summary").Str)
		n.clientID = strings.Clone(body.Get("key").Str)
		if k, ok := st.ids[body.Get("first_kept_id").Str]; ok && st.onPathIdx(n.parent, k) {
			n.firstKept = k
		}
		st.compactions++
		st.checkpoint = rec.Seq
		if n.firstKept >= 0 {
			st.checkpoint = uint64(n.firstKept) + 1
		}
	case KindBranchSummary:
		summary := body.Get("summary").Str
		n.tokens = estimateText(summary)
		outTokens = compaction.EstimateText(branchSummaryIntro + summary)
	case KindSessionInfo:
		st.name = strings.Clone(body.Get("name").Str)
	case KindModelChange:
		if m := body.Get("model").Str; m != "" {
			st.model = strings.Clone(m)
		}
		if p := body.Get("provider").Str; p != "" {
			st.provider = strings.Clone(p)
		}
	}
	st.totals(&n, i, outTokens)
	if n.clientID != "" {
		st.client[n.clientID] = n.id
	}
	st.linear = st.linear && n.parent == i-1
	st.ids[n.id] = i
	st.nodes = append(st.nodes, n)
	st.leaf, st.leafIdx = n.id, i
	st.messages = n.msgs
	st.lastSeq = rec.Seq
	st.logBytes += int64(len(rec.Data))
	return nil
}

// applyMessage fills n, a message entry, from its stored message, and returns what it adds to
// the conversation resume returns.
func (st *state) applyMessage(n *node, body gjson.Result) int {
	// One pass over the message's keys: usage and pinned follow the content, which a
	// lookup per key would skip over again each time.
	body.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "role":
			n.role = roleName(v.Str)
		case "id":
			n.clientID = strings.Clone(v.Str)
		case "usage":
			n.usage = int(v.Get("input_tokens").Int() + v.Get("output_tokens").Int())
		case "pinned":
			n.pinned = v.Bool()
		}
		return true
	})
	raw := unsafe.Slice(unsafe.StringData(body.Raw), len(body.Raw))
	n.tokens = compaction.EstimateMessage(raw)
	if n.pinned {
		st.pinnedCost += pinCost(raw, n.id)
	}
	if st.preview == "" && n.role == RoleUser {
		st.preview = previewOf(body)
	}
	return n.tokens
}

// totals fills n's running totals along its path from its parent's (n becomes entry i;
// outTokens is what it adds to the conversation resume returns). Only entries before i are
// read, so a snapshot's decoding (snapshot.go) derives the totals the same way.
func (st *state) totals(n *node, i int32, outTokens int) {
	ctxBefore, estBefore := 0, 0
	n.msgs, n.out, n.comp, n.pin, n.pinTok = 0, 0, -1, -1, 0
	if n.parent >= 0 {
		p := &st.nodes[n.parent]
		n.msgs, n.out, n.comp, ctxBefore, estBefore = p.msgs, p.out, p.comp, p.ctxTokens, p.est
		n.pin, n.pinTok = p.pin, p.pinTok
	}
	if n.kind == KindMessage {
		n.msgs++
	}
	if n.pinned {
		n.pin, n.pinTok = i, n.pinTok+n.tokens
	}
	n.out += outTokens
	switch {
	case n.kind == KindCompaction:
		n.comp = i
		n.ctxTokens = st.compactionContext(n.parent, n.firstKept, n.tokens)
		n.est = n.ctxTokens
	case n.usage > 0:
		n.ctxTokens = n.usage
		n.est = estBefore + n.tokens
	default:
		n.ctxTokens = ctxBefore + n.tokens
		n.est = estBefore + n.tokens
	}
}

// kindName and roleName return the package's constant for a stored name, so that nodes share
// one copy of each instead of pointing into record buffers.
func kindName(s string) string {
	for _, k := range []string{KindMessage, KindCompaction, KindBranchSummary, KindLabel, KindSessionInfo, KindModelChange} {
		if s == k {
			return k
		}
	}
	return strings.Clone(s)
}

func roleName(s string) Role { return message.RoleName(s) }

// onPathIdx reports whether entry k is entry i or one of its ancestors.
func (st *state) onPathIdx(i, k int32) bool {
	for ; i >= k && i >= 0; i = st.nodes[i].parent {
		if i == k {
			return true
		}
	}
	return false
}

// keptTokensIdx sums the tokens of the entries from first (an ancestor of last, or last
// itself) to last along the path, earlier compactions left out (the new summary replaces
// theirs); 0 when first is -1. Compactions are rare and keep a recent window, so this walk
// stays short.
func (st *state) keptTokensIdx(last, first int32) int {
	if first < 0 {
		return 0
	}
	total := 0
	for i := last; i >= first && i >= 0; i = st.nodes[i].parent {
		if st.nodes[i].kind != KindCompaction {
			total += st.nodes[i].tokens
		}
	}
	return total
}

// compactionContext is the context a compaction of summary tokens leaves when it is appended
// under parent keeping the path from firstKept on (-1: nothing): the summary, the pinned
// messages before the kept part (resume returns them in pinned), and the kept entries.
func (st *state) compactionContext(parent, firstKept int32, summary int) int {
	return summary + st.pinnedTokensBefore(parent, firstKept) + st.keptTokensIdx(parent, firstKept)
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
		ContextTokens: st.contextTokens(),
		Preview:       st.preview,
		Leaf:          st.leaf,
		Checkpoint:    st.checkpoint,
		LastSeq:       st.lastSeq,
	}
}

// contextTokens estimates what a client sends to continue from the leaf: the newest
// compaction's summary, the entries it kept, and everything after it. When an assistant
// message after the compaction reported usage, that figure replaces the estimate of
// everything up to it. This is the one definition of a session's context tokens: saves,
// listings and resume all report it.
//
// As a recurrence over the path (node.ctxTokens): a compaction counts its summary plus the entries
// it keeps; an entry that reports usage counts that usage; any other entry adds its own
// estimate to its parent's figure.
func (st *state) contextTokens() int {
	if st.leafIdx < 0 {
		return 0
	}
	return st.nodes[st.leafIdx].ctxTokens
}

// has reports whether an entry id is taken.
func (st *state) has(id string) bool { _, ok := st.ids[id]; return ok }

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
// included, become one space), at most 200 bytes, with U+FFFD for U+0000: a PostgreSQL store
// cannot hold that character in its listing (see storage/postgres's pgText), and both stores
// must list a session alike. Terminal escape codes go (stripANSI), as from search snippets
// and the index: the preview is the prompt as it reads, and a text of escape codes alone is
// blank.
func previewOf(msg gjson.Result) string {
	var text string
	msg.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() == BlockText {
			if t := strings.TrimSpace(stripANSI(b.Get("text").String())); t != "" {
				text = t
				return false
			}
		}
		return true
	})
	return strings.Clone(clipLineBytes(strings.ReplaceAll(text, "\x00", "\uFFFD"), 200))
}

// clipLineBytes collapses whitespace runs (newlines included) and cuts s to at most n bytes on a rune
// boundary.
func clipLineBytes(s string, n int) string {
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
