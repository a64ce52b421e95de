package ftsindex

import (
	"context"
	"database/sql"

	"slices"
	"sort"
	"sync"
)

// view is what a search reads besides postings, cached per process and database: the
// segments' docs (immutable, so cached by segment id), the live sessions (reloaded when the
// counters say the table changed), and each session's messages in seq order (for context).
type view struct {
	mu      sync.Mutex
	docs    map[int64]*segDocs
	packs   map[int64]*packedSeg
	sessGen int64
	live    map[int64]sessRow
	bySid   map[string]int64
	// msgs lists each session's message docs by seq: the neighbours of a hit. ids up to
	// msgsMax are in it (docs are only ever added above the highest id, in order).
	msgs    map[int64][]msgRef
	msgsMax int64
	// lists keeps decoded posting lists of the segments (listcache.go).
	lists *listCache
	// allLive tells, for the segments checked since the sessions last changed (sessGen),
	// whether all their docs' sessions are live: the common case, where a search skips the
	// per-doc lookup (filter.ok).
	allLive map[int64]bool
}

type msgRef struct {
	seq uint64
	id  int64
}

// snapshot is the state of the index one search works on.
type snapshot struct {
	segs   []*segment // by lo
	live   map[int64]sessRow
	bySid  map[string]int64
	n      int     // live docs
	avgdl  float64 // average length of the live docs
	maxDoc int64   // the highest doc id ever assigned
}

// segment is one segment of a snapshot.
type segment struct {
	segMeta
	docs   *segDocs
	packed *packedSeg // nil: its postings are rows
	// allLive: every doc's session is live, so a search need not look each one up.
	allLive bool
}

// source reads the segment's postings in tx.
func (s *segment) source(ctx context.Context, tx *sql.Tx) termSource {
	return termSource{ctx: ctx, q: tx, seg: s.id, packed: s.packed}
}

func newView() *view {
	return &view{docs: map[int64]*segDocs{}, packs: map[int64]*packedSeg{}, msgs: map[int64][]msgRef{}, lists: newListCache(listCacheBudget)}
}

// load reads the snapshot of tx (a read transaction), updating the caches. The returned
// maps must not be modified; they stay valid (the view replaces, never mutates, them).
func (v *view) load(ctx context.Context, tx *sql.Tx) (*snapshot, error) {
	var docs, terms, gen int64
	sn := &snapshot{}
	rows, err := tx.QueryContext(ctx, `SELECT k, v FROM counters`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k string
		var val int64
		if err := rows.Scan(&k, &val); err != nil {
			rows.Close()
			return nil, err
		}
		switch k {
		case "docs":
			docs = val
		case "terms":
			terms = val
		case "sessions":
			gen = val
		case "last_doc":
			sn.maxDoc = val
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sn.n, sn.avgdl = int(docs), 1
	if docs > 0 {
		sn.avgdl = float64(terms) / float64(docs)
	}

	metas, err := listSegments(ctx, tx)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.live == nil || gen != v.sessGen {
		live, err := liveSessions(ctx, tx)
		if err != nil {
			return nil, err
		}
		bySid := make(map[string]int64, len(live))
		for id, r := range live {
			bySid[r.sid] = id
		}
		v.live, v.bySid, v.sessGen = live, bySid, gen
		v.allLive = map[int64]bool{}
		for s := range v.msgs {
			if _, ok := live[s]; !ok {
				delete(v.msgs, s)
			}
		}
	}
	sn.live, sn.bySid = v.live, v.bySid
	keep := make(map[int64]bool, len(metas))
	for _, m := range metas {
		keep[m.id] = true
		d, p := v.docs[m.id], v.packs[m.id]
		if d == nil {
			if d, p, err = readSegment(ctx, tx, m.id); err != nil {
				return nil, err
			}
			v.docs[m.id] = d
			if p != nil {
				v.packs[m.id] = p
			}
		}
		all, ok := v.allLive[m.id]
		if !ok {
			all = d.allIn(v.live)
			v.allLive[m.id] = all
		}
		sn.segs = append(sn.segs, &segment{segMeta: m, docs: d, packed: p, allLive: all})
	}
	dropped := false
	for id := range v.docs {
		if !keep[id] {
			delete(v.docs, id)
			delete(v.packs, id)
			dropped = true
		}
	}
	if dropped {
		v.lists.drop(keep)
		for id := range v.allLive {
			if !keep[id] {
				delete(v.allLive, id)
			}
		}
	}
	v.addMsgs(sn.segs)
	return sn, nil
}

// addMsgs adds the message docs above msgsMax to msgs.
func (v *view) addMsgs(segs []*segment) {
	top := v.msgsMax
	touched := map[int64]bool{}
	for _, s := range segs {
		if s.hi <= v.msgsMax {
			continue
		}
		d := s.docs
		for i := sort.Search(d.len(), func(i int) bool { return d.ids[i] > v.msgsMax }); i < d.len(); i++ {
			if d.kinds[i] != kindMessage {
				continue
			}
			if _, ok := v.live[d.sess[i]]; !ok {
				continue
			}
			list := v.msgs[d.sess[i]]
			if n := len(list); n > 0 && list[n-1].seq > d.seqs[i] {
				touched[d.sess[i]] = true
			}
			v.msgs[d.sess[i]] = append(list, msgRef{seq: d.seqs[i], id: d.ids[i]})
			top = max(top, d.ids[i])
		}
	}
	for s := range touched {
		slices.SortFunc(v.msgs[s], func(a, b msgRef) int { return compareUint(a.seq, b.seq) })
	}
	v.msgsMax = top
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// neighbours returns the ids of the messages right before and after seq in session (0
// when none). The list is read under the view's lock: another search may be appending.
func (v *view) neighbours(session int64, seq uint64) (prev, next int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	list := v.msgs[session]
	i, found := slices.BinarySearchFunc(list, seq, func(m msgRef, s uint64) int { return compareUint(m.seq, s) })
	if i > 0 {
		prev = list[i-1].id
	}
	if found {
		i++
	}
	if i < len(list) {
		next = list[i].id
	}
	return prev, next
}

// find returns the segment index and ordinal of doc id, or -1.
func (sn *snapshot) find(id int64) (int, int) {
	i := sort.Search(len(sn.segs), func(i int) bool { return sn.segs[i].hi >= id })
	if i == len(sn.segs) || sn.segs[i].lo > id {
		return -1, -1
	}
	o := sn.segs[i].docs.ord(id)
	if o < 0 {
		return -1, -1
	}
	return i, o
}

// allIn reports whether every doc's session is in live.
func (d *segDocs) allIn(live map[int64]sessRow) bool {
	last := int64(-1)
	for _, s := range d.sess {
		if s == last {
			continue
		}
		if _, ok := live[s]; !ok {
			return false
		}
		last = s
	}
	return true
}
