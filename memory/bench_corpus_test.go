package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// Benchmarks with real messages: corpus messages of 1 to 4 KB (about 2 KB on average), in
// long uncompacted sessions, the way agents use sessionmem. docs/BENCHMARKS.md gives the
// command and the figures; each reports the median of its calls as p50-us where a median
// says more than a mean.

func corpusService(b *testing.B) *memory.Service {
	b.Helper()
	store, err := local.Open(b.TempDir(), local.Options{Summarize: memory.Summarize})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return memory.New(store, memory.Options{})
}

// fillCorpus saves n corpus messages into a new session, 500 per call.
func fillCorpus(b *testing.B, s *memory.Service, msgs []memory.Message, n int) string {
	b.Helper()
	id := ""
	for i := 0; i < n; i += 500 {
		batch := slices.Clone(msgs[i:min(i+500, n)])
		for j := range batch {
			batch[j].ID = fmt.Sprintf("m%d", i+j)
		}
		res, err := s.Save(context.Background(), memory.SaveRequest{SessionID: id, WorkingDir: "/bench", Messages: batch})
		if err != nil {
			b.Fatal(err)
		}
		id = res.SessionID
	}
	return id
}

func reportMedian(b *testing.B, ds []time.Duration, unit string) {
	b.Helper()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, unit)
}

// BenchmarkSaveCorpus: one session_save of one ~2 KB corpus message (durable) into a session
// that already holds 1,000 or 10,000 messages.
func BenchmarkSaveCorpus(b *testing.B) {
	for _, at := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("at=%d", at), func(b *testing.B) {
			s := corpusService(b)
			msgs := transcripttest.Sized(b, at+20000, 1024, 4096)
			id := fillCorpus(b, s, msgs, at)
			var ds []time.Duration
			i := at
			for b.Loop() {
				m := msgs[i]
				m.ID = fmt.Sprintf("m%d", i)
				i++
				start := time.Now()
				if _, err := s.Save(context.Background(), memory.SaveRequest{SessionID: id, Messages: []memory.Message{m}}); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			reportMedian(b, ds, "p50-us")
		})
	}
}

// resumeAll pages through a whole resume and returns the number of messages. Like the MCP
// server, it takes the messages as stored JSON (ResumeRequest.Raw).
func resumeAll(b *testing.B, s *memory.Service, id string, maxTokens int) int {
	b.Helper()
	n, cursor := 0, ""
	for {
		res, err := s.Resume(context.Background(), memory.ResumeRequest{SessionID: id, MaxTokens: maxTokens, Cursor: cursor, Raw: true})
		if err != nil {
			b.Fatal(err)
		}
		n += len(res.RawMessages)
		if cursor = res.NextCursor; cursor == "" {
			return n
		}
	}
}

// BenchmarkResumeFull: every page of a resume (max_tokens 100,000) of an uncompacted session
// of 2,000 or 6,000 corpus messages, warm (the service has seen the session).
func BenchmarkResumeFull(b *testing.B) {
	for _, n := range []int{2000, 6000} {
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
			s := corpusService(b)
			id := fillCorpus(b, s, transcripttest.Sized(b, n, 1024, 4096), n)
			var ds []time.Duration
			for b.Loop() {
				start := time.Now()
				if got := resumeAll(b, s, id, 100000); got != n {
					b.Fatalf("resumed %d messages, want %d", got, n)
				}
				ds = append(ds, time.Since(start))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1e3, "p50-ms")
			b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3/float64(n), "us/msg")
		})
	}
}

// BenchmarkResumeFullCold: every page of a resume (max_tokens 100,000) of an uncompacted
// session of 2,000 corpus messages by a new store and service each time, as a server's first
// call after it started (the store's files in the page cache, the state from its snapshot).
func BenchmarkResumeFullCold(b *testing.B) {
	const n = 2000
	dir := b.TempDir()
	opts := local.Options{Summarize: memory.Summarize}
	store, err := local.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	s := memory.New(store, memory.Options{})
	id := fillCorpus(b, s, transcripttest.Sized(b, n, 1024, 4096), n)
	s.Close() // writes the state snapshot a restarted server reads
	store.Close()
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		store, err := local.Open(dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		s := memory.New(store, memory.Options{})
		if got := resumeAll(b, s, id, 100000); got != n {
			b.Fatalf("resumed %d messages, want %d", got, n)
		}
		ds = append(ds, time.Since(start))
		s.Close()
		store.Close()
	}
	reportMedian(b, ds, "p50-us")
}

// BenchmarkResumeFirstPage: the first page at the default max_tokens of an uncompacted session
// of 2,000 or 6,000 corpus messages: warm; cold (a new service, as after a server start, with
// the store already open) restoring the state from the snapshot the previous service wrote
// when it closed; and cold without snapshots (built from the whole log, as after a kill -9
// before any snapshot was written).
func BenchmarkResumeFirstPage(b *testing.B) {
	for _, n := range []int{2000, 6000} {
		for _, mode := range []string{"warm", "cold", "cold-nosnapshot"} {
			b.Run(fmt.Sprintf("msgs=%d/%s", n, mode), func(b *testing.B) {
				s := corpusService(b)
				id := fillCorpus(b, s, transcripttest.Sized(b, n, 1024, 4096), n)
				s.Close() // writes the snapshot
				var ds []time.Duration
				for b.Loop() {
					svc := s
					if mode != "warm" {
						svc = memory.New(s.Store(), memory.Options{NoSnapshots: mode == "cold-nosnapshot"})
					}
					start := time.Now()
					res, err := svc.Resume(context.Background(), memory.ResumeRequest{SessionID: id, Raw: true})
					if err != nil || len(res.RawMessages) == 0 {
						b.Fatal(err)
					}
					ds = append(ds, time.Since(start))
				}
				reportMedian(b, ds, "p50-us")
				if mode == "cold" { // after the loop: b.Loop's first call drops metrics reported before it
					fi, err := os.Stat(filepath.Join(s.Store().(*local.Store).Dir(), "sessions", id+".state"))
					if err != nil {
						b.Fatalf("no snapshot: %v", err)
					}
					b.ReportMetric(float64(fi.Size())/float64(n), "snapshot-B/msg")
				}
			})
		}
	}
}

// BenchmarkListPages: list 1,000 sessions in pages of 100.
func BenchmarkListPages(b *testing.B) {
	s := corpusService(b)
	for i := range 1000 {
		m := memory.Message{Role: memory.RoleUser, Content: []memory.Block{{Type: memory.BlockText, Text: fmt.Sprintf("prompt %d: fix the failing test", i)}}}
		if _, err := s.Save(context.Background(), memory.SaveRequest{WorkingDir: fmt.Sprintf("/w/%d", i%10),
			Name: fmt.Sprintf("session %d", i), Messages: []memory.Message{m}}); err != nil {
			b.Fatal(err)
		}
	}
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		n, cursor := 0, ""
		for {
			res, err := s.List(context.Background(), memory.ListRequest{Limit: 100, Cursor: cursor})
			if err != nil {
				b.Fatal(err)
			}
			n += len(res.Sessions)
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		if n != 1000 {
			b.Fatalf("listed %d sessions", n)
		}
		ds = append(ds, time.Since(start))
	}
	reportMedian(b, ds, "p50-us")
}

// BenchmarkDecodeInputMessage: checking and decoding one ~2 KB corpus message as a transport
// hands it over (its JSON as the client sent it), the first step of every save.
func BenchmarkDecodeInputMessage(b *testing.B) {
	var raws [][]byte
	for _, m := range transcripttest.Sized(b, 200, 1024, 4096) {
		raw, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
	}
	i := 0
	for b.Loop() {
		if _, err := memory.DecodeInputMessage(raws[i%len(raws)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
