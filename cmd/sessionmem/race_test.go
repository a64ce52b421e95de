//go:build race

package main

// raceEnabled is set under the race detector, which slows the JSON readers and the search
// index's pure-Go SQLite by an order of magnitude: the shape tests then draw smaller values.
const raceEnabled = true
