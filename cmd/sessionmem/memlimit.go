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
// keeps live (30-38 MiB measured while memory cached up to 64 sessions' states; 26-36 MiB
// since their budget is 4 MiB, the top while a large index merge builds its segment), so the
// collector works harder only as the heap nears it.
const serveMemoryFloor = 40 << 20

// A fixed limit is wrong for a server searching a large store, whose search index keeps
// what every search reads in memory (the docs' attributes, the recent posting lists: about
// 100 MiB for 1 GB of messages): with its live heap above the limit the collector ran
// continuously and a search took six times the CPU. So the limit follows the live heap:
// half as much again as what the last collection found live (a GOGC of 50), never below the
// floor, updated every memoryLimitEvery.
const memoryLimitEvery = time.Second

// reindexMemoryFloor is the least soft memory limit of a reindex. What a rebuild keeps live
// is bounded whatever the store's size (the segment being built, at most ftsindex's 32 MiB
// budget, and the sessions and docs on their way to it: 35-70 MiB measured), but on a loaded
// machine the collector, short of CPU, let the heap reach 170 MiB (216 MB of RSS on a 1 GB
// store, against 136 MB in a quieter run). The limit caps that; it binds only past twice
// the usual live heap, since a floor of 64 MiB made the rebuild take a quarter more CPU.
const reindexMemoryFloor = 128 << 20

// adaptMemoryLimit keeps the soft memory limit at max(floor, 1.5 × the live heap) until ctx
// ends or stop is called, unless GOMEMLIMIT or a limit set before it (a test) decides. stop
// waits for the adjusting goroutine and removes the limit (for a command that runs in a
// test's process).
func adaptMemoryLimit(ctx context.Context, getenv func(string) string, floor int64) (stop func()) {
	if getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	debug.SetMemoryLimit(floor)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
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
	return func() {
		cancel()
		<-done
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// memoryLimitFor is the limit for a live heap of live bytes.
func memoryLimitFor(live, floor int64) int64 {
	return max(floor, live+live/2)
}
