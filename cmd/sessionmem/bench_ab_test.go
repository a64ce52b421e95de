package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// BenchmarkStdioSaveAB compares the session_save p50 of several builds with their saves
// interleaved: every build serves its own seeded store, and the builds take turns of 20
// saves each (who goes first rotates), so that all of them see the same seconds of a shared
// machine's load. Whole runs alternated differ by ±30 % on a shared two-core machine; two
// copies of one build compared this way differ by 2-3 %. Raw requests (no client library),
// ~2 KB corpus messages, sessions of 1,000 and 10,000 messages. Besides the p50 it reports
// each server's CPU time (user and system, from /proc) per save, which the machine's load
// moves much less than latency.
//
//	SESSIONMEM_AB=/path/old,/path/new go test ./cmd/sessionmem -run '^$' -bench StdioSaveAB -benchtime 1x
//
// SESSIONMEM_AB_SAVES sets the saves per build (default 2,000). A build named "floor" is no
// sessionmem but the least a durable answer over a pipe costs on this machine (floorServer):
// what a build's p50 exceeds it by is the server's own share.
func BenchmarkStdioSaveAB(b *testing.B) {
	bins := strings.Split(os.Getenv("SESSIONMEM_AB"), ",")
	if len(bins) < 2 {
		b.Skip("SESSIONMEM_AB=bin1,bin2[,…] names the builds to compare")
	}
	saves := 2000
	if s, err := strconv.Atoi(os.Getenv("SESSIONMEM_AB_SAVES")); err == nil && s > 0 {
		saves = s
	}
	const turn = 20
	for _, at := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("at=%d", at), func(b *testing.B) {
			msgs := transcripttest.Sized(b, at+saves, 1024, 4096)
			servers := make([]*lineServer, len(bins))
			ids := make([]string, len(bins))
			for k, bin := range bins {
				dir := b.TempDir()
				if bin == "floor" || bin == "floor-prezeroed" {
					servers[k] = startFloor(b, dir, bin)
					continue
				}
				// Each build seeds its own store through its own saves, in its own format (a
				// store seeded in process is in this source's format, which an older build
				// may refuse).
				servers[k] = startLinesWith(b, bin, dir)
				ids[k] = seedOver(b, servers[k], msgs, at)
			}
			ds := make([][]time.Duration, len(bins))
			cpu0 := make([]time.Duration, len(bins))
			for k := range bins {
				// A server's start indexes the seeded messages for search in the background.
				cpu0[k] = waitIdle(b, servers[k].cmd.Process.Pid)
			}
			for b.Loop() {
				for i := at; i < at+saves; i += turn {
					for k := range bins {
						k = (k + i/turn) % len(bins) // who goes first changes every turn
						for j := i; j < min(i+turn, at+saves); j++ {
							m := asArgs(b, msgs[j]).(map[string]any)
							m["id"] = fmt.Sprintf("m%d", j)
							line := saveLine(j, ids[k], m)
							start := time.Now()
							servers[k].roundTrip(b, line)
							ds[k] = append(ds[k], time.Since(start))
						}
					}
				}
			}
			for k := range bins {
				b.ReportMetric(float64(median(ds[k]).Nanoseconds())/1e3, fmt.Sprintf("p50-us-%c", 'a'+k))
				b.ReportMetric(float64((procCPU(b, servers[k].cmd.Process.Pid)-cpu0[k]).Nanoseconds())/1e3/float64(saves), fmt.Sprintf("cpu-us/save-%c", 'a'+k))
			}
		})
	}
}

// seedOver saves msgs[:n] through s in batches of 500 (ids m0, m1, …) into a new session,
// and returns its id.
func seedOver(b *testing.B, s *lineServer, msgs []memory.Message, n int) string {
	b.Helper()
	id := ""
	for i := 0; i < n; i += 500 {
		batch := make([]any, 0, 500)
		for j := i; j < min(i+500, n); j++ {
			m := asArgs(b, msgs[j]).(map[string]any)
			m["id"] = fmt.Sprintf("m%d", j)
			batch = append(batch, m)
		}
		args := map[string]any{"messages": batch}
		if id == "" {
			args["working_dir"] = "/bench"
		} else {
			args["session_id"] = id
		}
		line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "seed", "method": "tools/call",
			"params": map[string]any{"name": "session_save", "arguments": args}})
		if err != nil {
			b.Fatal(err)
		}
		resp := s.roundTrip(b, string(line))
		id = gjson.Get(resp, "result.structuredContent.session_id").String()
		if id == "" {
			b.Fatalf("seeding: no session id in %.300s", resp)
		}
	}
	return id
}

// procCPU is the CPU time (user and system) process pid has used so far, from /proc.
func procCPU(b testing.TB, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// Fields after the command (which may hold spaces): state is field 3, utime 14, stime 15.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// waitIdle waits (at most a minute) until process pid has used no CPU for 300 ms, and returns
// its CPU time then.
func waitIdle(b testing.TB, pid int) time.Duration {
	b.Helper()
	last := procCPU(b, pid)
	for range 200 {
		time.Sleep(300 * time.Millisecond)
		now := procCPU(b, pid)
		if now == last {
			return now
		}
		last = now
	}
	b.Fatalf("server %d still busy after a minute", pid)
	return 0
}

// floorEnv makes the test binary floorServer (see TestMain).
const floorEnv = "SESSIONMEM_TEST_FLOOR_FILE"

// floorServer is the least a durable save over stdio can cost: it reads each request line,
// answers initialize, appends every tools/call line to one file and fsyncs it, and answers
// {} — no JSON decoding, no MCP, no session files, no index. It runs until stdin ends.
//
// "floor-prezeroed" writes into a file of zeros written and synced beforehand, and syncs with
// fdatasync: the file's size never changes, so no journal commit is needed (what a store whose
// tail is preallocated could do).
func floorServer(path string) int {
	prezeroed := strings.HasSuffix(path, "floor-prezeroed.jsonl")
	flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if prezeroed {
		flag = os.O_CREATE | os.O_WRONLY
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	var off int64
	if prezeroed {
		if _, err := f.Write(make([]byte, 64<<20)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := f.Sync(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		id := gjson.GetBytes(line, "id")
		if !id.Exists() {
			continue // a notification
		}
		if gjson.GetBytes(line, "method").Str == "tools/call" {
			if err := floorWrite(f, line, &off, prezeroed); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		if _, err := fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", id.Raw); err != nil {
			return 1
		}
	}
}

// startFloor starts the test binary as floorServer (kind "floor" or "floor-prezeroed"),
// writing into dir.
func startFloor(b testing.TB, dir, kind string) *lineServer {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv(floorEnv, filepath.Join(dir, kind+".jsonl"))
	return startLinesWith(b, exe, dir)
}

func floorWrite(f *os.File, line []byte, off *int64, prezeroed bool) error {
	if !prezeroed {
		if _, err := f.Write(line); err != nil {
			return err
		}
		return f.Sync()
	}
	if _, err := f.WriteAt(line, *off); err != nil {
		return err
	}
	*off += int64(len(line))
	return fdatasync(f)
}
