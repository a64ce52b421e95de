package memory

import (
	"fmt"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
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

// benchTurn is one agent turn of about 3 KB: prompt, a call with arguments, a 2 KB result,
// an answer.
func benchTurn(i int) []Message {
	return []Message{
		user(fmt.Sprintf("u%d", i), "Why does the parser fail on nested blocks? Look at internal/parser/parse.go"),
		assistantCall(fmt.Sprintf("a%d", i), fmt.Sprintf("c%d", i), "read", `{"path":"internal/parser/parse.go","offset":1,"limit":200}`),
		toolResult(fmt.Sprintf("t%d", i), fmt.Sprintf("c%d", i), fmt.Sprintf("%02000d", i)),
		assistant(fmt.Sprintf("b%d", i), "The nested case returns before closing the scope; I will fix it."),
	}
}

// BenchmarkGateTurn: the CPU cost of the redaction gate for one turn (every string of four
// entries walked and redacted), without storage.
//
//	go test -run '^$' -bench GateTurn -count 5 ./memory/
func BenchmarkGateTurn(b *testing.B) {
	s := New(nil, redactOpts(b))
	h := storage.Header{ID: "s", Nonce: "n"}
	var entries []Entry
	for _, m := range benchTurn(1) {
		entries = append(entries, Entry{Type: KindMessage, ID: "e", ParentID: "p", Message: &m})
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range entries {
			if _, err := s.gateEntry(h, e); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSaveTurnRedacted: one durable session_save of a turn with redaction on.
func BenchmarkSaveTurnRedacted(b *testing.B) {
	store, err := local.Open(b.TempDir(), local.Options{Summarize: Summarize})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	s := New(store, redactOpts(b))
	id := mustSaveB(b, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("0", "start")}}).SessionID
	i := 0
	for b.Loop() {
		i++
		mustSaveB(b, s, SaveRequest{SessionID: id, Messages: benchTurn(i)})
	}
}
