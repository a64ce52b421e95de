//go:build !race

package viewer

// raceFactor stretches the timing bars under the race detector (see race_test.go).
const raceFactor = 1
