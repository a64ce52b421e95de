package ftsindex

import (
	"fmt"
	"testing"
)

func TestListCache(t *testing.T) {
	long := func(n int) []posting {
		l := make([]posting, n)
		for i := range l {
			l[i] = posting{ord: uint32(i), tf: 1}
		}
		return l
	}
	tests := []struct {
		name string
		run  func(c *listCache)
		seg  int64
		term string
		want int // length of the cached list; -1: not cached; 0: cached as absent
	}{
		{"a long list is kept", func(c *listCache) { c.put(1, "test", long(100)) }, 1, "test", 100},
		{"a short list is not", func(c *listCache) { c.put(1, "rare", long(3)) }, 1, "rare", -1},
		{"absence is kept", func(c *listCache) { c.put(1, "none", nil) }, 1, "none", 0},
		{"per segment", func(c *listCache) { c.put(1, "test", long(100)) }, 2, "test", -1},
		{"a dropped segment's lists go", func(c *listCache) {
			c.put(1, "test", long(100))
			c.put(2, "test", long(100))
			c.drop(map[int64]bool{2: true})
		}, 1, "test", -1},
		{"a kept segment's lists stay", func(c *listCache) {
			c.put(1, "test", long(100))
			c.put(2, "test", long(100))
			c.drop(map[int64]bool{2: true})
		}, 2, "test", 100},
		{"the least recently used goes first", func(c *listCache) {
			for i := range 8 {
				c.put(1, fmt.Sprint("w", i), long(100)) // the cache is full
			}
			c.get(1, "w0") // used: w1 is now the oldest
			c.put(1, "w8", long(100))
		}, 1, "w0", 100},
		{"the oldest went", func(c *listCache) {
			for i := range 8 {
				c.put(1, fmt.Sprint("w", i), long(100))
			}
			c.get(1, "w0")
			c.put(1, "w8", long(100))
		}, 1, "w1", -1},
		{"a list over a quarter of the budget is not kept", func(c *listCache) { c.put(1, "huge", long(1000)) }, 1, "huge", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newListCache(8 * 1000) // room for 8 lists of 100 (962 bytes each)
			tt.run(c)
			l, ok := c.get(tt.seg, tt.term)
			got := -1
			if ok {
				got = len(l)
			}
			if got != tt.want {
				t.Errorf("cached list of %q in segment %d: %d, want %d", tt.term, tt.seg, got, tt.want)
			}
			if c.used > c.budget {
				t.Errorf("used %d over the budget %d", c.used, c.budget)
			}
		})
	}
	var nilCache *listCache
	nilCache.put(1, "x", long(100))
	if _, ok := nilCache.get(1, "x"); ok {
		t.Error("a nil cache keeps nothing")
	}
}
