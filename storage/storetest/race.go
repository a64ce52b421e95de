//go:build race

package storetest

// raceSlowdown stretches the suite's latency bounds under the race detector, which slows
// the pure-Go SQLite of the search index by an order of magnitude: there the suite checks
// that a record is found, not how fast a production build finds it.
const raceSlowdown = 5
