package redact

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/internal/testpaths"
)

// corpusDir holds the shared corpus of full transcripts ("" when absent: tests using it skip).
var corpusDir = testpaths.CorpusDir()

func corpusLines(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		t.Skip("corpus not present at " + corpusDir)
	}
	var lines []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return lines
}

// TestCorpusFindings lists what the built-in rules replace in the shared corpus (raw JSONL
// lines, so JSON escaping is exercised too), for a human to check with -v; it fails only if
// redaction is not idempotent there or the count jumps far beyond the reviewed figure.
func TestCorpusFindings(t *testing.T) {
	lines := corpusLines(t)
	r := mustNew(t)
	counts := map[string]int{}
	total := 0
	for _, l := range lines {
		mask := r.pre.scan(l)
		cur := l
		for i, ru := range r.rules {
			bit := uint64(1) << uint(i)
			if mask&bit == 0 {
				continue
			}
			spans := ru.find(cur, r.pre.hits(cur, mask, nil), bit)
			for _, sp := range spans {
				counts[ru.marker()]++
				total++
				lo, hi := max(0, sp[0]-60), min(len(cur), sp[1]+20)
				t.Logf("%s: …%s…", ru.marker(), strings.ReplaceAll(cur[lo:hi], "\n", "⏎"))
			}
			if spans != nil {
				cur = replace(cur, spans, ru.marker())
			}
		}
		if out := r.String(l); out != cur || r.String(out) != out {
			t.Fatalf("inconsistent or not idempotent on line %.200q", l)
		}
	}
	t.Logf("%d replacements in %d lines: %v", total, len(lines), counts)
	if total > 20 {
		t.Errorf("%d replacements in the corpus; the reviewed figure was far lower: look for new false positives", total)
	}
}

func BenchmarkStringCorpus(b *testing.B) {
	lines := corpusLines(b)
	r := mustNew(b)
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		for _, l := range lines {
			r.String(l)
		}
	}
}

// BenchmarkStringClean measures the fast path: corpus lines the prefilter passes as clean.
func BenchmarkStringClean(b *testing.B) {
	r := mustNew(b)
	var clean []string
	size := 0
	for _, l := range corpusLines(b) {
		if r.pre.scan(l) == 0 {
			clean = append(clean, l)
			size += len(l)
		}
	}
	b.SetBytes(int64(size))
	b.ReportMetric(float64(len(clean)), "lines/op")
	for b.Loop() {
		for _, l := range clean {
			r.String(l)
		}
	}
}

// TestScanHitsMatchesTwoPasses: the one-pass scan finds the rules and the hits that scan and
// hits find in two, on the corpus lines, the testdata and random text around triggers.
func TestScanHitsMatchesTwoPasses(t *testing.T) {
	r := mustNew(t)
	texts := corpusLinesOrNone(t)
	texts = append(texts, randomTriggerTexts(r, 20000)...)
	for _, s := range texts {
		mask, hits := r.pre.scanHits(s, nil)
		want := r.pre.scan(s)
		var wantHits []hit
		if want != 0 {
			wantHits = r.pre.hits(s, want, nil)
		}
		if mask != want || !slices.Equal(hits, wantHits) {
			t.Fatalf("%q: scanHits = %x %v, two passes %x %v", s, mask, hits, want, wantHits)
		}
	}
}

// randomTriggerTexts returns n random texts of triggers (in either case), pieces of them, and
// random bytes.
func randomTriggerTexts(r *Redactor, n int) []string {
	var triggers []string
	for _, ru := range r.rules {
		triggers = append(triggers, ru.triggers...)
	}
	pieces := []string{" ", "=", ":", "\n", "key", "_", "-", "é", "://", "pass", "tok", "sk-", "PRIVATE"}
	rng := rand.New(rand.NewPCG(4, uint64(n)))
	texts := make([]string, n)
	for i := range texts {
		var b strings.Builder
		for range rng.IntN(8) {
			switch rng.IntN(3) {
			case 0:
				w := triggers[rng.IntN(len(triggers))]
				if rng.IntN(2) == 0 {
					w = strings.ToUpper(w)
				}
				b.WriteString(w)
			case 1:
				b.WriteString(pieces[rng.IntN(len(pieces))])
			default:
				b.WriteByte(byte(rng.IntN(256)))
			}
		}
		texts[i] = b.String()
	}
	return texts
}

// corpusLinesOrNone is corpusLines, or none when the corpus is absent.
func corpusLinesOrNone(t testing.TB) []string {
	if files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl")); len(files) == 0 {
		return nil
	}
	return corpusLines(t)
}
