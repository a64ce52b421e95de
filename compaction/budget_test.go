package compaction

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestProseBudget(t *testing.T) {
	if got := ProseBudget("", ""); got != SummaryBudgetTokens-joinTokens {
		t.Errorf("ProseBudget with nothing appended = %d", got)
	}
	full := func(tokens int) string { return strings.Repeat("abcd", tokens) }
	if got := ProseBudget(full(FileBlocksMaxTokens), full(LedgerMaxTokens)); got != ProseMinTokens {
		t.Errorf("ProseBudget with full blocks = %d, want ProseMinTokens %d", got, ProseMinTokens)
	}
	if ProseMinTokens < 3000 {
		t.Errorf("ProseMinTokens = %d: too little room for a model's summary", ProseMinTokens)
	}
	if got := ProseBudget(full(20000), ""); got != 256 {
		t.Errorf("oversize blocks: %d, want the floor of 256", got)
	}
}

func TestFitProse(t *testing.T) {
	short := "## Goal\n- ship it"
	if FitProse(short, 100) != short || FitProse(short, 0) != short {
		t.Error("FitProse changed text that fits")
	}
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "- bullet number %d with some words\n", i)
	}
	long := b.String()
	got := FitProse(long, 200)
	if n := EstimateText(got); n > 200 {
		t.Errorf("fitted prose is %d tokens, want at most 200", n)
	}
	if !strings.HasPrefix(long, strings.Split(got, "\n[…")[0]) || !strings.Contains(got, "more characters cut to fit") {
		t.Errorf("fitted prose is not a cut of the original with a note:\n%s", got)
	}
}

// Every summarizer's prose is bounded: the extractive summarizer by itself, a model by the
// limit its prompt states (and FitProse when it writes more).
func TestSummariesStayWithinBudget(t *testing.T) {
	path := ids(syntheticSession(400))
	req := Request{History: path, MaxSummaryTokens: 500, Ledger: &Ledger{}}
	out, err := Extractive{}.Summarize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n := EstimateText(out); n > 500 {
		t.Errorf("extractive summary is %d tokens with MaxSummaryTokens 500", n)
	}
	p := BuildPrompt(req)
	if p.MaxTokens != 500 || !strings.Contains(p.User, "Keep the summary under 500 tokens") {
		t.Errorf("prompt does not carry the limit: MaxTokens %d", p.MaxTokens)
	}
	// A split turn shares the budget between its halves.
	var (
		mu   sync.Mutex
		seen []int
	)
	spy := SummarizerFunc{N: "spy", F: func(_ context.Context, r Request) (string, error) {
		mu.Lock() // Run calls the two halves of a split turn concurrently
		defer mu.Unlock()
		seen = append(seen, r.MaxSummaryTokens)
		return "x", nil
	}}
	if _, err := Run(t.Context(), spy, Request{History: path[:10], TurnPrefix: path[10:20], MaxSummaryTokens: 900}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0]+seen[1] > 900 {
		t.Errorf("split-turn budgets %v exceed 900", seen)
	}
}

// syntheticSession is n turns of a user request, a read and an edit with results, a failing
// and then passing test run, and an answer.
func syntheticSession(n int) []Entry {
	var out []Entry
	for i := range n {
		id := fmt.Sprint(i)
		out = append(out,
			userE(fmt.Sprintf("Please make step %d faster, and never touch vendor/. Timeout is %d ms.", i, 100+i)),
			asstE(fmt.Sprintf("Reading file %d.", i), tcall("r"+id, "read", map[string]any{"path": fmt.Sprintf("src/f%d.go", i)})),
			resE("r"+id, strings.Repeat("package main\n", 40), false),
			asstE("Editing.", tcall("e"+id, "edit", map[string]any{"path": fmt.Sprintf("src/f%d.go", i)})),
			resE("e"+id, "ok", false),
			asstE("Testing.", tcall("t"+id, "bash", map[string]any{"command": "go test ./..."})),
			resE("t"+id, fmt.Sprintf("--- FAIL: TestStep%d\nf%d_test.go:12: want 1, got 2\nFAIL", i, i), true),
			asstE("Fixed because the cache key was wrong; I decided to hash it.", tcall("u"+id, "bash", map[string]any{"command": "go test ./..."})),
			resE("u"+id, "ok", false),
			asstE(fmt.Sprintf("Done: step %d is 3x faster.", i)),
		)
	}
	return out
}
