package memory

import (
	"fmt"
	"testing"

	"github.com/sessionmem/sessionmem/storage/local"
)

// Workloads for the figures in docs/BENCHMARKS.md. Run with
//   go test -run '^$' -bench . -benchtime 200x ./memory/

func benchService(b *testing.B) *Service {
	b.Helper()
	store, err := local.Open(b.TempDir(), local.Options{Summarize: Summarize})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return New(store, Options{})
}

// BenchmarkSaveOneMessage: one durable session_save of one ~600-byte message per call into a
// session that grows to b.N messages.
func BenchmarkSaveOneMessage(b *testing.B) {
	s := benchService(b)
	id := mustSaveB(b, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("0", "start")}}).SessionID
	i := 0
	for b.Loop() {
		i++
		mustSaveB(b, s, SaveRequest{SessionID: id, Messages: []Message{assistant(fmt.Sprint(i), fmt.Sprintf("%d %0600d", i, i))}})
	}
}

// BenchmarkResumeCompacted10k: session_resume (default 20,000-token page) of a 10,000-message
// session with a compaction near its end, from a fresh Service each time (no warm cache), so the
// cost is reading from the checkpoint, not the history before it.
func BenchmarkResumeCompacted10k(b *testing.B) {
	s := benchService(b)
	id := buildCompacted(b, s, 10000)
	for b.Loop() {
		fresh := New(s.store, Options{})
		res, err := fresh.Resume(b.Context(), ResumeRequest{SessionID: id})
		if err != nil || res.Summary == "" {
			b.Fatal(err)
		}
	}
}

// BenchmarkResumeCompacted1k is the same at 1,000 messages, to show the cost does not grow
// with the history before the compaction.
func BenchmarkResumeCompacted1k(b *testing.B) {
	s := benchService(b)
	id := buildCompacted(b, s, 1000)
	for b.Loop() {
		fresh := New(s.store, Options{})
		if _, err := fresh.Resume(b.Context(), ResumeRequest{SessionID: id}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList1000: session_list (first page of 20) over 1,000 sessions.
func BenchmarkList1000(b *testing.B) {
	s := benchService(b)
	for i := range 1000 {
		mustSaveB(b, s, SaveRequest{WorkingDir: fmt.Sprintf("/w/%d", i%10), Messages: []Message{user("1", fmt.Sprintf("prompt %d", i))}})
	}
	for b.Loop() {
		res, err := s.List(b.Context(), ListRequest{})
		if err != nil || len(res.Sessions) != 20 {
			b.Fatal(err)
		}
	}
}

// buildCompacted saves n messages in turns of 6 (batches of up to 600), compacts extractively
// keeping 20,000 tokens, then adds 60 more messages.
func buildCompacted(b *testing.B, s *Service, n int) string {
	b.Helper()
	var msgs []Message
	for i := 0; len(msgs) < n; i++ {
		msgs = append(msgs, turn(i, fmt.Sprintf("pkg/f%d.go", i%50), 1200)...)
	}
	msgs = msgs[:n]
	id := ""
	for len(msgs) > 0 {
		k := min(600, len(msgs))
		id = mustSaveB(b, s, SaveRequest{SessionID: id, WorkingDir: wd, Messages: msgs[:k]}).SessionID
		msgs = msgs[k:]
	}
	if _, err := s.Compact(b.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive}); err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		mustSaveB(b, s, SaveRequest{SessionID: id, Messages: turn(100000+i, "late.go", 1200)})
	}
	return id
}

func mustSaveB(b *testing.B, s *Service, req SaveRequest) SaveResult {
	b.Helper()
	res, err := s.Save(b.Context(), req)
	if err != nil {
		b.Fatal(err)
	}
	return res
}
