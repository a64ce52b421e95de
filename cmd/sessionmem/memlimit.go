package main

import (
	"math"
	"runtime/debug"
)

// serveMemoryLimit is the soft memory limit serve gives the Go runtime unless GOMEMLIMIT
// sets one. Without it the garbage collector lets the heap grow to twice what is live, and a
// server saving hundreds of megabytes peaked at 2.5 times its live heap (docs/BENCHMARKS.md,
// issue 25). 40 MiB is about what a server saving hundreds of sessions keeps live (30-38 MiB
// measured, half of it memory's cache of 64 sessions' states), so the collector works harder
// only as the heap nears it; a soft limit is never a failure: past it the collector runs
// more often, within its CPU cap.
const serveMemoryLimit = 40 << 20

// setServeMemoryLimit applies serveMemoryLimit when the environment sets no limit.
func setServeMemoryLimit(getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	if debug.SetMemoryLimit(-1) == math.MaxInt64 {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}
