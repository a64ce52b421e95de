package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// Search benchmarks against the built binary over stdio, on a store of about
// $SESSIONMEM_BENCH_SEARCH_MB (default 100) MB of message JSON: corpus messages of 1 to 4 KB
// in sessions of 170 messages, each message with one extra text block naming a ticket
// (ticket-<n>, unique) and a component (one of 500), so that rare, medium and common words
// all occur. $SESSIONMEM_BENCH_SEARCH_DIR keeps the built store for the next run.
//
//	SESSIONMEM_BENCH_SEARCH_MB=100 go test -run '^$' -bench StdioSearch -benchtime 200x ./cmd/sessionmem/

func searchBenchStore(b *testing.B) (string, int) {
	b.Helper()
	mb := 100
	if v := os.Getenv("SESSIONMEM_BENCH_SEARCH_MB"); v != "" {
		mb, _ = strconv.Atoi(v)
	}
	dir := os.Getenv("SESSIONMEM_BENCH_SEARCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	} else {
		dir = filepath.Join(dir, fmt.Sprintf("search-%dmb", mb))
	}
	buildSizedStore(b, dir, mb)
	return dir, mb
}

// buildSizedStore builds, in dir, a store of about mb MB of message JSON (see above), unless dir
// holds one already (a file bench-complete marks it done).
func buildSizedStore(tb testing.TB, dir string, mb int) {
	tb.Helper()
	done := filepath.Join(dir, "bench-complete")
	if _, err := os.Stat(done); err == nil {
		return
	}
	os.RemoveAll(dir)
	pool := transcripttest.Sized(tb, 5000, 1024, 4096)
	store, err := local.Open(dir, local.Options{Summarize: memory.Summarize, Docs: memory.Docs})
	if err != nil {
		tb.Fatal(err)
	}
	svc := memory.New(store, memory.Options{})
	ctx := context.Background()
	var bytes int64
	start := time.Now()
	for i, s := 0, 0; bytes < int64(mb)<<20; s++ {
		var batch []memory.Message
		for range 170 {
			m := pool[i%len(pool)]
			m.ID = fmt.Sprintf("m%d", i)
			m.Content = append(slices.Clone(m.Content), memory.Block{Type: memory.BlockText,
				Text: fmt.Sprintf("ticket-%d component%d", i, i%500)})
			raw, _ := json.Marshal(m)
			bytes += int64(len(raw))
			batch = append(batch, m)
			i++
		}
		if _, err := svc.Save(ctx, memory.SaveRequest{WorkingDir: fmt.Sprintf("/bench/p%d", s%10), Messages: batch}); err != nil {
			tb.Fatal(err)
		}
	}
	// The index as a full reindex leaves it (queued saves, then optimized).
	t := time.Now()
	if err := store.Reindex(ctx, nil); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("seeded %.0f MB of message JSON in %v; reindex %v (%.1f MB/s)", float64(bytes)/1e6, t.Sub(start).Round(time.Second),
		time.Since(t).Round(100*time.Millisecond), float64(bytes)/1e6/time.Since(t).Seconds())
	if err := store.Close(); err != nil {
		tb.Fatal(err)
	}
	os.WriteFile(done, nil, 0o600)
}

// BenchmarkStdioSearch: session_search round trips (p50) for natural-language questions of 6
// to 15 words and for each v2 query form.
func BenchmarkStdioSearch(b *testing.B) {
	dir, mb := searchBenchStore(b)
	c := stdioClient(b, dir)
	// Each call of a class asks about another component (of 500) and ticket, so that a call
	// finds the common words' lists where earlier calls left them (the index keeps recently
	// used lists) but reads the rare words' lists afresh, as an agent's next question would.
	for _, q := range []struct {
		name string
		args func(i int) obj
	}{
		{"question-6-words", func(i int) obj { return obj{"query": fmt.Sprintf("how did we fix component%d tests?", i%500)} }},
		{"question-9-words", func(i int) obj {
			return obj{"query": fmt.Sprintf("what was the error when running the component%d config tests?", i%500)}
		}},
		{"question-12-words", func(i int) obj {
			return obj{"query": fmt.Sprintf("why did the build fail after we changed the parser and component%d files", i%500)}
		}},
		{"question-15-words", func(i int) obj {
			return obj{"query": fmt.Sprintf("when did we first see the timeout error in component%d and how did we fix it in the end", i%500)}
		}},
		{"rare", func(i int) obj { return obj{"query": fmt.Sprintf("ticket-%d", 4242+i*97)} }},
		{"two-words", func(i int) obj { return obj{"query": fmt.Sprintf("component%d error", i%500)} }},
		{"phrase", func(int) obj { return obj{"query": `"return nil"`} }},
		{"prefix", func(int) obj { return obj{"query": "config*"} }},
		{"common", func(int) obj { return obj{"query": "the"} }},
		{"exclude", func(i int) obj { return obj{"query": fmt.Sprintf("component%d -test", i%500)} }},
		{"dir-filter", func(i int) obj { return obj{"query": "error", "working_dir": fmt.Sprintf("/bench/p%d", i%10)} }},
		{"file-only", func(int) obj { return obj{"file": "README.md"} }},
		{"none", func(i int) obj { return obj{"query": fmt.Sprintf("zzqxjv%d", i)} }},
	} {
		b.Run(fmt.Sprintf("mb=%d/%s", mb, q.name), func(b *testing.B) {
			cpu0, ok := serverCPU(dir)
			benchCall(b, c, "session_search", q.args)
			// The server's CPU per search: what an idle machine's latency would be close to.
			if cpu1, ok1 := serverCPU(dir); ok && ok1 && b.N > 0 {
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "server-cpu-us/op")
			}
		})
	}
}

// BenchmarkStdioSaveIndex: session_save of one ~2 KB corpus message into a session of 1,000,
// with the index and without (SESSIONMEM_SEARCH_INDEX=off), one after the other
// (repeat with -count and compare medians: the machine is shared).
func BenchmarkStdioSaveIndex(b *testing.B) {
	msgs := transcripttest.Sized(b, 30000, 1024, 4096)
	for _, index := range []string{"on", "off"} {
		b.Run("index="+index, func(b *testing.B) {
			dir := b.TempDir()
			id := seedCorpus(b, dir, msgs, 1000)
			c := stdioClient(b, dir, envSearchIndex+"="+index)
			var ds []time.Duration
			i := 1000
			for b.Loop() {
				m := asArgs(b, msgs[i]).(map[string]any)
				m["id"] = fmt.Sprintf("m%d", i)
				i++
				start := time.Now()
				callRaw(b, c, "session_save", obj{"session_id": id, "messages": []any{m}})
				ds = append(ds, time.Since(start))
			}
			b.ReportMetric(float64(median(ds).Nanoseconds())/1e3, "p50-us")
		})
	}
}
