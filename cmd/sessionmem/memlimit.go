package main

import (
	"math"
	"runtime/debug"
)

// serveMemoryLimit is the soft memory limit serve gives the Go runtime unless GOMEMLIMIT
// sets one. Without it the garbage collector lets the heap grow to twice what is live, and a
// server saving hundreds of megabytes peaked at 2.5 times its live heap (docs/BENCHMARKS.md,
// issue 25). 48 MiB is above what a saving or resuming server keeps live (20-45 MiB measured),
// so the collector works harder only as the heap nears it; a soft limit is never a failure:
// past it the collector runs more often, within its CPU cap.
const serveMemoryLimit = 48 << 20

// setServeMemoryLimit applies serveMemoryLimit when the environment sets no limit.
func setServeMemoryLimit(getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	if debug.SetMemoryLimit(-1) == math.MaxInt64 {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}
