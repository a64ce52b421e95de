package local

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/internal/testpaths"
)

// corpusDir holds the shared corpus of full transcripts ("" when absent: tests using it skip).
var corpusDir = testpaths.CorpusDir()

// benchLines returns at least n record payloads: the lines of the named corpus file (cycled),
// or synthetic messages when the corpus is absent (fresh clone without ../shared).
func benchLines(b *testing.B, file string, n int) [][]byte {
	b.Helper()
	var src [][]byte
	if f, err := os.Open(filepath.Join(corpusDir, file)); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			l := sc.Bytes()
			if gjson.ValidBytes(l) && !gjson.GetBytes(l, "seq").Exists() && len(l) > 0 && l[0] == '{' {
				src = append(src, append([]byte(nil), l...))
			}
		}
		f.Close()
	}
	if len(src) == 0 {
		b.Logf("corpus %s not found; using synthetic lines", file)
		for i := range 500 {
			src = append(src, fmt.Appendf(nil, `{"type":"message","role":"assistant","content":[{"type":"text","text":"step %d: reading the file and running the tests again %s"}]}`, i, bytes.Repeat([]byte("lorem ipsum "), i%40)))
		}
	}
	if n <= 0 {
		return src
	}
	out := make([][]byte, 0, n)
	for len(out) < n {
		out = append(out, src[len(out)%len(src)])
	}
	return out
}

// benchDir is b.TempDir(), or tmpfs with STORAGE_BENCH_TMPFS=1 to see the CPU cost without
// the disk's fsync latency.
func benchDir(b *testing.B) string {
	if os.Getenv("STORAGE_BENCH_TMPFS") != "" {
		return memTempDir(b)
	}
	return b.TempDir()
}

const benchCorpus = "cc-ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"

func fillSession(b *testing.B, s *Store, id string, lines [][]byte, barrierAt int) {
	b.Helper()
	if err := s.Create(context.Background(), storage.Header{ID: id, WorkingDir: "/w"}, storage.Meta{}); err != nil {
		b.Fatal(err)
	}
	const batch = 64
	for i := 0; i < len(lines); i += batch {
		recs := recordsOf(lines[i:min(i+batch, len(lines))])
		if barrierAt >= i && barrierAt < i+batch {
			recs[barrierAt-i].Barrier = true
		}
		err := s.updateW(context.Background(), id, func(w *Writer) error {
			_, err := w.Append(recs, storage.Meta{})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendFsync appends one record per call (one fsync each) to a session that already
// holds 2,000 records: through Update as saves do, without the index line an append writes
// (the difference is what the line costs), inside one Update (no per-call lock), and as a
// plain JSONL file append + fsync. Each reports its median as p50-us; fsync latency on a
// shared disk varies by more than these differences from run to run, so compare variants
// of the same run.
func BenchmarkAppendFsync(b *testing.B) {
	lines := benchLines(b, benchCorpus, 4000)
	appendOne := func(b *testing.B, s *Store, i int) {
		err := s.updateW(context.Background(), "a", func(w *Writer) error {
			_, err := w.Append([]storage.Record{{Data: lines[i%len(lines)]}}, storage.Meta{Name: "bench"})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	timed := func(b *testing.B, op func(i int)) {
		var ds []time.Duration
		i := 2000
		for b.Loop() {
			start := time.Now()
			op(i)
			ds = append(ds, time.Since(start))
			i++
		}
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, "p50-us")
	}
	b.Run("storage", func(b *testing.B) {
		s := mustOpen(b, benchDir(b), Options{})
		fillSession(b, s, "a", lines[:2000], -1)
		timed(b, func(i int) { appendOne(b, s, i) })
	})
	b.Run("storage-without-index-line", func(b *testing.B) {
		s := mustOpen(b, benchDir(b), Options{})
		fillSession(b, s, "a", lines[:2000], -1)
		testSkipIndexLine = true
		defer func() { testSkipIndexLine = false }()
		timed(b, func(i int) { appendOne(b, s, i) })
	})
	b.Run("storage-one-update", func(b *testing.B) {
		s := mustOpen(b, benchDir(b), Options{})
		fillSession(b, s, "a", lines[:2000], -1)
		err := s.updateW(context.Background(), "a", func(w *Writer) error {
			timed(b, func(i int) {
				if _, err := w.Append([]storage.Record{{Data: lines[i%len(lines)]}}, storage.Meta{Name: "bench"}); err != nil {
					b.Fatal(err)
				}
			})
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	b.Run("plain-jsonl", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(benchDir(b), "a.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for _, l := range lines[:2000] {
			f.Write(append(l, '\n'))
		}
		f.Sync()
		var buf []byte
		timed(b, func(i int) {
			buf = append(append(buf[:0], lines[i%len(lines)]...), '\n')
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkReopenRead opens the store afresh and reads a whole 2,000-record session.
func BenchmarkReopenRead(b *testing.B) {
	lines := benchLines(b, benchCorpus, 2000)
	dir := b.TempDir()
	s := mustOpen(b, dir, Options{})
	fillSession(b, s, "r", lines, -1)
	s.Close()
	raw := 0
	for _, l := range lines {
		raw += len(l) + 1
	}
	b.SetBytes(int64(raw))
	for b.Loop() {
		s, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		err = s.viewR(context.Background(), "r", func(r *Reader) error {
			for _, err := range r.Records(1) {
				if err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil || n != len(lines) {
			b.Fatalf("read %d records: %v", n, err)
		}
		s.Close()
	}
}

// BenchmarkReadFromBarrier reads from the latest barrier (the last 200 records) of sessions
// of different lengths, with the frame table rebuilt each time: the cost must not grow with
// the history before the barrier.
func BenchmarkReadFromBarrier(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			lines := benchLines(b, benchCorpus, n)
			s := mustOpen(b, b.TempDir(), Options{})
			barrier := n - 200
			fillSession(b, s, "h", lines, barrier)
			for b.Loop() {
				s.dropState("h")
				got := 0
				err := s.viewR(context.Background(), "h", func(r *Reader) error {
					for _, err := range r.Records(uint64(barrier + 1)) {
						if err != nil {
							return err
						}
						got++
					}
					return nil
				})
				if err != nil || got != 200 {
					b.Fatalf("read %d: %v", got, err)
				}
			}
		})
	}
}

// BenchmarkList1000 lists 1,000 sessions (4 index lines each) from a warm store, and opens
// such a store (index fold + stat of every session).
func BenchmarkList1000(b *testing.B) {
	dir := memTempDir(b)
	s := mustOpen(b, dir, Options{})
	for i := range 1000 {
		id := fmt.Sprintf("s%04d", i)
		if err := s.Create(context.Background(), storage.Header{ID: id, WorkingDir: "/w"}, storage.Meta{Name: id, Preview: "fix the failing test in storage"}); err != nil {
			b.Fatal(err)
		}
		for k := range 3 {
			err := s.updateW(context.Background(), id, func(w *Writer) error {
				_, err := w.Append([]storage.Record{{Data: fmt.Appendf(nil, `{"k":%d}`, k)}}, storage.Meta{Name: id, Messages: k + 1})
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			l, err := s.List(context.Background(), storage.ListQuery{})
			if err != nil || len(l) != 1000 {
				b.Fatalf("%d, %v", len(l), err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			s2, err := Open(dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			s2.Close()
		}
	})
}

// BenchmarkBytesOnDisk stores each corpus transcript (one record per line, appended in
// batches of 8, closed) and reports its size against the plain JSONL.
func BenchmarkBytesOnDisk(b *testing.B) {
	for _, file := range []string{"pi-large-session.jsonl", "pi-before-compaction.jsonl", "cc-8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", benchCorpus} {
		b.Run(file, func(b *testing.B) {
			lines := benchLines(b, file, 0)
			var disk, raw int64
			for b.Loop() {
				dir := memTempDir(b)
				s, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Create(context.Background(), storage.Header{ID: "d", WorkingDir: "/w"}, storage.Meta{}); err != nil {
					b.Fatal(err)
				}
				raw = 0
				for i := 0; i < len(lines); i += 8 {
					chunk := lines[i:min(i+8, len(lines))]
					for _, l := range chunk {
						raw += int64(len(l) + 1)
					}
					err := s.updateW(context.Background(), "d", func(w *Writer) error {
						_, err := w.Append(recordsOf(chunk), storage.Meta{})
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				s.Close()
				disk = 0
				for _, p := range []string{"d.zst", "d.tail.jsonl"} {
					fi, err := os.Stat(filepath.Join(dir, "sessions", p))
					if err != nil {
						b.Fatal(err)
					}
					disk += fi.Size()
				}
			}
			b.ReportMetric(float64(disk), "disk_bytes")
			b.ReportMetric(float64(raw), "jsonl_bytes")
			b.ReportMetric(float64(raw)/float64(disk), "ratio")
		})
	}
}

// BenchmarkCallOverhead measures the fixed cost of one Update and one View that do nothing:
// locking, opening and revalidating the session's files.
func BenchmarkCallOverhead(b *testing.B) {
	lines := benchLines(b, benchCorpus, 200)
	s := mustOpen(b, benchDir(b), Options{})
	fillSession(b, s, "a", lines, -1)
	b.Run("update", func(b *testing.B) {
		for b.Loop() {
			if err := s.updateW(b.Context(), "a", func(w *Writer) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("view", func(b *testing.B) {
		for b.Loop() {
			if err := s.viewR(b.Context(), "a", func(r *Reader) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkIndexPut measures the index line every append writes (and applies) under the
// cross-process index lock, in a store of 100 sessions.
func BenchmarkIndexPut(b *testing.B) {
	s := mustOpen(b, benchDir(b), Options{})
	for i := range 100 {
		mustCreate(b, s, fmt.Sprintf("s%d", i))
	}
	m := storage.Meta{Name: "a session name of ordinary length", Preview: strings.Repeat("preview text ", 10), Messages: 1}
	for b.Loop() {
		m.Messages++
		m.LastSeq++
		if err := s.idx.put("s7", m, fileSizes{Zst: 1234, Tail: int64(m.Messages)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchFirstPass: opening a store of 5,000 indexed sessions until its syncer's first
// pass (the catch-up a process's first search waits for) has ended; first-pass-ms is that
// wait, from Open's return (README: "about 10 ms on a store of 5,000 sessions").
func BenchmarkSearchFirstPass(b *testing.B) {
	dir := memTempDir(b)
	s := mustOpen(b, dir, searchOpts())
	for i := range 5000 {
		id := fmt.Sprintf("s%05d", i)
		mustCreate(b, s, id)
		appendText(b, s, id, "fix the failing test in storage")
	}
	s.Close()
	var wait time.Duration
	for b.Loop() {
		s, err := Open(dir, searchOpts())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		<-s.search.first
		wait += time.Since(start)
		s.Close()
	}
	b.ReportMetric(float64(wait.Microseconds())/1e3/float64(b.N), "first-pass-ms/op")
}
