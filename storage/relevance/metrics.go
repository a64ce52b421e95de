package relevance

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// Run is one system's answers: for each question id, the entry ids it returned, best first.
// A question missing from the run counts as answered with nothing.
type Run map[string][]string

// Metrics are the scores of a set of questions (definitions in shared/reference/RECALL.md).
type Metrics struct {
	// N is the number of questions scored.
	N int
	// RecallAt5 and RecallAt10 average, over the questions, the share of a question's
	// relevant messages found in the first 5 (10) results.
	RecallAt5, RecallAt10 float64
	// MRR averages 1/rank of the first relevant result (0 when none is returned).
	MRR float64
	// HitAt10 is the share of questions with at least one relevant result in the first 10.
	HitAt10 float64
	// Empty is the share of questions answered with no result at all.
	Empty float64
}

// Report is a run's metrics over all questions and per kind.
type Report struct {
	Overall Metrics
	ByKind  map[string]Metrics
}

// Evaluate scores run against the questions.
func Evaluate(questions []Question, run Run) Report {
	var all sums
	byKind := map[string]*sums{}
	for _, q := range questions {
		s := score(q, run[q.ID])
		all.add(s)
		k := byKind[q.Kind]
		if k == nil {
			k = &sums{}
			byKind[q.Kind] = k
		}
		k.add(s)
	}
	r := Report{Overall: all.metrics(), ByKind: map[string]Metrics{}}
	for kind, s := range byKind {
		r.ByKind[kind] = s.metrics()
	}
	return r
}

// scored is one question's scores.
type scored struct {
	recall5, recall10, rr float64
	hit10, empty          bool
}

func score(q Question, results []string) scored {
	relevant := map[string]bool{}
	for _, id := range q.Relevant {
		relevant[id] = true
	}
	var s scored
	s.empty = len(results) == 0
	seen := map[string]bool{}
	found5, found10 := 0, 0
	for i, id := range results {
		if !relevant[id] || seen[id] {
			continue // a repeated hit counts once
		}
		seen[id] = true
		if s.rr == 0 {
			s.rr = 1 / float64(i+1)
		}
		if i < 5 {
			found5++
		}
		if i < 10 {
			found10++
		}
	}
	if n := len(relevant); n > 0 {
		s.recall5 = float64(found5) / float64(n)
		s.recall10 = float64(found10) / float64(n)
	}
	s.hit10 = found10 > 0
	return s
}

// sums accumulates scores for averaging.
type sums struct {
	n                     int
	recall5, recall10, rr float64
	hit10, empty          int
}

func (a *sums) add(s scored) {
	a.n++
	a.recall5 += s.recall5
	a.recall10 += s.recall10
	a.rr += s.rr
	if s.hit10 {
		a.hit10++
	}
	if s.empty {
		a.empty++
	}
}

func (a *sums) metrics() Metrics {
	if a.n == 0 {
		return Metrics{}
	}
	n := float64(a.n)
	return Metrics{N: a.n, RecallAt5: a.recall5 / n, RecallAt10: a.recall10 / n, MRR: a.rr / n,
		HitAt10: float64(a.hit10) / n, Empty: float64(a.empty) / n}
}

// System is a named report, one row group of a table.
type System struct {
	Name   string
	Report Report
}

// WriteTable writes the systems' metrics side by side: for "all" and then each kind (Kinds
// first, any other kind after them in name order), one line per system.
func WriteTable(w io.Writer, systems ...System) error {
	kinds := []string{"all"}
	kinds = append(kinds, Kinds...)
	var extra []string
	for _, s := range systems {
		for k := range s.Report.ByKind {
			if !slices.Contains(kinds, k) && !slices.Contains(extra, k) {
				extra = append(extra, k)
			}
		}
	}
	slices.Sort(extra)
	kinds = append(kinds, extra...)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tsystem\tn\trecall@5\trecall@10\tMRR\thit@10\tempty\t")
	for _, kind := range kinds {
		for _, s := range systems {
			m, ok := s.Report.ByKind[kind]
			if kind == "all" {
				m, ok = s.Report.Overall, true
			}
			if !ok {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n",
				kind, s.Name, m.N, m.RecallAt5, m.RecallAt10, m.MRR, m.HitAt10, m.Empty)
		}
	}
	return tw.Flush()
}
