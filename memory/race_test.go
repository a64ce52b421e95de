//go:build race

package memory

// raceEnabled: the race detector slows the property tests by an order of magnitude; under it
// they grow fewer and shorter sessions (the normal run does the whole job).
const raceEnabled = true
