//go:build race

package viewer

// raceFactor stretches the timing bars under the race detector, which makes the server
// several times slower; the bars themselves hold without it.
const raceFactor = 5
