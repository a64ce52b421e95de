package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serverCPU returns the CPU time (user + system) used so far by the server process serving
// store, found by its command line ("serve --store <store>"), and false when there is none.
// The benchmarks report it beside wall times: on a shared machine the wall time of a round
// trip includes waiting for a core, the CPU time does not.
func serverCPU(store string) (time.Duration, bool) {
	pids, _ := filepath.Glob("/proc/[0-9]*")
	want := []byte("serve\x00--store\x00" + store + "\x00")
	for _, p := range pids {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.Contains(cmd, want) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			return 0, false
		}
		// Fields after the command name (which may hold spaces) in parentheses; utime and
		// stime are fields 14 and 15, in clock ticks (100 per second on Linux).
		rest := string(stat[bytes.LastIndexByte(stat, ')')+2:])
		f := strings.Fields(rest)
		if len(f) < 13 {
			return 0, false
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		return time.Duration(u+s) * 10 * time.Millisecond, true
	}
	return 0, false
}
