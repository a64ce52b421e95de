package main

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// serveMemoryFloor is the least soft memory limit serve gives the Go runtime unless
// GOMEMLIMIT sets one. Without a limit the garbage collector lets the heap grow to twice what
// is live, and a server saving hundreds of megabytes peaked at 2.5 times its live heap
// (docs/BENCHMARKS.md, issue 25). 40 MiB is about what a server saving hundreds of sessions
// keeps live (30-38 MiB measured, half of it memory's cache of 64 sessions' states), so the
// collector works harder only as the heap nears it.
const serveMemoryFloor = 40 << 20

// A fixed limit is wrong for a server searching a large store, whose search index keeps
// what every search reads in memory (the docs' attributes, the recent posting lists: about
// 100 MiB for 1 GB of messages): with its live heap above the limit the collector ran
// continuously and a search took six times the CPU. So the limit follows the live heap:
// half as much again as what the last collection found live (a GOGC of 50), never below the
// floor, updated every memoryLimitEvery.
const memoryLimitEvery = time.Second

// adaptMemoryLimit keeps the soft memory limit at max(floor, 1.5 × the live heap) until ctx
// ends, unless GOMEMLIMIT or a limit set before it (a test) decides.
func adaptMemoryLimit(ctx context.Context, getenv func(string) string, floor int64) {
	if getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return
	}
	debug.SetMemoryLimit(floor)
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(memoryLimitEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return
			}
			debug.SetMemoryLimit(memoryLimitFor(int64(sample[0].Value.Uint64()), floor))
		}
	}()
}

// memoryLimitFor is the limit for a live heap of live bytes.
func memoryLimitFor(live, floor int64) int64 {
	return max(floor, live+live/2)
}
