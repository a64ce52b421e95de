package relevance_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage/relevance"
)

func TestEvaluate(t *testing.T) {
	q := func(id, kind string, rel ...string) relevance.Question {
		return relevance.Question{ID: id, Kind: kind, Relevant: rel}
	}
	tests := []struct {
		name      string
		questions []relevance.Question
		run       relevance.Run
		want      relevance.Metrics
	}{
		{"first result relevant", []relevance.Question{q("a", "fact", "m1")},
			relevance.Run{"a": {"m1", "x", "y"}},
			relevance.Metrics{N: 1, RecallAt5: 1, RecallAt10: 1, MRR: 1, HitAt10: 1}},
		{"nothing returned", []relevance.Question{q("a", "fact", "m1")},
			relevance.Run{"a": nil},
			relevance.Metrics{N: 1, Empty: 1}},
		{"missing from the run counts as empty", []relevance.Question{q("a", "fact", "m1")},
			relevance.Run{},
			relevance.Metrics{N: 1, Empty: 1}},
		{"results without a relevant one", []relevance.Question{q("a", "fact", "m1")},
			relevance.Run{"a": {"x", "y"}},
			relevance.Metrics{N: 1}},
		{"rank 6 counts for recall@10 and MRR, not recall@5",
			[]relevance.Question{q("a", "fact", "m1", "m2")},
			relevance.Run{"a": {"x1", "x2", "x3", "x4", "x5", "m2", "x7"}},
			relevance.Metrics{N: 1, RecallAt5: 0, RecallAt10: 0.5, MRR: 1.0 / 6, HitAt10: 1}},
		{"rank 11 only counts for MRR",
			[]relevance.Question{q("a", "fact", "m1")},
			relevance.Run{"a": {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "m1"}},
			relevance.Metrics{N: 1, MRR: 1.0 / 11}},
		{"a repeated hit counts once",
			[]relevance.Question{q("a", "fact", "m1", "m2")},
			relevance.Run{"a": {"m1", "m1", "x"}},
			relevance.Metrics{N: 1, RecallAt5: 0.5, RecallAt10: 0.5, MRR: 1, HitAt10: 1}},
		{"averages over questions",
			[]relevance.Question{q("a", "fact", "m1"), q("b", "time", "m2", "m3")},
			relevance.Run{"a": {"x", "m1"}, "b": {"m3"}},
			relevance.Metrics{N: 2, RecallAt5: 0.75, RecallAt10: 0.75, MRR: 0.75, HitAt10: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := relevance.Evaluate(tc.questions, tc.run).Overall
			if !near(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestEvaluateByKind(t *testing.T) {
	qs := []relevance.Question{
		{ID: "a", Kind: "fact", Relevant: []string{"m1"}},
		{ID: "b", Kind: "time", Relevant: []string{"m2"}},
		{ID: "c", Kind: "time", Relevant: []string{"m3"}},
	}
	r := relevance.Evaluate(qs, relevance.Run{"a": {"m1"}, "b": {"x", "m2"}})
	if m := r.ByKind["fact"]; !near(m, relevance.Metrics{N: 1, RecallAt5: 1, RecallAt10: 1, MRR: 1, HitAt10: 1}) {
		t.Errorf("fact: %+v", m)
	}
	if m := r.ByKind["time"]; !near(m, relevance.Metrics{N: 2, RecallAt5: 0.5, RecallAt10: 0.5, MRR: 0.25, HitAt10: 0.5, Empty: 0.5}) {
		t.Errorf("time: %+v", m)
	}
	if _, ok := r.ByKind["decision"]; ok {
		t.Error("a kind without questions must not appear")
	}
}

func near(a, b relevance.Metrics) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }
	return a.N == b.N && eq(a.RecallAt5, b.RecallAt5) && eq(a.RecallAt10, b.RecallAt10) &&
		eq(a.MRR, b.MRR) && eq(a.HitAt10, b.HitAt10) && eq(a.Empty, b.Empty)
}

func TestWriteTable(t *testing.T) {
	qs := []relevance.Question{
		{ID: "a", Kind: "fact", Relevant: []string{"m1"}},
		{ID: "b", Kind: "other", Relevant: []string{"m2"}},
	}
	one := relevance.Evaluate(qs, relevance.Run{"a": {"m1"}})
	two := relevance.Evaluate(qs, relevance.Run{"b": {"m2"}})
	var b strings.Builder
	if err := relevance.WriteTable(&b, relevance.System{Name: "one", Report: one}, relevance.System{Name: "two", Report: two}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var rows []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		rows = append(rows, f[0]+" "+f[1]+" "+f[4])
	}
	// all first, then the known kinds in order, unknown kinds last; one line per system.
	want := []string{"all one 0.500", "all two 0.500", "fact one 1.000", "fact two 0.000", "other one 0.000", "other two 1.000"}
	if strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("rows (kind system recall@10):\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(lines[0], "recall@5") || !strings.Contains(lines[0], "empty") {
		t.Errorf("header %q", lines[0])
	}
}
