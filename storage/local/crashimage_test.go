package local

import (
	"math/rand/v2"
	"slices"
)

// What a power loss leaves of a crashFS (crashfs_test.go): files as pages, and image.

const crashPage = 4 << 10

type memPage = [crashPage]byte

// content is a file's bytes: pages (nil: zeros) and a size. A page is never modified once
// stored (a write stores a new one), so copies of a content share pages. Bytes past size in
// the last page are zero.
type content struct {
	pages []*memPage
	size  int64
}

func (c content) clone() content { return content{pages: slices.Clone(c.pages), size: c.size} }

// page returns page i as a read at the file's size sees it (nil: zeros).
func (c content) page(i int64) *memPage {
	if i >= int64(len(c.pages)) || i*crashPage >= c.size {
		return nil
	}
	return c.pages[i]
}

func (c *content) writeAt(b []byte, off int64) {
	end := off + int64(len(b))
	if n := (end + crashPage - 1) / crashPage; int64(len(c.pages)) < n {
		c.pages = append(c.pages, make([]*memPage, n-int64(len(c.pages)))...)
	}
	for len(b) > 0 {
		i, o := off/crashPage, off%crashPage
		n := min(int64(len(b)), crashPage-o)
		old := c.pages[i]
		if old != nil || !allZeroBytes(b[:n]) {
			p := new(memPage)
			if old != nil {
				*p = *old
			}
			copy(p[o:], b[:n])
			c.pages[i] = p
		}
		b, off = b[n:], off+n
	}
	c.size = max(c.size, end)
}

func (c *content) truncate(n int64) {
	if n < c.size {
		np := (n + crashPage - 1) / crashPage
		if int64(len(c.pages)) > np {
			c.pages = c.pages[:np]
		}
		c.zeroPast(n)
	}
	c.size = n
}

// zeroPast zeroes the bytes from n to the end of n's page.
func (c *content) zeroPast(n int64) {
	i, o := n/crashPage, n%crashPage
	if o == 0 || i >= int64(len(c.pages)) || c.pages[i] == nil {
		return
	}
	p := new(memPage)
	copy(p[:o], c.pages[i][:o])
	c.pages[i] = p
}

func (c content) readAt(b []byte, off int64) int {
	if off >= c.size {
		return 0
	}
	n := int(min(int64(len(b)), c.size-off))
	for done := 0; done < n; {
		i, o := (off+int64(done))/crashPage, (off+int64(done))%crashPage
		k := min(n-done, int(crashPage-o))
		if p := c.page(i); p != nil {
			copy(b[done:done+k], p[o:])
		} else {
			clear(b[done : done+k])
		}
		done += k
	}
	return n
}

func allZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// crashMode says what a power loss keeps of what was not synced.
type crashMode int

const (
	// crashKill keeps everything: a process killed, the machine still up.
	crashKill crashMode = iota
	// crashStrict loses everything not synced (vfs.NewStrictMem's reset).
	crashStrict
	// crashTornOrdered keeps a random subset of each file's unsynced pages, its synced or
	// its latest size, and a random prefix of each directory's unsynced changes.
	crashTornOrdered
	// crashTornAny is crashTornOrdered with a random subset of the directory changes.
	crashTornAny
	numCrashModes
)

func (m crashMode) String() string {
	return [...]string{"kill", "strict", "torn-ordered", "torn-any"}[m]
}

// image returns the disk a power loss now could leave, as a new crashFS on which everything
// is durable (the machine rebooted). rng decides what the torn modes keep.
func (c *crashFS) image(rng *rand.Rand, mode crashMode) *crashFS {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := newCrashFS(c.now)
	out.nextIno, out.tmpSeq = c.nextIno, c.tmpSeq
	done := map[*memNode]*memNode{}
	var img func(n *memNode) *memNode
	img = func(n *memNode) *memNode {
		if m := done[n]; m != nil {
			return m
		}
		m := &memNode{ino: n.ino, dir: n.dir, mtime: n.mtime}
		done[n] = m
		if !n.dir {
			m.cur = crashContent(rng, n.cur, n.durable, mode)
			m.durable = m.cur.clone()
			return m
		}
		m.children = map[string]*memNode{}
		ents := crashEntries(rng, n, mode)
		for _, base := range sortedNames(ents) { // in order: the same seed draws the same
			m.children[base] = img(ents[base])
		}
		m.synced = mapsClone(m.children)
		return m
	}
	out.root = img(c.root)
	return out
}

// crashContent is what a power loss leaves of a file whose open files see cur and whose last
// sync wrote durable.
func crashContent(rng *rand.Rand, cur, durable content, mode crashMode) content {
	switch mode {
	case crashKill:
		return cur.clone()
	case crashStrict:
		return durable.clone()
	}
	size := durable.size
	if rng.IntN(2) == 0 {
		size = cur.size
	}
	out := content{size: size, pages: make([]*memPage, (size+crashPage-1)/crashPage)}
	for i := range out.pages {
		c, d := cur.page(int64(i)), durable.page(int64(i))
		if c == d || rng.IntN(2) == 0 {
			out.pages[i] = c
		} else {
			out.pages[i] = d
		}
	}
	out.zeroPast(size)
	return out
}

// crashEntries is what a power loss leaves of directory n's entries.
func crashEntries(rng *rand.Rand, n *memNode, mode crashMode) map[string]*memNode {
	if mode == crashKill {
		return n.children
	}
	out := mapsClone(n.synced)
	keep := 0
	switch mode {
	case crashTornOrdered:
		keep = rng.IntN(len(n.pending) + 1)
	case crashTornAny:
		keep = len(n.pending)
	}
	for _, op := range n.pending[:keep] {
		if mode == crashTornAny && rng.IntN(2) == 0 {
			continue
		}
		op.apply(out)
	}
	return out
}
