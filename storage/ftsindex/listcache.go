package ftsindex

import (
	"container/list"
	"sync"
)

// listCache keeps decoded posting lists of segments, which never change once written (a
// merge writes a new segment and drops the old ones): a question's common words (test,
// error, fix) recur from one search to the next, and their lists are the long ones, whose
// reading and decoding was most of a search's cost on a large store. It also remembers that a
// segment has no list for a term, so a search whose terms are all known asks SQLite nothing.
// Least recently used lists go first once the lists' memory passes the budget.
type listCache struct {
	mu     sync.Mutex
	budget int
	used   int
	lru    *list.List // of *listEntry, most recent first
	byKey  map[listKey]*list.Element
}

type listKey struct {
	seg  int64
	term string
}

type listEntry struct {
	key   listKey
	list  []posting // nil: the segment has no list for the term
	bytes int
}

// listCacheBudget bounds the decoded lists kept per index (per process): 16 MiB holds the
// lists of a few dozen common words over a 1 GB store.
const listCacheBudget = 16 << 20

// entryOverhead is what an entry costs besides its term and list: the entry, its list
// element and its map slot.
const entryOverhead = 160

// listCacheMin is the shortest list worth keeping: shorter ones cost little to read again.
const listCacheMin = 64

func newListCache(budget int) *listCache {
	return &listCache{budget: budget, lru: list.New(), byKey: map[listKey]*list.Element{}}
}

// get returns the cached list of term in segment seg and whether there was one; a nil list
// with ok means the segment has none. The list must not be modified.
func (c *listCache) get(seg int64, term string) (l []posting, ok bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[listKey{seg, term}]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*listEntry).list, true
}

// put remembers term's list in seg (nil: none), when it is worth it.
func (c *listCache) put(seg int64, term string, l []posting) {
	if c == nil || l != nil && len(l) < listCacheMin {
		return
	}
	k := listKey{seg, term}
	e := &listEntry{key: k, list: l, bytes: entryOverhead + len(term) + 8*len(l)}
	if e.bytes > c.budget/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok {
		return
	}
	c.byKey[k] = c.lru.PushFront(e)
	c.used += e.bytes
	for c.used > c.budget {
		last := c.lru.Back()
		old := last.Value.(*listEntry)
		c.lru.Remove(last)
		delete(c.byKey, old.key)
		c.used -= old.bytes
	}
}

// drop forgets the lists of segments that no longer exist.
func (c *listCache) drop(keep map[int64]bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*listEntry); !keep[e.key.seg] {
			c.lru.Remove(el)
			delete(c.byKey, e.key)
			c.used -= e.bytes
		}
		el = next
	}
}
