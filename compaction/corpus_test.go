package compaction

import (
	"strings"
	"testing"
)

// TestCorpusPiCutMatchesPi checks FindCut against the cut pi itself made in the corpus: the
// first compaction of pi-before-compaction.jsonl kept entries from firstKeptEntryIndex 293.
func TestCorpusPiCutMatchesPi(t *testing.T) {
	path, _, err := convertPi(corpusFile(t, "pi-before-compaction.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var compactions []int
	for i, e := range path {
		if e.Kind == KindCompaction {
			compactions = append(compactions, i)
		}
	}
	if got, want := len(compactions), 2; got != want {
		t.Fatalf("compactions = %d, want %d", got, want)
	}
	c, ok := FindCut(path[:compactions[0]], DefaultKeepRecentTokens, -1)
	t.Logf("first compaction: %s", describeCut(path[:compactions[0]], c))
	checkCut(t, path[:compactions[0]], c, ok)
	// pi's own estimate of the same messages differs (its kept part, from 292, is 15.7k tokens
	// by ours), so the cut is compared for being in the same stretch, not for equality.
	if !ok || c.FirstKept < 194 || c.FirstKept > 292 {
		t.Errorf("first cut: FirstKept = %d (ok %v), pi kept from 292", c.FirstKept, ok)
	}
	c, ok = FindCut(path[:compactions[1]], DefaultKeepRecentTokens, 292)
	t.Logf("second compaction: %s", describeCut(path[:compactions[1]], c))
	checkCut(t, path[:compactions[1]], c, ok)
	if !ok || c.FirstKept < 292 || c.FirstKept > 550 {
		t.Errorf("second cut: FirstKept = %d (ok %v), pi kept from 550", c.FirstKept, ok)
	}
}

var corpusFiles = []string{
	"pi-before-compaction.jsonl",
	"pi-large-session.jsonl",
	"cc-8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
	"cc-ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
}

func loadCorpus(t testing.TB, name string) []Entry {
	t.Helper()
	data := corpusFile(t, name)
	if strings.HasPrefix(name, "pi-") {
		path, _, err := convertPi(data)
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	path, err := convertCC(data)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCorpusExtractive runs the extractive summarizer over each whole corpus transcript and
// checks that every section is filled with content taken from the transcript.
func TestCorpusExtractive(t *testing.T) {
	for _, name := range corpusFiles {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := loadCorpus(t, name)
			checkExtractiveFilled(t, path, allowedEmpty(path))
		})
	}
}
