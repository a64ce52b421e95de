package compaction

import (
	"slices"
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

// TestCorpusLedger builds the ledger of each whole corpus transcript: it fits its budget,
// reads back from its blocks unchanged, and every constraint and value is the user's own text.
func TestCorpusLedger(t *testing.T) {
	for _, name := range corpusFiles {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := loadCorpus(t, name)
			var users strings.Builder
			for _, m := range parseWindow(path).msgs {
				if m.role == "user" {
					users.WriteString(strings.Join(strings.Fields(strings.ReplaceAll(m.raw, "**", "")), " ") + "\n")
				}
			}
			l := UpdateLedger(nil, path, "")
			before := len(l.Constraints) + len(l.Values) + len(l.Commands) + len(l.Errors)
			l.Fit(LedgerMaxTokens)
			if n := EstimateText(l.Render()); n > LedgerMaxTokens {
				t.Errorf("ledger is %d tokens", n)
			}
			after := len(l.Constraints) + len(l.Values) + len(l.Commands) + len(l.Errors)
			if after+l.Dropped.Total() != before {
				t.Errorf("%d facts, %d kept, %d counted as dropped", before, after, l.Dropped.Total())
			}
			back, ok := LedgerFromSummary(AppendLedger("prose", &l))
			if !ok || back.Render() != l.Render() {
				t.Errorf("the ledger does not read back from its blocks")
			}
			for _, n := range append(slices.Clone(l.Constraints), l.Values...) {
				text := strings.TrimSuffix(strings.Join(strings.Fields(n.Text), " "), "…")
				if !strings.Contains(users.String(), text) {
					t.Errorf("%q is not the user's text", n.Text)
				}
			}
			t.Logf("%d tokens: %d constraints, %d values, %d commands, %d errors; dropped %+v",
				EstimateText(l.Render()), len(l.Constraints), len(l.Values), len(l.Commands), len(l.Errors), l.Dropped)
		})
	}
}
