package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// TestSoak runs `sessionmem serve --http` for $SESSIONMEM_SOAK (e.g. 20m; skipped when unset)
// under 8 concurrent clients doing what agents do (save, resume, list, search, compact, fork,
// delete: mostly saves), sampling the server's resident memory, open descriptors and
// goroutines every 10 s (scripts/soak.sh runs it). It fails on any error, on any saved
// message missing at the end, and when the samples keep growing after warm-up (checkFlat).
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("SESSIONMEM_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set SESSIONMEM_SOAK to a duration (e.g. 20m) to run the soak")
	}
	store := t.TempDir()
	seedSoak(t, store)
	base, cmd := httpServer(t, store)
	pool := transcripttest.Sized(t, 3000, 1024, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var st soakStats
	var wg sync.WaitGroup
	saved := make([]map[string][]string, 8)
	for i := range 8 {
		wg.Go(func() { saved[i] = soakClient(ctx, t, base, i, pool, &st) })
	}
	samples := sampleServer(ctx, cmd.Process.Pid, base, 10*time.Second)
	wg.Wait()
	// Every message saved is still in its session (a compaction folds messages into a
	// summary for resume; export still has them all).
	var lost []string
	for _, m := range saved {
		for id, ids := range m {
			out, err := exec.Command(binary(t), "export", "--store", store, id).Output()
			if err != nil {
				t.Errorf("export %s: %v", id, err)
				continue
			}
			for _, mid := range ids {
				if !strings.Contains(string(out), `"id":"`+mid+`"`) {
					lost = append(lost, mid)
				}
			}
		}
	}
	t.Logf("%d calls (%d saves of %d messages, %d searches), %d errors", st.calls.Load(), st.saves.Load(), st.msgs.Load(), st.searches.Load(), st.errors.Load())
	var b strings.Builder
	fmt.Fprintf(&b, "%8s %10s %9s %9s %11s %12s %6s %10s\n", "t", "RSS MiB", "anon MiB", "file MiB", "Go heap MiB", "Go held MiB", "fds", "goroutines")
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	for _, s := range samples {
		fmt.Fprintf(&b, "%8s %10.1f %9.1f %9.1f %11.1f %12.1f %6d %10d\n", s.at.Round(time.Second), mib(s.rss),
			mib(s.anon), mib(s.file), mib(s.heapInuse), mib(s.goHeld), s.fds, s.goroutines)
	}
	t.Logf("server samples every 10 s:\n%s", b.String())
	if n := st.errors.Load(); n > 0 {
		t.Errorf("%d calls failed", n)
	}
	if len(lost) > 0 {
		t.Errorf("%d saved messages missing, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	checkFlat(t, samples)
}

// seedSoak copies into store a store of $SESSIONMEM_SOAK_SEED_MB MB of message JSON
// (buildSizedStore's, built once and kept in $SESSIONMEM_SOAK_SEED_DIR when set), so that the soak
// runs against a store of a size people have, whose caches fill as they would on one, rather
// than against an empty one that only its own saves grow.
func seedSoak(t *testing.T, store string) {
	mb, _ := strconv.Atoi(os.Getenv("SESSIONMEM_SOAK_SEED_MB"))
	if mb <= 0 {
		return
	}
	dir := os.Getenv("SESSIONMEM_SOAK_SEED_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	seed := filepath.Join(dir, fmt.Sprintf("search-%dmb", mb))
	buildSizedStore(t, seed, mb)
	if err := os.CopyFS(store, os.DirFS(seed)); err != nil {
		t.Fatal(err)
	}
}

type soakStats struct {
	calls, saves, msgs, searches, errors atomic.Int64
}

// soakClient works until ctx ends and returns the ids of the messages it saved, by session,
// for the sessions it did not delete.
func soakClient(ctx context.Context, t *testing.T, base string, n int, pool []memory.Message, st *soakStats) map[string][]string {
	c, err := client.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		t.Error(err)
		return nil
	}
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Error(err)
		return nil
	}
	initClient(t, c)
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	dir := fmt.Sprintf("/soak/p%d", n)
	saved := map[string][]string{} // session → message ids saved
	var sessions, forks []string
	do := func(name string, args obj, out any) bool {
		st.calls.Add(1)
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := c.CallTool(cctx, req)
		if err != nil || res.IsError {
			st.errors.Add(1)
			if err == nil {
				err = fmt.Errorf("%v", res.Content)
			}
			t.Logf("client %d: %s: %v", n, name, err)
			return false
		}
		if out != nil {
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, out)
		}
		return true
	}
	seq := 0
	for ctx.Err() == nil {
		switch p := rng.IntN(100); {
		case p < 45 || len(sessions) == 0: // save 1-4 messages, sometimes into a new session
			var batch []any
			var ids []string
			for range 1 + rng.IntN(4) {
				m := pool[rng.IntN(len(pool))]
				m.ID = fmt.Sprintf("c%d-m%d", n, seq)
				seq++
				raw, _ := json.Marshal(m)
				batch = append(batch, json.RawMessage(raw))
				ids = append(ids, m.ID)
			}
			args := obj{"messages": batch}
			if len(sessions) == 0 || rng.IntN(40) == 0 {
				args["working_dir"], args["name"] = dir, fmt.Sprintf("soak %d", seq)
			} else {
				args["session_id"] = sessions[rng.IntN(len(sessions))]
			}
			var out struct {
				SessionID string `json:"session_id"`
			}
			if do("session_save", args, &out) {
				if !slices.Contains(sessions, out.SessionID) {
					sessions = append(sessions, out.SessionID)
				}
				saved[out.SessionID] = append(saved[out.SessionID], ids...)
				st.saves.Add(1)
				st.msgs.Add(int64(len(ids)))
			}
		case p < 60:
			do("session_resume", obj{"session_id": sessions[rng.IntN(len(sessions))], "max_tokens": 8000}, nil)
		case p < 70:
			do("session_list", obj{"working_dir": dir, "limit": 20}, nil)
		case p < 85:
			m := pool[rng.IntN(len(pool))]
			words := strings.Fields(messageWords(m))
			if len(words) > 6 {
				i := rng.IntN(len(words) - 6)
				do("session_search", obj{"query": "how did we " + strings.Join(words[i:i+6], " "), "limit": 10}, nil)
				st.searches.Add(1)
			}
		case p < 90:
			do("session_compact", obj{"session_id": sessions[rng.IntN(len(sessions))], "summarizer": "extractive", "keep_recent_tokens": 4000}, nil)
		case p < 95:
			var out struct {
				SessionID string `json:"session_id"`
			}
			if do("session_fork", obj{"session_id": sessions[rng.IntN(len(sessions))]}, &out) {
				forks = append(forks, out.SessionID)
			}
		default:
			if len(forks) > 0 {
				do("session_delete", obj{"session_id": forks[0]}, nil)
				forks = forks[1:]
			}
		}
	}
	return saved
}

// messageWords is a message's text without the query language's operators, for questions
// about it.
func messageWords(m memory.Message) string {
	var b strings.Builder
	for _, bl := range m.Content {
		b.WriteString(bl.Text)
		b.WriteByte(' ')
	}
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(`"*+-`, r) {
			return ' '
		}
		return r
	}, b.String())
}

// sample is one look at the server process.
type sample struct {
	at         time.Duration
	rss        int64
	anon, file int64 // RSS's anonymous part and its file-backed part (the binary, mapped index pages)
	fds        int
	goroutines int
	// The Go runtime's view, from /metrics: the heap in use, and what it holds from the OS
	// (go_memstats_sys_bytes less the heap it has released). anon less goHeld is memory the
	// runtime does not know about: SQLite's allocations through modernc's libc, thread stacks.
	heapInuse, goHeld int64
}

// sampleServer looks at the process every period until ctx ends: resident memory and open
// descriptors from /proc, goroutines from its /metrics (go_goroutines; -1 without).
func sampleServer(ctx context.Context, pid int, base string, period time.Duration) []sample {
	start := time.Now()
	var out []sample
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		s := sample{at: time.Since(start), goroutines: -1}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				f := strings.Fields(l)
				if len(f) < 2 {
					continue
				}
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				switch f[0] {
				case "VmRSS:":
					s.rss = kb << 10
				case "RssAnon:":
					s.anon = kb << 10
				case "RssFile:":
					s.file = kb << 10
				}
			}
		}
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
			s.fds = len(ents)
		}
		if resp, err := http.Get(base + "/metrics"); err == nil {
			var sys, released float64
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				name, v, ok := strings.Cut(sc.Text(), " ")
				if !ok {
					continue
				}
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				switch name {
				case "go_goroutines":
					s.goroutines = int(f)
				case "go_memstats_heap_inuse_bytes":
					s.heapInuse = int64(f)
				case "go_memstats_sys_bytes":
					sys = f
				case "go_memstats_heap_released_bytes":
					released = f
				}
			}
			s.goHeld = int64(sys - released)
			resp.Body.Close()
		}
		out = append(out, s)
	}
}

// checkFlat fails when the samples keep growing after warm-up (the first quarter).
//
// Memory is judged by its anonymous part (RssAnon: Go's heap and runtime, SQLite's own
// allocations, stacks): what the process itself holds. The file-backed rest of RSS is the
// binary's pages and the search index's pages its readers map, clean page cache the kernel
// takes back under pressure, which follows the index's size and the searches' pages; it is
// reported beside, not judged. The last quarter's largest anonymous memory may exceed the
// second quarter's largest by 25%. Descriptors and goroutines come and go with the requests
// in flight at the moment of a sample (one burst of a merge, seals and eight calls reads as a
// peak), so their medians are compared: a leak moves every sample, not one (+8 descriptors,
// +25% goroutines).
func checkFlat(t *testing.T, samples []sample) {
	q := len(samples) / 4
	if q < 2 {
		t.Logf("too few samples (%d) to judge growth", len(samples))
		return
	}
	peak := func(ss []sample, f func(sample) int64) int64 {
		m := int64(-1)
		for _, s := range ss {
			m = max(m, f(s))
		}
		return m
	}
	median := func(ss []sample, f func(sample) int64) int64 {
		vs := make([]int64, len(ss))
		for i, s := range ss {
			vs[i] = f(s)
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	second, last := samples[q:2*q], samples[len(samples)-q:]
	for _, c := range []struct {
		name  string
		stat  func([]sample, func(sample) int64) int64
		f     func(sample) int64
		limit func(int64) int64
	}{
		{"anonymous memory (peak)", peak, func(s sample) int64 { return s.anon }, func(v int64) int64 { return v + v/4 }},
		{"descriptors (median)", median, func(s sample) int64 { return int64(s.fds) }, func(v int64) int64 { return v + 8 }},
		{"goroutines (median)", median, func(s sample) int64 { return int64(s.goroutines) }, func(v int64) int64 { return v + v/4 }},
	} {
		a, b := c.stat(second, c.f), c.stat(last, c.f)
		if a < 0 || b < 0 {
			continue // not measured
		}
		t.Logf("%s: %d in the second quarter, %d in the last", c.name, a, b)
		if b > c.limit(a) {
			t.Errorf("%s grew: %d in the second quarter, %d in the last", c.name, a, b)
		}
	}
}
