//go:build !race

package storetest

// raceSlowdown is 1 without the race detector: the latency bounds are the promised ones.
const raceSlowdown = 1
