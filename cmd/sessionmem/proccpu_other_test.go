//go:build !linux

package main

import "time"

// serverCPU is known on Linux only (proccpu_linux_test.go).
func serverCPU(string) (time.Duration, bool) { return 0, false }
