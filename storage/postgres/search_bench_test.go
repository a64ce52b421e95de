package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
	"github.com/sessionmem/sessionmem/storage/storetest"
)

// Search benchmarks on a store generated from the real transcripts in /work/shared/corpus
// (skipped without it): messages of about 2 KB of JSON in memory's format (prompts, tool
// calls on files, tool output, answers), 200 per session. SESSIONMEM_BENCH_MB sets the size
// of message JSON (default 100). Run with
//
//	go test -run '^$' -bench 'Search|AppendDocs' -benchtime 200x -timeout 60m ./storage/postgres/

const benchCorpusDir = "/work/shared/corpus"

type benchCorpus struct {
	text  string
	paths []string
}

var (
	bcOnce sync.Once
	bc     *benchCorpus
)

func loadBenchCorpus(tb testing.TB) *benchCorpus {
	bcOnce.Do(func() {
		files, _ := filepath.Glob(filepath.Join(benchCorpusDir, "*.jsonl"))
		var b strings.Builder
		seen := map[string]bool{}
		c := &benchCorpus{}
		for _, f := range files {
			data, _ := os.ReadFile(f)
			for _, line := range bytes.Split(data, []byte("\n")) {
				var walk func(key string, v gjson.Result)
				walk = func(key string, v gjson.Result) {
					switch {
					case v.IsObject() || v.IsArray():
						v.ForEach(func(k, x gjson.Result) bool { walk(k.String(), x); return true })
					case v.Type == gjson.String && len(v.Str) >= 8 && key != "id" && key != "signature" && key != "data":
						b.WriteString(v.Str)
						b.WriteByte('\n')
						if (key == "file_path" || key == "path") && strings.HasPrefix(v.Str, "/") && !seen[v.Str] {
							seen[v.Str] = true
							c.paths = append(c.paths, v.Str)
						}
					}
				}
				walk("", gjson.ParseBytes(line))
			}
		}
		if b.Len() > 0 && len(c.paths) > 0 {
			c.text = b.String()
			bc = c
		}
	})
	if bc == nil {
		tb.Skip("corpus not found in " + benchCorpusDir)
	}
	return bc
}

// corpusMessage is the i-th message of a session in memory's record format, about 2 KB of
// JSON: a prompt, an assistant text with a tool call on a file, a tool result or an answer,
// in turn; one in eight carries a unique ticket number.
func (c *benchCorpus) message(rng *rand.Rand, i int, wd string, at time.Time) []byte {
	n := 500 + rng.IntN(3000)
	start := rng.IntN(len(c.text) - n)
	for start > 0 && !utf8.RuneStart(c.text[start]) {
		start--
	}
	end := start + n
	for end < len(c.text) && !utf8.RuneStart(c.text[end]) {
		end++
	}
	text := c.text[start:end]
	if rng.IntN(8) == 0 {
		text += fmt.Sprintf(" ticket-%d", rng.Uint64())
	}
	role := []string{"user", "assistant", "tool_result", "assistant"}[i%4]
	content := []any{map[string]any{"type": "text", "text": text}}
	switch i % 4 {
	case 1:
		p := c.paths[rng.IntN(len(c.paths))]
		if rng.IntN(2) == 0 {
			p = wd + "/" + filepath.Base(filepath.Dir(p)) + "/" + filepath.Base(p)
		}
		content = []any{map[string]any{"type": "text", "text": text[:len(text)/4]},
			map[string]any{"type": "tool_call", "id": "c" + strconv.Itoa(i), "name": "read", "arguments": map[string]any{"path": p}}}
	case 2:
		content = []any{map[string]any{"type": "tool_result", "tool_call_id": "c" + strconv.Itoa(i-1), "content": content}}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{"id": fmt.Sprintf("e%d", i), "ts": at.Format(time.RFC3339Nano),
		"message": map[string]any{"role": role, "content": content}})
	return bytes.TrimSpace(b.Bytes())
}

func benchMB() int64 {
	if v, err := strconv.ParseInt(os.Getenv("SESSIONMEM_BENCH_MB"), 10, 64); err == nil && v > 0 {
		return v
	}
	return 100
}

// searchStore is the generated store, built once per process.
type searchStore struct {
	s        *Store
	bytes    int64
	messages int
	loadDur  time.Duration // appends without documents
	reindex  time.Duration // Reindex of all of it
	tickets  []string
	words    []string // a few words of some messages, for multi-word queries
	// questions are natural-language questions of 5-15 words about some messages
	questions []string
	paths     []string
}

var (
	ssOnce sync.Once
	ss     *searchStore
)

func buildSearchStore(b *testing.B) *searchStore {
	c := loadBenchCorpus(b)
	ssOnce.Do(func() {
		url := os.Getenv(benchURLEnv)
		if url == "" {
			url = benchDB(b)
		}
		// Loaded without Docs (so Reindex below measures building every document), then
		// searched through a handle with Docs.
		plain, err := Open(context.Background(), url, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer plain.Close()
		var have int64
		if err := plain.pool.QueryRow(context.Background(), `SELECT count(*) FROM sessionmem_sessions`).Scan(&have); err != nil {
			b.Fatal(err)
		}
		out := &searchStore{}
		start := time.Now()
		// With a database of a previous run (benchURLEnv), the same messages are generated
		// again for the query lists, and not written.
		c.generate(b, out, benchMB()<<20, func(id, wd string, when time.Time) {
			if have > 0 {
				return
			}
			if err := plain.Create(context.Background(), storage.Header{ID: id, WorkingDir: wd, Created: when}, storage.Meta{Name: "session " + id}); err != nil {
				b.Fatal(err)
			}
		}, func(id string, recs []storage.Record, messages int) {
			if have > 0 {
				return
			}
			if err := plain.Update(context.Background(), id, func(w storage.Writer) error {
				_, err := w.Append(recs, storage.Meta{Messages: messages})
				return err
			}); err != nil {
				b.Fatal(err)
			}
		})
		out.loadDur = time.Since(start)
		s, err := Open(context.Background(), url, Options{Docs: storetest.Docs, BackfillInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if err := s.Reindex(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		out.reindex = time.Since(start)
		if _, err := s.pool.Exec(context.Background(), `VACUUM ANALYZE sessionmem_documents`); err != nil {
			b.Fatal(err)
		}
		u, _ := s.Usage(context.Background())
		fmt.Fprintf(os.Stderr, "search store: %d MB of message JSON, %d messages; load %s; reindex %s (%.1f MB/s); tables %d MB, documents %d MB\n",
			out.bytes>>20, out.messages, out.loadDur.Round(time.Millisecond), out.reindex.Round(time.Millisecond),
			float64(out.bytes)/(1<<20)/out.reindex.Seconds(), u.Total>>20, u.Documents>>20)
		rows, err := s.pool.Query(context.Background(), `SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c
			WHERE c.relname LIKE 'sessionmem_documents%' OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE relname = 'sessionmem_documents')
			ORDER BY 2 DESC`)
		if err == nil {
			for rows.Next() {
				var name string
				var size int64
				if rows.Scan(&name, &size) == nil {
					fmt.Fprintf(os.Stderr, "  %s: %.1f MB\n", name, float64(size)/(1<<20))
				}
			}
			rows.Close()
		}
		out.s = s
		ss = out
	})
	if ss == nil {
		b.Fatal("search store not built")
	}
	return ss
}

// benchURLEnv names the URL of a database to build the search store in, or to reuse it from
// an earlier run (loading 100 MB takes minutes): SESSIONMEM_BENCH_PG_URL=postgres://...
const benchURLEnv = "SESSIONMEM_BENCH_PG_URL"

// generate makes total bytes of message JSON in sessions of 200 messages (20 working
// directories, an hour apart), calling create for each session and save for each batch of 50
// records, and collects the query material (tickets, words, paths) into out.
func (c *benchCorpus) generate(b *testing.B, out *searchStore, total int64, create func(id, wd string, when time.Time),
	save func(id string, recs []storage.Record, messages int)) {
	rng := rand.New(rand.NewPCG(42, 7))
	qrng := rand.New(rand.NewPCG(9, 9)) // apart, so the store is the one earlier runs measured
	when := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for n := 0; out.bytes < total; n++ {
		id := fmt.Sprintf("s%05d", n)
		wd := fmt.Sprintf("/home/dev/project%02d", n%20)
		create(id, wd, when)
		for i := 0; i < 200 && out.bytes < total; i += 50 {
			recs := make([]storage.Record, 0, 50)
			for j := i; j < i+50; j++ {
				m := c.message(rng, j, wd, when.Add(time.Duration(j)*time.Second))
				out.bytes += int64(len(m))
				out.messages++
				text := gjson.GetBytes(m, `message.content.0.text`).Str
				if strings.Contains(text, " ticket-") && rng.IntN(4) == 0 {
					out.tickets = append(out.tickets, text[strings.LastIndex(text, "ticket-"):])
				}
				if rng.IntN(200) == 0 {
					if ws := fts.Terms(text); len(ws) > 40 {
						out.words = append(out.words, strings.Join(ws[20:22], " "))
					}
				}
				if qrng.IntN(100) == 0 {
					if q := question(qrng, text); q != "" {
						out.questions = append(out.questions, q)
					}
				}
				if p := gjson.GetBytes(m, `message.content.1.arguments.path`).Str; p != "" && rng.IntN(50) == 0 {
					out.paths = append(out.paths, p)
				}
				recs = append(recs, storage.Record{Kind: "message", Data: m})
			}
			save(id, recs, i+50)
		}
		when = when.Add(time.Hour)
	}
}

// BenchmarkSearch: search latency on the generated store, per query class; each iteration
// runs one query of the class (cycling through several), and the median and p99 are reported.
func BenchmarkSearch(b *testing.B) {
	st := buildSearchStore(b)
	common := []string{"the", "error", "func", "file", "test"}
	mid := []string{"migration", "timeout", "retry", "deadline", "goroutine"}
	classes := []struct {
		name  string
		query func(i int) storage.SearchQuery
	}{
		{"question", func(i int) storage.SearchQuery { return q(st.questions[i%len(st.questions)]) }},
		{"question+dir", func(i int) storage.SearchQuery {
			x := q(st.questions[i%len(st.questions)])
			x.WorkingDir = fmt.Sprintf("/home/dev/project%02d", i%20)
			return x
		}},
		{"rare-ticket", func(i int) storage.SearchQuery { return q(st.tickets[i%len(st.tickets)]) }},
		{"two-words", func(i int) storage.SearchQuery { return q(st.words[i%len(st.words)]) }},
		{"two-required", func(i int) storage.SearchQuery {
			w := strings.Fields(st.words[i%len(st.words)])
			return q("+" + strings.Join(w, " +"))
		}},
		{"word-exclude", func(i int) storage.SearchQuery {
			return q(mid[i%len(mid)] + " -" + common[(i+1)%len(common)])
		}},
		{"phrase", func(i int) storage.SearchQuery { return q(`"` + st.words[i%len(st.words)] + `"`) }},
		{"mid-word", func(i int) storage.SearchQuery { return q(mid[i%len(mid)]) }},
		{"common-word", func(i int) storage.SearchQuery { return q(common[i%len(common)]) }},
		{"prefix", func(i int) storage.SearchQuery { return q([]string{"conf*", "migr*", "handl*"}[i%3]) }},
		{"word+dir", func(i int) storage.SearchQuery {
			x := q(mid[i%len(mid)])
			x.WorkingDir = fmt.Sprintf("/home/dev/project%02d", i%20)
			return x
		}},
		{"file-only", func(i int) storage.SearchQuery { return storage.SearchQuery{File: st.paths[i%len(st.paths)]} }},
		{"nothing", func(i int) storage.SearchQuery { return q(fmt.Sprintf("zzqx%dnomatch", i)) }},
	}
	var all []time.Duration
	defer func() {
		if len(all) > 0 {
			slices.Sort(all)
			fmt.Fprintf(os.Stderr, "all classes: %d searches, p50 %.2f ms, p90 %.2f ms\n", len(all),
				float64(all[len(all)/2].Microseconds())/1e3, float64(all[len(all)*9/10].Microseconds())/1e3)
		}
	}()
	for _, cl := range classes {
		b.Run(cl.name, func(b *testing.B) {
			var ds []time.Duration
			hits := 0
			windowed := 0
			scored, rounds := st.s.scored.Load(), st.s.rounds.Load()
			pg0, pgOK := backendCPU(st.s)
			go0 := processCPU()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				res, err := st.s.Search(context.Background(), cl.query(i))
				ds = append(ds, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				hits += len(res.Hits)
				if res.Windowed {
					windowed++
				}
			}
			all = append(all, ds...)
			goCPU := processCPU() - go0
			if pg1, ok := backendCPU(st.s); ok && pgOK {
				b.ReportMetric(float64((pg1-pg0).Microseconds())/1e3/float64(len(ds)), "pg-cpu-ms/op")
			}
			b.ReportMetric(float64(goCPU.Microseconds())/1e3/float64(len(ds)), "go-cpu-ms/op")
			medianOf(b, ds)
			b.ReportMetric(float64(hits)/float64(len(ds)), "hits/op")
			b.ReportMetric(float64(windowed)/float64(len(ds)), "windowed/op")
			b.ReportMetric(float64(st.s.scored.Load()-scored)/float64(len(ds)), "scored/op")
			b.ReportMetric(float64(st.s.rounds.Load()-rounds)/float64(len(ds)), "rounds/op")
		})
	}
}

func q(query string) storage.SearchQuery {
	m, err := fts.Parse(query)
	if err != nil {
		panic(err)
	}
	return storage.SearchQuery{Match: m}
}

// BenchmarkAppendDocs: the added cost of writing documents on a save. Two stores on one
// database, one with Docs and one without, append one ~2 KB corpus message (with its key)
// in alternation, so both see the same load; the medians of each are reported.
func BenchmarkAppendDocs(b *testing.B) {
	c := loadBenchCorpus(b)
	url := benchDB(b)
	with := openStore(b, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	without := openStore(b, url, Options{})
	ctx := context.Background()
	for _, id := range []string{"with", "without"} {
		if err := with.Create(ctx, storage.Header{ID: id, WorkingDir: "/home/dev/p"}, storage.Meta{}); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var dw, dn []time.Duration
	for i := 0; b.Loop(); i++ {
		m := c.message(rng, i, "/home/dev/p", time.Now())
		for k, st := range []*Store{with, without} {
			id := []string{"with", "without"}[k]
			if i%2 == 1 {
				st, id = []*Store{without, with}[k], []string{"without", "with"}[k]
			}
			start := time.Now()
			err := st.Update(ctx, id, func(w storage.Writer) error {
				_, err := w.Append([]storage.Record{{Kind: "message", Data: m, Key: fmt.Sprintf("k%d", i)}}, storage.Meta{Messages: i + 1})
				return err
			})
			d := time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			if st == with {
				dw = append(dw, d)
			} else {
				dn = append(dn, d)
			}
		}
	}
	b.StopTimer()
	slices.Sort(dw)
	slices.Sort(dn)
	b.ReportMetric(float64(dw[len(dw)/2].Microseconds()), "with-docs-median-us")
	b.ReportMetric(float64(dn[len(dn)/2].Microseconds()), "without-median-us")
	b.ReportMetric(float64(dw[len(dw)*99/100].Microseconds()), "with-docs-p99-us")
	b.ReportMetric(float64(dn[len(dn)*99/100].Microseconds()), "without-p99-us")
}

// questionForms are natural-language questions as agents ask the memory; %s are 2-5 words of
// a message.
var questionForms = []string{
	"when did we fix the %s?",
	"what did the user say about %s",
	"how do we handle %s in this project",
	"why was the %s changed last time",
	"where is the %s defined and who uses it",
	"did we ever discuss %s before the release",
	"what was the problem with %s and how did we solve it",
}

// question makes a question of 5-15 words from 2-5 distinct plain words (4 letters or more,
// not function words) of text, or "" when text has too few.
func question(rng *rand.Rand, text string) string {
	var words []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) {
		w = strings.ToLower(w)
		if len(w) >= 4 && !fts.IsStopWord(w) && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	if len(words) < 5 {
		return ""
	}
	n := 2 + rng.IntN(4)
	start := rng.IntN(len(words) - n + 1)
	form := questionForms[rng.IntN(len(questionForms))]
	return fmt.Sprintf(form, strings.Join(words[start:start+n], " "))
}

// backendCPU sums the CPU time the store's database's server processes have used
// (/proc/<pid>/schedstat, so only for a server on this machine): a measure of a search's work
// that, unlike its latency, does not grow with what else the machine runs.
func backendCPU(s *Store) (time.Duration, bool) {
	rows, err := s.pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return 0, false
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, false
	}
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			return 0, false
		}
		ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}
