package main

import "testing"

func TestMemoryLimitFor(t *testing.T) {
	const floor = 40 << 20
	for _, tt := range []struct {
		name       string
		live, want int64
	}{
		{"a small heap gets the floor", 10 << 20, floor},
		{"just under the floor's two thirds", 26 << 20, floor},
		{"a search index's heap gets half as much again", 100 << 20, 150 << 20},
		{"nothing live", 0, floor},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := memoryLimitFor(tt.live, floor); got != tt.want {
				t.Errorf("memoryLimitFor(%d) = %d, want %d", tt.live, got, tt.want)
			}
		})
	}
}
