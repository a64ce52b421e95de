package memory

import "unsafe"

// What a cached state costs (Service.remember bounds the cache by it), estimated in O(1) per
// call, without walking the entries: the nodes array; per entry its slot in the ids map and
// its entry id (8 bytes, in a 16-byte allocation); per client message id its slot in the
// client map and the id (up to a few dozen bytes); the path of a branched session; and the
// decoded compactions a resume keeps. TestStateCost checks the estimate against the heap a
// state really takes.
const (
	nodeBytes      = int(unsafe.Sizeof(node{}))
	entryBytes     = 48 + 16
	clientBytes    = 48 + 64
	stateBaseBytes = 1 << 10
	compBytes      = 4 << 10
)

// cost returns the bytes st keeps, roughly; the caller holds st.mu.
func (st *state) cost() int {
	return stateBaseBytes + cap(st.nodes)*nodeBytes + len(st.nodes)*entryBytes + len(st.client)*clientBytes +
		4*cap(st.path) + len(st.comps)*compBytes
}
