package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// Benchmarks over stdio against the built binary with real messages (corpus messages of 1 to
// 4 KB, about 2 KB on average) in long uncompacted sessions: what a client sees end to end,
// JSON-RPC through pipes, the server's handler, the store with fsync, and the client decoding
// the answer. Stores are filled in process before the server starts. docs/BENCHMARKS.md has
// the command and the figures.

// seedCorpus saves n corpus messages into a new session of the store at dir, 500 per call.
func seedCorpus(b *testing.B, dir string, msgs []memory.Message, n int) string {
	b.Helper()
	id := ""
	seed(b, dir, func(ctx context.Context, svc *memory.Service) {
		for i := 0; i < n; i += 500 {
			batch := slices.Clone(msgs[i:min(i+500, n)])
			for j := range batch {
				batch[j].ID = fmt.Sprintf("m%d", i+j)
			}
			res, err := svc.Save(ctx, memory.SaveRequest{SessionID: id, WorkingDir: "/bench", Messages: batch})
			if err != nil {
				b.Fatal(err)
			}
			id = res.SessionID
		}
	})
	return id
}

func callRaw(b *testing.B, c *client.Client, name string, args obj) *mcp.CallToolResult {
	b.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %v", name, err, res)
	}
	return res
}

// asArgs turns a message into the map a JSON-RPC client sends.
func asArgs(b *testing.B, m memory.Message) any {
	b.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		b.Fatal(err)
	}
	return v
}

// TestDumpBenchMessages writes the corpus messages the benchmarks above use (in order, as
// JSONL) to $SESSIONMEM_BENCH_DUMP, so a benchmark of another tool can load the same messages
// (docs/BENCHMARKS.md). It does nothing without that variable.
func TestDumpBenchMessages(t *testing.T) {
	path := os.Getenv("SESSIONMEM_BENCH_DUMP")
	if path == "" {
		t.Skip("set SESSIONMEM_BENCH_DUMP to a file name")
	}
	var buf bytes.Buffer
	for _, m := range transcripttest.Sized(t, 10000, 1024, 4096) {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkStdioSaveCorpus: session_save of one ~2 KB corpus message (durable when answered)
// into a session that already holds 1,000 or 10,000 messages.
func BenchmarkStdioSaveCorpus(b *testing.B) {
	benchCorpusSaves(b, func(b *testing.B, dir string) func(i int, id string, m map[string]any) func() {
		c := stdioClient(b, dir)
		return func(_ int, id string, m map[string]any) func() {
			return func() { callRaw(b, c, "session_save", obj{"session_id": id, "messages": []any{m}}) }
		}
	})
}

// benchCorpusSaves times session_save of one ~2 KB corpus message at a time into a session of
// 1,000 and of 10,000 messages and reports the p50. client starts a server on the seeded
// store dir and returns prepare, which builds the call that saves message m (i is its
// number), outside the timing.
func benchCorpusSaves(b *testing.B, client func(b *testing.B, dir string) func(i int, id string, m map[string]any) func()) {
	for _, at := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("at=%d", at), func(b *testing.B) {
			dir := b.TempDir()
			msgs := transcripttest.Sized(b, at+20000, 1024, 4096)
			id := seedCorpus(b, dir, msgs, at)
			prepare := client(b, dir)
			var ds []time.Duration
			for i := at; b.Loop(); i++ {
				m := asArgs(b, msgs[i]).(map[string]any)
				m["id"] = fmt.Sprintf("m%d", i)
				call := prepare(i, id, m)
				start := time.Now()
				call()
				ds = append(ds, time.Since(start))
			}
			b.ReportMetric(float64(median(ds).Nanoseconds())/1e3, "p50-us")
		})
	}
}

// resumeAllStdio pages through a whole resume over stdio and returns the number of messages.
func resumeAllStdio(b *testing.B, c *client.Client, id string, maxTokens int) int {
	b.Helper()
	n, cursor := 0, ""
	for {
		args := obj{"session_id": id}
		if maxTokens > 0 {
			args["max_tokens"] = maxTokens
		}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res := callRaw(b, c, "session_resume", args)
		sc, _ := res.StructuredContent.(map[string]any)
		msgs, _ := sc["messages"].([]any)
		n += len(msgs)
		if cursor, _ = sc["next_cursor"].(string); cursor == "" {
			return n
		}
	}
}

// BenchmarkStdioResumeFull: every page of session_resume (max_tokens 100,000) of an
// uncompacted session of 2,000 or 6,000 corpus messages.
func BenchmarkStdioResumeFull(b *testing.B) {
	for _, n := range []int{2000, 6000} {
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			id := seedCorpus(b, dir, transcripttest.Sized(b, n, 1024, 4096), n)
			c := stdioClient(b, dir)
			var ds []time.Duration
			for b.Loop() {
				start := time.Now()
				if got := resumeAllStdio(b, c, id, 100000); got != n {
					b.Fatalf("resumed %d messages, want %d", got, n)
				}
				ds = append(ds, time.Since(start))
			}
			d := median(ds)
			b.ReportMetric(float64(d.Microseconds())/1e3, "p50-ms")
			b.ReportMetric(float64(d.Nanoseconds())/1e3/float64(n), "us/msg")
		})
	}
}

// BenchmarkStdioResumeFirstPage: the first page of session_resume at the default max_tokens of
// an uncompacted session of 2,000 or 6,000 corpus messages, on a running server. The first
// call after the server started is reported separately as cold-us (median over the runs, each
// with a new server).
func BenchmarkStdioResumeFirstPage(b *testing.B) {
	for _, n := range []int{2000, 6000} {
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			id := seedCorpus(b, dir, transcripttest.Sized(b, n, 1024, 4096), n)
			var cold []time.Duration
			for range 3 {
				c := stdioClient(b, dir)
				start := time.Now()
				callRaw(b, c, "session_resume", obj{"session_id": id})
				cold = append(cold, time.Since(start))
				c.Close()
			}
			c := stdioClient(b, dir)
			var ds []time.Duration
			for b.Loop() {
				start := time.Now()
				callRaw(b, c, "session_resume", obj{"session_id": id})
				ds = append(ds, time.Since(start))
			}
			b.ReportMetric(float64(median(ds).Nanoseconds())/1e3, "p50-us")
			b.ReportMetric(float64(median(cold).Nanoseconds())/1e3, "cold-us")
		})
	}
}

// listSessions and listMessages: the listing benchmarks use 1,000 sessions of 4 corpus
// messages (about 8 KB) each.
const listSessions, listMessages = 1000, 4

// BenchmarkStdioListPages: session_list of 1,000 sessions in pages of 100.
func BenchmarkStdioListPages(b *testing.B) {
	dir := b.TempDir()
	msgs := transcripttest.Sized(b, listSessions*listMessages, 1024, 4096)
	seed(b, dir, func(ctx context.Context, svc *memory.Service) {
		for i := range listSessions {
			if _, err := svc.Save(ctx, memory.SaveRequest{WorkingDir: "/bench", Name: fmt.Sprintf("session %d", i),
				Messages: msgs[i*listMessages : (i+1)*listMessages]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	c := stdioClient(b, dir)
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		n, cursor := 0, ""
		for {
			args := obj{"limit": 100}
			if cursor != "" {
				args["cursor"] = cursor
			}
			sc, _ := callRaw(b, c, "session_list", args).StructuredContent.(map[string]any)
			ss, _ := sc["sessions"].([]any)
			n += len(ss)
			if cursor, _ = sc["next_cursor"].(string); cursor == "" {
				break
			}
		}
		if n != 1000 {
			b.Fatalf("listed %d sessions", n)
		}
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(float64(median(ds).Microseconds())/1e3, "p50-ms")
}

// dirBytes sums the sizes of the files under dir.
// dirBytes is what the store at dir takes on disk, without its search index (searchIndexBytes
// reports that separately: derived data, issue 9, not the store's compression).
func dirBytes(b *testing.B, dir string) int64 {
	return treeBytes(b, dir, filepath.Join(dir, "search"))
}

// searchIndexBytes is what the store's full-text index at dir/search takes.
func searchIndexBytes(b *testing.B, dir string) int64 {
	return treeBytes(b, filepath.Join(dir, "search"), "")
}

// treeBytes sums the sizes of the files under dir, skipping the directory skip.
func treeBytes(b *testing.B, dir, skip string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == skip {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkStdioDiskUse saves the four corpus transcripts through MCP (a few messages per
// call, as agents save), then reports how much smaller than the same messages as plain JSONL
// the store is: right after the last save (x-after-save), $SESSIONMEM_BENCH_IDLE_WAIT (default
// 60 s) later with the server still running (x-running), and after it stopped (x-stopped).
// Run it with -benchtime 1x.
func BenchmarkStdioDiskUse(b *testing.B) {
	ts := transcripttest.Corpus(b)
	wait := 60 * time.Second
	if v := os.Getenv("SESSIONMEM_BENCH_IDLE_WAIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		wait = d
	}
	for b.Loop() {
		dir := b.TempDir()
		c := stdioClient(b, dir)
		var plain int64
		for _, tr := range ts {
			id := ""
			for i := 0; i < len(tr.Messages); i += 4 {
				var batch []any
				for _, m := range tr.Messages[i:min(i+4, len(tr.Messages))] {
					js, _ := json.Marshal(m)
					plain += int64(len(js)) + 1
					batch = append(batch, json.RawMessage(js))
				}
				args := obj{"working_dir": "/corpus", "name": tr.Name, "messages": batch}
				if id != "" {
					args = obj{"session_id": id, "messages": batch}
				}
				sc, _ := callRaw(b, c, "session_save", args).StructuredContent.(map[string]any)
				id, _ = sc["session_id"].(string)
			}
		}
		after := dirBytes(b, dir)
		time.Sleep(wait)
		running := dirBytes(b, dir)
		c.Close()
		stopped := dirBytes(b, dir)
		if testing.Verbose() {
			_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if fi, err := d.Info(); err == nil {
						b.Logf("%9d %s", fi.Size(), p[len(dir):])
					}
				}
				return nil
			})
		}
		b.ReportMetric(float64(plain)/float64(after), "x-after-save")
		b.ReportMetric(float64(plain)/float64(running), "x-running")
		b.ReportMetric(float64(plain)/float64(stopped), "x-stopped")
		b.ReportMetric(float64(plain)/1e6, "plain-MB")
		b.ReportMetric(float64(searchIndexBytes(b, dir))/1e6, "search-index-MB")
	}
}
