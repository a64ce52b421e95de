package ftsindex

// Benchmarks on generated stores (gen_test.go). Sizes are megabytes of message JSON, from
// FTSINDEX_BENCH_MB (default 8, so that `go test -bench .` stays short); the figures in
// docs/BENCHMARKS.md use 100 and 1000:
//
//	FTSINDEX_BENCH_MB=100 go test -run '^$' -bench 'Reindex|Search' -benchtime 1x ./storage/ftsindex/
//
// FTSINDEX_BENCH_DIR keeps the built index there for the next run (Search benchmarks only).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

func benchMB() int64 {
	if v, err := strconv.Atoi(os.Getenv("FTSINDEX_BENCH_MB")); err == nil && v > 0 {
		return int64(v)
	}
	return 8
}

var (
	genMu    sync.Mutex
	genCache = map[int64][]genSession{}
)

func genStore(b *testing.B, mb int64) ([]genSession, int64) {
	c := loadCorpus(b)
	genMu.Lock()
	defer genMu.Unlock()
	s, ok := genCache[mb]
	if !ok {
		s = generate(c, mb<<20, 200, 1)
		genCache[mb] = s
	}
	var total int64
	for _, x := range s {
		for _, m := range x.messages {
			total += int64(len(m))
		}
	}
	return s, total
}

// BenchmarkReindex indexes a whole generated store into an empty index, the work of
// `sessionmem reindex` after the store was read: message JSON to Docs (gjson), terms, FTS5.
// MB/s is of message JSON.
func BenchmarkReindex(b *testing.B) {
	sessions, total := genStore(b, benchMB())
	b.SetBytes(total)
	b.ResetTimer()
	var cpu time.Duration
	for b.Loop() {
		ix, err := Open(b.Context(), b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		c0 := cpuTime()
		reindex(b, ix, sessions)
		cpu += cpuTime() - c0
		b.StopTimer()
		// Sizes after Close (which checkpoints and removes the WAL), then after Optimize.
		file := ix.File()
		ix.Close()
		b.ReportMetric(float64(fileSize(b, file))/float64(total), "index/json")
		ix, err = Open(b.Context(), filepath.Dir(file), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := ix.Optimize(b.Context()); err != nil {
			b.Fatal(err)
		}
		ix.Close()
		b.ReportMetric(float64(fileSize(b, file))/float64(total), "optimized/json")
		b.StartTimer()
	}
	// CPU seconds are steadier than wall time on a shared machine.
	b.ReportMetric(float64(total)*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
}

// reindex feeds every session through IndexAll, as a rebuild will: the iterator turns
// message JSON into Docs (memory's hook) while the previous transaction commits.
func reindex(tb testing.TB, ix *Index, sessions []genSession) {
	err := ix.IndexAll(context.Background(), func(yield func(Batch, error) bool) {
		const per = 256
		for _, s := range sessions {
			for start := 0; start < len(s.messages); start += per {
				end := min(start+per, len(s.messages))
				bt := Batch{Session: s.Session, From: uint64(start + 1), Through: uint64(end)}
				for i := start; i < end; i++ {
					bt.Docs = append(bt.Docs, docFromJSON(s.ID, uint64(i+1), s.Created.Add(time.Duration(i)*time.Second), s.messages[i]))
				}
				if !yield(bt, nil) {
					return
				}
			}
		}
	}, BulkOptions{})
	if err != nil {
		tb.Fatal(err)
	}
}

var (
	builtMu sync.Mutex
	built   = map[int64]string{}
)

// builtIndex returns the directory of an index of the generated store of mb megabytes,
// building it once per process (or once, in FTSINDEX_BENCH_DIR).
func builtIndex(b *testing.B, mb int64) (string, []genSession) {
	sessions, _ := genStore(b, mb)
	builtMu.Lock()
	defer builtMu.Unlock()
	if dir, ok := built[mb]; ok {
		return dir, sessions
	}
	var dir string
	if root := os.Getenv("FTSINDEX_BENCH_DIR"); root != "" {
		dir = filepath.Join(root, fmt.Sprintf("store-%dMB", mb))
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "ftsbench"); err != nil {
			b.Fatal(err)
		}
	}
	ix, err := Open(context.Background(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	if st, _ := ix.Stats(context.Background()); st.Sessions != int64(len(sessions)) {
		start := time.Now()
		reindex(b, ix, sessions)
		b.Logf("built %d MB store index in %s", mb, time.Since(start).Round(time.Millisecond))
		if err := ix.Optimize(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	built[mb] = dir
	return dir, sessions
}

// benchQueries picks query words from the generated docs by document frequency.
type benchQueries struct {
	rare, medium, common []string // df about 0.01-0.05%, 0.5-2%, 10-30% of docs
}

func pickQueries(sessions []genSession) benchQueries {
	rng := rand.New(rand.NewPCG(3, 4))
	df := map[string]int{}
	n := 0
	for n < 5000 {
		s := sessions[rng.IntN(len(sessions))]
		m := s.messages[rng.IntN(len(s.messages))]
		d := docFromJSON(s.ID, 1, s.Created, m)
		seen := map[string]bool{}
		for _, t := range fts.Terms(d.Text) {
			if !seen[t] && len(t) >= 4 {
				seen[t] = true
				df[t]++
			}
		}
		n++
	}
	var q benchQueries
	terms := make([]string, 0, len(df))
	for t := range df {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	rng.Shuffle(len(terms), func(i, j int) { terms[i], terms[j] = terms[j], terms[i] })
	for _, t := range terms {
		f := float64(df[t]) / float64(n)
		switch {
		case f >= 0.0002 && f <= 0.0006 && len(q.rare) < 20:
			q.rare = append(q.rare, t)
		case f >= 0.005 && f <= 0.02 && len(q.medium) < 20:
			q.medium = append(q.medium, t)
		case f >= 0.10 && f <= 0.30 && len(q.common) < 20:
			q.common = append(q.common, t)
		}
	}
	return q
}

// BenchmarkSearch runs query classes against a built index and reports each class's p50
// and p90 in milliseconds, first page of 10 hits (the default limit).
func BenchmarkSearch(b *testing.B) {
	mb := benchMB()
	dir, sessions := builtIndex(b, mb)
	ix, err := Open(b.Context(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	q := pickQueries(sessions)
	parse := func(s string) *fts.Query { return mustParse(b, s) }
	c := loadCorpus(b)
	wd := sessions[0].WorkingDir
	sid := sessions[len(sessions)/2].ID
	last := sessions[len(sessions)-1].Created
	pathQ := func(i int) string { // last two segments of a corpus path: dir/file.ext
		p := c.paths[i%len(c.paths)]
		return filepath.Base(filepath.Dir(p)) + "/" + filepath.Base(p)
	}
	questions := pickQuestions(sessions)
	classes := []struct {
		name  string
		query func(i int) Query
	}{
		{"question-5-8-words", func(i int) Query { return Query{Match: parse(questions.short[i%len(questions.short)])} }},
		{"question-10-15-words", func(i int) Query { return Query{Match: parse(questions.long[i%len(questions.long)])} }},
		{"rare-word", func(i int) Query { return Query{Match: parse(q.rare[i%len(q.rare)])} }},
		{"medium-word", func(i int) Query { return Query{Match: parse(q.medium[i%len(q.medium)])} }},
		{"common-word", func(i int) Query { return Query{Match: parse(q.common[i%len(q.common)])} }},
		{"two-medium-words", func(i int) Query {
			return Query{Match: parse(q.medium[i%len(q.medium)] + " " + q.medium[(i+7)%len(q.medium)])}
		}},
		{"medium-and-common", func(i int) Query {
			return Query{Match: parse(q.medium[i%len(q.medium)] + " " + q.common[(i+3)%len(q.common)])}
		}},
		{"phrase", func(i int) Query {
			return Query{Match: parse(`"` + q.common[i%len(q.common)] + " " + q.common[(i+1)%len(q.common)] + `"`)}
		}},
		{"prefix", func(i int) Query { // all but the last two letters of a medium word, 4 or more
			w := q.medium[i%len(q.medium)]
			return Query{Match: parse(w[:max(4, len(w)-2)] + "*")}
		}},
		{"prefix-3-letters", func(i int) Query { return Query{Match: parse(q.medium[i%len(q.medium)][:3] + "*")} }},
		{"path", func(i int) Query { return Query{Match: parse(pathQ(i))} }},
		{"common-excluding", func(i int) Query {
			return Query{Match: parse(q.common[i%len(q.common)] + " -" + q.medium[i%len(q.medium)])}
		}},
		{"medium-in-working-dir", func(i int) Query { return Query{Match: parse(q.medium[i%len(q.medium)]), WorkingDir: wd} }},
		{"common-in-session", func(i int) Query { return Query{Match: parse(q.common[i%len(q.common)]), SessionID: sid} }},
		{"common-by-role", func(i int) Query { return Query{Match: parse(q.common[i%len(q.common)]), Role: "user"} }},
		{"medium-last-week", func(i int) Query {
			return Query{Match: parse(q.medium[i%len(q.medium)]), Since: last.Add(-7 * 24 * time.Hour)}
		}},
		{"file-only", func(i int) Query { return Query{File: c.paths[i%len(c.paths)]} }},
		{"file-relative-and-word", func(i int) Query {
			return Query{File: pathQ(i), Match: parse(q.common[i%len(q.common)])}
		}},
	}
	var all, allCPU []time.Duration
	for _, cl := range classes {
		b.Run(cl.name, func(b *testing.B) {
			// A search runs on the calling goroutine's thread (the driver calls SQLite
			// synchronously), so the thread's CPU time is the search's: on a shared,
			// loaded machine it shows what wall time would be on an idle one.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var ds, cpus []time.Duration
			i := 0
			for b.Loop() {
				start, c0 := time.Now(), threadCPU()
				if _, err := ix.Search(b.Context(), cl.query(i)); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
				cpus = append(cpus, threadCPU()-c0)
				i++
			}
			reportPercentiles(b, ds)
			slices.Sort(cpus)
			b.ReportMetric(ms(cpus[len(cpus)/2]), "cpu-p50-ms")
			all = append(all, ds...)
			allCPU = append(allCPU, cpus...)
		})
	}
	if len(all) > 0 {
		slices.Sort(all)
		slices.Sort(allCPU)
		b.Logf("%d MB: all classes p50 %.2f ms (CPU %.2f ms) over %d searches", mb, ms(all[len(all)/2]), ms(allCPU[len(allCPU)/2]), len(all))
	}
}

// benchQuestions are natural-language questions of 5-8 and 10-15 words: function words
// around content words taken from one generated message each, as an agent asks about
// something it once saw.
type benchQuestions struct{ short, long []string }

func pickQuestions(sessions []genSession) benchQuestions {
	rng := rand.New(rand.NewPCG(7, 8))
	frames := [][2]string{{"how did we", "?"}, {"what was the", "about"}, {"why did the", "fail"}, {"where did we change", ""}, {"when did we fix", "again"}}
	var q benchQuestions
	for len(q.short) < 40 || len(q.long) < 40 {
		s := sessions[rng.IntN(len(sessions))]
		m := s.messages[rng.IntN(len(s.messages))]
		var words []string
		for _, t := range fts.Tokenize(docFromJSON(s.ID, 1, s.Created, m).Text) {
			if len(t.Term) >= 4 && !fts.IsStopWord(t.Term) {
				words = append(words, t.Term)
			}
		}
		if len(words) < 12 {
			continue
		}
		f := frames[rng.IntN(len(frames))]
		n := 2 + rng.IntN(3) // 5-8 words with the frame
		list := &q.short
		if len(q.short) >= 40 {
			n, list = 7+rng.IntN(5), &q.long // 10-15
		}
		start := rng.IntN(len(words) - n)
		*list = append(*list, f[0]+" "+strings.Join(words[start:start+n], " ")+" "+f[1])
	}
	return q
}

func reportPercentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(ms(ds[len(ds)/2]), "p50-ms")
	b.ReportMetric(ms(ds[len(ds)*9/10]), "p90-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkIndexOne is the cost a save would add if it indexed its one ~2 KB message in its
// own transaction (no batching), on an index that already holds a store.
func BenchmarkIndexOne(b *testing.B) {
	benchIndexEach(b, 1)
}

// BenchmarkIndexBatch32 is the cost per message when a background indexer commits 32 at a
// time.
func BenchmarkIndexBatch32(b *testing.B) {
	benchIndexEach(b, 32)
}

func benchIndexEach(b *testing.B, per int) {
	sessions, _ := genStore(b, 8)
	ix, err := Open(b.Context(), b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	reindex(b, ix, sessions[:len(sessions)/2])
	msgs := sessions[len(sessions)/2:]
	s := Session{ID: "live", Created: time.Now(), WorkingDir: "/home/dev/live"}
	var seq uint64
	var bytes int64
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		bt := Batch{Session: s, From: seq + 1}
		for range per {
			seq++
			src := msgs[int(seq)%len(msgs)]
			m := src.messages[int(seq)%len(src.messages)]
			bytes += int64(len(m))
			bt.Docs = append(bt.Docs, docFromJSON(s.ID, seq, time.Now(), m))
		}
		bt.Through = seq
		if _, err := ix.Index(b.Context(), bt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(seq), "µs/msg")
	b.ReportMetric(float64((cpuTime()-c0).Microseconds())/float64(seq), "cpu-µs/msg")
	b.ReportMetric(float64(bytes)/float64(seq), "json-bytes/msg")
}

// BenchmarkQueue is live indexing as a server will do it: each save adds its one message to
// a Queue (the time a save waits, reported as ns/op) and the background goroutine indexes
// them in shared transactions; cpu-µs/msg is all the CPU the indexing costs per message.
func BenchmarkQueue(b *testing.B) {
	sessions, _ := genStore(b, 8)
	ix, err := Open(b.Context(), b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	reindex(b, ix, sessions[:len(sessions)/2])
	msgs := sessions[len(sessions)/2:]
	q := ix.NewQueue(QueueOptions{OnError: func(err error) { b.Error(err) }})
	s := Session{ID: "live", Created: time.Now(), WorkingDir: "/home/dev/live"}
	var seq uint64
	var adds time.Duration
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		seq++
		src := msgs[int(seq)%len(msgs)]
		d := docFromJSON(s.ID, seq, time.Now(), src.messages[int(seq)%len(src.messages)])
		start := time.Now()
		if err := q.Add(Batch{Session: s, From: seq, Through: seq, Docs: []fts.Doc{d}}); err != nil {
			b.Fatal(err)
		}
		adds += time.Since(start)
		time.Sleep(200 * time.Microsecond) // a save's own work between two adds
	}
	if err := q.Close(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(adds.Nanoseconds())/float64(seq), "add-ns/msg")
	b.ReportMetric(float64((cpuTime()-c0).Microseconds())/float64(seq), "cpu-µs/msg")
	if p, _ := ix.Progress(b.Context(), "live"); p.Through != seq {
		b.Fatalf("progress %d, want %d", p.Through, seq)
	}
}

func fileSize(tb testing.TB, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}
