package transcripttest

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/sessionmem/sessionmem/internal/testpaths"
	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/transcript"
)

// Transcript is one conversation of the corpus or of its excerpts.
type Transcript struct {
	Name     string // file name
	Path     string
	Format   transcript.Format
	Messages []message.Message
}

// corpusFiles are the full transcripts of the shared corpus.
var corpusFiles = []string{
	"pi-large-session.jsonl",
	"pi-before-compaction.jsonl",
	"cc-8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
	"cc-ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
}

// excerptFiles are the excerpts of those four transcripts kept in testdata/transcripts.
var excerptFiles = []string{
	"pi-large.jsonl",
	"pi-v1.jsonl",
	"claude-code-a.jsonl",
	"claude-code-b.jsonl",
}

// Excerpts returns the four licensed excerpts in testdata/transcripts, converted.
func Excerpts(tb testing.TB) []Transcript {
	tb.Helper()
	var out []Transcript
	for _, name := range excerptFiles {
		out = append(out, load(tb, testpaths.Testdata("transcripts", name)))
	}
	return out
}

// Corpus returns the four full transcripts of the shared corpus, converted, or skips tb
// when the corpus is absent.
func Corpus(tb testing.TB) []Transcript {
	tb.Helper()
	dir := testpaths.CorpusDir()
	if dir == "" {
		tb.Skip("the shared corpus (../shared/corpus or $SESSIONMEM_CORPUS) is not present")
	}
	var out []Transcript
	for _, name := range corpusFiles {
		out = append(out, load(tb, filepath.Join(dir, name)))
	}
	return out
}

func load(tb testing.TB, path string) Transcript {
	tb.Helper()
	req, _, err := transcript.ParseFile(path, transcript.FormatAuto)
	if err != nil {
		tb.Fatalf("parse %s: %v", path, err)
	}
	t := Transcript{Name: filepath.Base(path), Path: path}
	for _, it := range req.Items {
		if it.Message != nil {
			t.Messages = append(t.Messages, *it.Message)
		}
	}
	return t
}

// Sized returns n messages whose JSON encoding takes from minBytes to maxBytes, taken in
// order from the full corpus when present, else from the excerpts, and cycled as needed. Ids
// are cleared, so callers can give their own. Benchmarks use it for "realistic ~2 KB
// messages" (1,024 to 4,096 bytes average about 2 KB on the corpus).
func Sized(tb testing.TB, n, minBytes, maxBytes int) []message.Message {
	tb.Helper()
	var ts []Transcript
	if dir := testpaths.CorpusDir(); dir != "" {
		for _, name := range corpusFiles {
			ts = append(ts, load(tb, filepath.Join(dir, name)))
		}
	} else {
		ts = Excerpts(tb)
	}
	var pool []message.Message
	for _, t := range ts {
		for _, m := range t.Messages {
			b, err := json.Marshal(m)
			if err == nil && len(b) >= minBytes && len(b) <= maxBytes {
				m.ID = ""
				pool = append(pool, m)
			}
		}
	}
	if len(pool) == 0 {
		tb.Fatalf("no corpus message of %d to %d bytes", minBytes, maxBytes)
	}
	out := make([]message.Message, n)
	for i := range out {
		out[i] = pool[i%len(pool)]
	}
	return out
}
