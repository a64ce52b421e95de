package memory

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"unsafe"

	"github.com/sessionmem/sessionmem/storage"
)

// State snapshots. A session's state (state.go) is built from its whole log the first time a
// process touches the session: about 10 µs per ~2 KB message, 60-80 ms for 6,000 messages,
// which is what the first resume after a server start would wait for. Stores that implement
// storage.Snapshots keep a snapshot of the state beside the session; a cold process decodes it
// (no JSON: about 0.2 µs per entry) and applies only the records appended after it.
//
// A snapshot is what apply derived, in binary: the state's scalars and every node, nothing of
// any message's content beyond the ids and the preview the listing shows anyway. It is written
// in the background once a session has been idle for a moment (snapshotter), and on Close.

// snapshotVersion names what apply derives. Bump it whenever apply (or anything it calls,
// such as the token estimate) would derive something else from the same records: a snapshot
// of another version is ignored and the state is built from the log. Changes to the fields of
// node or state are caught without a bump (snapshotLayout).
const snapshotVersion = 2

// snapshotLayout fingerprints the fields of node and state, so that a build whose structures
// differ never decodes another build's snapshot as its own.
var snapshotLayout = func() uint64 {
	h := fnv.New64a()
	for _, t := range []reflect.Type{reflect.TypeFor[node](), reflect.TypeFor[state]()} {
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(h, "%s %s;", f.Name, f.Type)
		}
	}
	return h.Sum64()
}()

const snapshotMagic = "smstate"

// encodeSnapshot renders the state of records 1..lastSeq. The caller holds st.mu, or works on
// a copy of the scalars with a nodes slice taken under it (nodes never change once applied).
func (st *state) encodeSnapshot() []byte {
	b := make([]byte, 0, 64+len(st.nodes)*48)
	b = append(b, snapshotMagic...)
	b = binary.AppendUvarint(b, snapshotVersion)
	b = binary.LittleEndian.AppendUint64(b, snapshotLayout)
	b = appendString(b, st.header.ID)
	b = appendString(b, st.header.Nonce)
	b = binary.AppendUvarint(b, st.lastSeq)
	b = binary.AppendVarint(b, int64(st.leafIdx))
	b = appendBool(b, st.linear)
	b = binary.AppendVarint(b, int64(st.messages))
	b = binary.AppendVarint(b, int64(st.compactions))
	b = appendString(b, st.preview)
	b = appendString(b, st.name)
	b = appendString(b, st.model)
	b = appendString(b, st.provider)
	b = binary.AppendUvarint(b, st.checkpoint)
	updated, _ := st.updated.MarshalText() // keeps the zone offset apply parsed
	b = appendString(b, string(updated))
	b = binary.AppendVarint(b, int64(st.pinnedCost))
	b = binary.AppendVarint(b, st.logBytes)
	b = binary.AppendUvarint(b, uint64(len(st.nodes)))
	for i := range st.nodes {
		n := &st.nodes[i]
		b = appendString(b, n.id)
		b = appendString(b, n.clientID)
		b = appendString(b, n.kind)
		b = appendString(b, string(n.role))
		// Links are stored as distances back (1 = the previous entry, 0 = none), which are
		// small in practice and never point forward. The running totals are not stored: they
		// are most of a node's bytes once compressed, and decoding derives them from the
		// parent's as apply does (state.totals).
		b = appendLink(b, int32(i), n.parent)
		b = appendLink(b, int32(i)+1, n.firstKept)
		b = appendBool(b, n.pinned)
		b = binary.AppendVarint(b, int64(n.tokens))
		b = binary.AppendVarint(b, int64(n.usage))
		if n.kind == KindBranchSummary {
			// What it adds to resume's conversation differs from its own tokens.
			b = binary.AppendVarint(b, int64(n.out-st.parentOut(n)))
		}
	}
	return b
}

// parentOut is the conversation tokens before n on its path.
func (st *state) parentOut(n *node) int {
	if n.parent < 0 {
		return 0
	}
	return st.nodes[n.parent].out
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendLink stores link (an index before base, or -1) as base-link, 0 for -1.
func appendLink(b []byte, base, link int32) []byte {
	if link < 0 {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(base-link))
}

// errSnapshot is any snapshot that cannot be used: the caller builds the state from the log.
var errSnapshot = errors.New("unusable state snapshot")

// snapReader decodes a snapshot. Strings are views of one copy of the data, converted once, so
// decoding allocates little beyond the nodes and the maps.
type snapReader struct {
	s   string
	off int
	err bool
}

func (r *snapReader) uvarint() uint64 {
	if r.err {
		return 0
	}
	v, n := binary.Uvarint(unsafe.Slice(unsafe.StringData(r.s[r.off:]), len(r.s)-r.off))
	if n <= 0 {
		r.err = true
		return 0
	}
	r.off += n
	return v
}

// varint reads what binary.AppendVarint wrote: a uvarint of the zigzag-encoded value.
func (r *snapReader) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// int reads a varint that must fit an int32-sized count or total.
func (r *snapReader) int() int {
	v := r.varint()
	if v < -1<<31 || v > 1<<31-1 {
		r.err = true
		return 0
	}
	return int(v)
}

func (r *snapReader) str() string {
	n := r.uvarint()
	if r.err || n > uint64(len(r.s)-r.off) {
		r.err = true
		return ""
	}
	s := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

func (r *snapReader) bool() bool {
	if r.err || r.off >= len(r.s) || r.s[r.off] > 1 {
		r.err = true
		return false
	}
	r.off++
	return r.s[r.off-1] == 1
}

// link reads what appendLink wrote: an index in [0, base), or -1.
func (r *snapReader) link(base int32) int32 {
	d := r.uvarint()
	if d == 0 {
		return -1
	}
	if d > uint64(base) {
		r.err = true
		return -1
	}
	return base - int32(d)
}

// decodeSnapshot rebuilds the state a snapshot describes for the session with header h.
// Anything inconsistent (another session, version or layout, a link out of range, trailing
// bytes) is errSnapshot.
func decodeSnapshot(h storage.Header, data []byte) (*state, error) {
	r := &snapReader{s: string(data)}
	if len(r.s) < len(snapshotMagic) || r.s[:len(snapshotMagic)] != snapshotMagic {
		return nil, errSnapshot
	}
	r.off = len(snapshotMagic)
	if r.uvarint() != snapshotVersion || r.err || len(r.s)-r.off < 8 {
		return nil, errSnapshot
	}
	if binary.LittleEndian.Uint64([]byte(r.s[r.off:r.off+8])) != snapshotLayout {
		return nil, errSnapshot
	}
	r.off += 8
	if r.str() != h.ID || r.str() != h.Nonce || r.err {
		return nil, errSnapshot
	}
	st := newState(h)
	st.lastSeq = r.uvarint()
	st.leafIdx = int32(r.int())
	st.linear = r.bool()
	st.messages = r.int()
	st.compactions = r.int()
	st.preview, st.name, st.model, st.provider = r.str(), r.str(), r.str(), r.str()
	st.checkpoint = r.uvarint()
	if err := st.updated.UnmarshalText([]byte(r.str())); err != nil {
		return nil, errSnapshot
	}
	st.pinnedCost = r.int()
	st.logBytes = r.varint()
	count := r.uvarint()
	// Every node takes at least 10 bytes, so a count the data cannot hold is refused before
	// anything is allocated for it.
	if r.err || count != st.lastSeq || count > uint64(len(r.s)-r.off)/10 {
		return nil, errSnapshot
	}
	if count > 0 {
		st.nodes = make([]node, count)
		st.ids = make(map[string]int32, count)
	}
	for i := range st.nodes {
		n := &st.nodes[i]
		base := int32(i)
		n.id, n.clientID = r.str(), r.str()
		n.kind, n.role = kindName(r.str()), roleName(r.str())
		n.parent = r.link(base)
		n.firstKept = r.link(base + 1)
		n.pinned = r.bool()
		n.tokens, n.usage = r.int(), r.int()
		outTokens := 0
		switch n.kind {
		case KindMessage:
			outTokens = n.tokens
		case KindBranchSummary:
			outTokens = r.int()
		}
		if r.err || n.firstKept >= base {
			return nil, errSnapshot
		}
		st.totals(n, base, outTokens)
		if r.err || n.id == "" {
			return nil, errSnapshot
		}
		st.ids[n.id] = base
		if n.clientID != "" {
			if len(st.client) == 0 {
				// Sized once for the rest (clients that give ids give them all): growing it
				// entry by entry was most of a 2,000-message state's restore.
				st.client = make(map[string]string, len(st.nodes)-i)
			}
			st.client[n.clientID] = n.id
		}
	}
	if r.err || r.off != len(r.s) || st.leafIdx != int32(count)-1 || st.checkpoint > st.lastSeq {
		return nil, errSnapshot
	}
	if count > 0 {
		st.leaf = st.nodes[count-1].id
	}
	return st, nil
}
