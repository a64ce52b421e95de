//go:build race

package local

// raceEnabled: the race detector slows the exhaustive recovery loops by an order of
// magnitude; under it they check a sample of offsets (the normal run checks every one).
const raceEnabled = true
