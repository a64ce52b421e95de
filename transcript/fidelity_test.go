package transcript

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/local"
)

// The fidelity benchmark (docs/FIDELITY.md): each corpus transcript is saved in six parts and
// compacted after each of the first five; after every compaction the stored summary is checked
// for the durable facts of what was folded away, by two probes built differently:
//
//   - probe A, hand-written: testdata/fidelity/*.probes.json, facts picked by reading the
//     transcripts, each with the message and line it came from and the literal text that must
//     survive;
//   - probe B, mechanical: fidelity_probe_test.go derives facts from the parsed messages with
//     its own fixed rules (written from the definitions, not from the ledger's code)
//     and matches them loosely.
//
// Run: go test -run TestFidelity -v ./transcript/ (SESSIONMEM_CORPUS=dir if the corpus is not at
// ../shared/corpus); -fidelity.md=FILE writes the figures as markdown. With SESSIONMEM_LLM_URL
// and SESSIONMEM_LLM_MODEL set, the llm summarizer is measured too (reported, no bar).

var fidelityMD = flag.String("fidelity.md", "", "write the fidelity figures as a markdown table to this file")

// fidelityKinds are the kinds of facts reported, in order.
var fidelityKinds = []string{"constraint", "error", "command", "file", "number"}

// Bars of issue 11.
const (
	fidelityParts       = 6
	fidelityMinShare    = 0.90
	fidelityMaxTokens   = 12000
	fidelityReportSteps = "1,3,5"
	// fidelityKeepTokens is keep_recent_tokens of every compaction: a sixth of a Claude Code
	// transcript holds less than the default 20,000, and keeping less folds more facts into
	// the summary, which is what is measured.
	fidelityKeepTokens = 5000
)

// findCorpus returns the shared corpus directory, or "" when it is absent: $SESSIONMEM_CORPUS,
// else a shared/corpus directory next to the repository or one of its parents (worktrees live
// deeper than the main checkout).
func findCorpus() string {
	if d := os.Getenv("SESSIONMEM_CORPUS"); d != "" {
		return d
	}
	dir, err := filepath.Abs("..")
	if err != nil {
		return ""
	}
	for range 4 {
		c := filepath.Join(dir, "shared", "corpus")
		if _, err := os.Stat(filepath.Join(c, "SOURCES.md")); err == nil {
			return c
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

// probeFile is one transcript's hand-written probe list.
type probeFile struct {
	Transcript string  `json:"transcript"`
	About      string  `json:"about"`
	Probes     []probe `json:"probes"`
}

// probe is one durable fact: it survives when every string of All occurs in the summary
// (case-insensitive, white space collapsed). Msg is the index of the message it first appears
// in (among the transcript's messages as the transcript package parses them), Line the corpus
// file's line.
type probe struct {
	ID   string   `json:"id"`
	Kind string   `json:"kind"`
	Msg  int      `json:"msg"`
	Line int      `json:"line"`
	Fact string   `json:"fact"`
	All  []string `json:"all"`
}

func loadProbes(t *testing.T, transcript string) probeFile {
	t.Helper()
	name := strings.TrimSuffix(transcript, ".jsonl") + ".probes.json"
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fidelity", name))
	if err != nil {
		t.Fatal(err)
	}
	var pf probeFile
	if err := json.Unmarshal(b, &pf); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(pf.Probes) < 15 {
		t.Fatalf("%s: %d probes, want at least 15", name, len(pf.Probes))
	}
	for _, p := range pf.Probes {
		if !slices.Contains(fidelityKinds, p.Kind) || len(p.All) == 0 || p.Msg < 0 || p.Line <= 0 || p.Fact == "" {
			t.Fatalf("%s: malformed probe %+v", name, p)
		}
	}
	return pf
}

// normText lower-cases s and collapses white space, the form both probes match in.
func normText(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// tally counts facts kept and in scope per kind.
type tally map[string][2]int

func (t tally) add(kind string, kept bool) {
	c := t[kind]
	c[1]++
	if kept {
		c[0]++
	}
	t[kind] = c
}

func (t tally) total() (kept, all int) {
	for _, c := range t {
		kept += c[0]
		all += c[1]
	}
	return kept, all
}

func share(kept, all int) float64 {
	if all == 0 {
		return 1
	}
	return float64(kept) / float64(all)
}

// step is what one compaction of a run measured.
type step struct {
	firstKept      int // index of the first message kept verbatim
	tokens         int // estimated tokens of the stored summary
	a, b           tally
	missA, missB   []string
	filesPrecision float64
	filesRecall    float64
}

// fidelityRun saves file's messages in six parts with summarizer sum compacting after each of
// the first five, and measures every compaction.
func fidelityRun(t *testing.T, file string, opts memory.Options, sum string) []step {
	ctx := t.Context()
	req, _, err := ParseFile(file, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []memory.Message
	for _, it := range req.Items {
		if it.Message != nil { // our compactions, not the agent's
			msgs = append(msgs, *it.Message)
		}
	}
	pf := loadProbes(t, filepath.Base(file))
	facts := independentFacts(msgs)
	svc := newFidelityService(t, opts)
	id := ""
	var steps []step
	for part := 1; part <= fidelityParts; part++ {
		batch := msgs[(part-1)*len(msgs)/fidelityParts : part*len(msgs)/fidelityParts]
		for len(batch) > 0 {
			n := min(len(batch), memory.MaxBatchMessages)
			r, err := svc.Save(ctx, memory.SaveRequest{SessionID: id, WorkingDir: req.WorkingDir, Messages: batch[:n]})
			if err != nil {
				t.Fatalf("save part %d: %v", part, err)
			}
			id, batch = r.SessionID, batch[n:]
		}
		if part == fidelityParts {
			break
		}
		res, err := svc.Compact(ctx, memory.CompactRequest{SessionID: id, Summarizer: sum, KeepRecentTokens: fidelityKeepTokens})
		if err != nil {
			t.Fatalf("compaction %d: %v", part, err)
		}
		if res.Status != memory.StatusCompacted {
			t.Fatalf("compaction %d: %s", part, res.Status)
		}
		steps = append(steps, measure(t, svc, id, res, msgs, req.WorkingDir, pf, facts))
	}
	return steps
}

func newFidelityService(t *testing.T, opts memory.Options) *memory.Service {
	t.Helper()
	store, err := local.Open(t.TempDir(), local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return memory.New(store, opts)
}

func measure(t *testing.T, svc *memory.Service, id string, res memory.CompactResult, msgs []memory.Message, wd string, pf probeFile, facts []fact) step {
	tr, err := svc.Transcript(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	st := step{firstKept: len(tr.Messages), tokens: compaction.EstimateText(res.Summary), a: tally{}, b: tally{}}
	for i, m := range tr.Messages {
		if m.EntryID == res.FirstKeptID {
			st.firstKept = i
			break
		}
	}
	summary := normText(res.Summary)
	for _, p := range pf.Probes {
		if p.Msg >= st.firstKept {
			continue
		}
		kept := true
		for _, s := range p.All {
			kept = kept && strings.Contains(summary, normText(s))
		}
		st.a.add(p.Kind, kept)
		if !kept {
			st.missA = append(st.missA, p.ID)
		}
	}
	for _, f := range facts {
		if f.msg < st.firstKept {
			kept := f.keptIn(res.Summary)
			st.b.add(f.kind, kept)
			if !kept {
				st.missB = append(st.missB, fmt.Sprintf("%s#%d %q", f.kind, f.msg, f.text+f.code+" "+f.file))
			}
		}
	}
	// Files, by the same independent decode as TestCorpusFileTrackingThroughCompactions.
	wantRead, wantMod, shellText := decodeFileCalls(msgs[:st.firstKept], wd)
	want := map[string]bool{}
	for _, p := range append(slices.Clone(wantRead), wantMod...) {
		want[p] = true
	}
	got, right := 0, 0
	for _, p := range res.ModifiedFiles {
		got++
		if slices.Contains(wantMod, p) {
			right++
		}
	}
	for _, p := range res.ReadFiles {
		got++
		if slices.Contains(wantRead, p) || (!want[p] && strings.Contains(shellText, filepath.Base(p))) {
			right++
		}
	}
	found := 0
	for p := range want {
		if slices.Contains(res.ReadFiles, p) || slices.Contains(res.ModifiedFiles, p) {
			found++
		}
		st.b.add("file", strings.Contains(res.Summary, "\n"+p+"\n"))
	}
	st.filesPrecision, st.filesRecall = share(right, got), share(found, len(want))
	return st
}

// TestFidelity is the benchmark and its bars for the extractive summarizer; the llm summarizer
// is measured when configured.
func TestFidelity(t *testing.T) {
	corpus := findCorpus()
	if corpus == "" {
		t.Skip("corpus not present: set SESSIONMEM_CORPUS to the directory of ../shared/corpus")
	}
	if testing.Short() {
		t.Skip("long: compacts four real transcripts five times each")
	}
	files, _ := filepath.Glob(filepath.Join(corpus, "*.jsonl"))
	slices.Sort(files)
	if len(files) == 0 {
		t.Skip("corpus directory holds no transcripts")
	}
	runs := []struct {
		name string
		opts memory.Options
		bars bool
	}{{name: memory.SummarizerExtractive, bars: true}}
	if url := os.Getenv("SESSIONMEM_LLM_URL"); url != "" {
		llm, err := compaction.NewLLM(compaction.LLMConfig{URL: url, Model: os.Getenv("SESSIONMEM_LLM_MODEL"), APIKey: os.Getenv("SESSIONMEM_LLM_API_KEY")})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, struct {
			name string
			opts memory.Options
			bars bool
		}{name: memory.SummarizerLLM, opts: memory.Options{LLM: llm}})
	}
	var md strings.Builder
	for _, run := range runs {
		results := make([][]step, len(files))
		t.Run(run.name, func(t *testing.T) {
			for i, f := range files {
				t.Run(filepath.Base(f), func(t *testing.T) {
					t.Parallel()
					results[i] = fidelityRun(t, f, run.opts, run.name)
				})
			}
		})
		report(t, &md, run.name, files, results, run.bars)
	}
	if *fidelityMD != "" {
		if err := os.WriteFile(*fidelityMD, []byte(md.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// report logs and renders the figures of one summarizer and checks the bars.
func report(t *testing.T, md *strings.Builder, name string, files []string, results [][]step, bars bool) {
	fmt.Fprintf(md, "### %s summarizer\n\n", name)
	fmt.Fprintf(md, "| transcript | after | summary tokens | constraints | errors | commands | files | numbers | probe A | probe B | files P / R |\n")
	fmt.Fprintf(md, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	var poolA, poolB [2]int
	kindsA, kindsB, maxTokens := tally{}, tally{}, 0
	for i, f := range files {
		steps := results[i]
		if len(steps) == 0 {
			continue // the run failed and said why
		}
		for n, st := range steps {
			if bars {
				if st.filesPrecision != 1 || st.filesRecall != 1 {
					t.Errorf("%s compaction %d: files precision %.3f recall %.3f, want 1 and 1", filepath.Base(f), n+1, st.filesPrecision, st.filesRecall)
				}
				if st.tokens > fidelityMaxTokens {
					t.Errorf("%s compaction %d: summary %d tokens, want at most %d", filepath.Base(f), n+1, st.tokens, fidelityMaxTokens)
				}
			}
			if !strings.Contains(fidelityReportSteps, fmt.Sprint(n+1)) {
				continue
			}
			ka, na := st.a.total()
			kb, nb := st.b.total()
			fmt.Fprintf(md, "| %s | %d | %d |", strings.TrimSuffix(filepath.Base(f), ".jsonl"), n+1, st.tokens)
			for _, k := range fidelityKinds {
				c := st.a[k]
				if c[1] == 0 {
					fmt.Fprintf(md, " – |")
					continue
				}
				fmt.Fprintf(md, " %d/%d |", c[0], c[1])
			}
			fmt.Fprintf(md, " %.0f%% | %.0f%% | %.2f / %.2f |\n", 100*share(ka, na), 100*share(kb, nb), st.filesPrecision, st.filesRecall)
			t.Logf("%s %s after %d: %d tokens, probe A %d/%d %v, probe B %d/%d %v, missed %v", name, filepath.Base(f), n+1, st.tokens, ka, na, st.a, kb, nb, st.b, st.missA)
			if n+1 == len(steps) && testing.Verbose() {
				t.Logf("probe B missed after %d: %s", n+1, strings.Join(st.missB, "\n"))
			}
		}
		last := steps[len(steps)-1]
		for k, c := range last.a {
			kindsA[k] = [2]int{kindsA[k][0] + c[0], kindsA[k][1] + c[1]}
		}
		for k, c := range last.b {
			kindsB[k] = [2]int{kindsB[k][0] + c[0], kindsB[k][1] + c[1]}
		}
		for _, st := range steps {
			maxTokens = max(maxTokens, st.tokens)
		}
		ka, na := last.a.total()
		kb, nb := last.b.total()
		poolA[0], poolA[1] = poolA[0]+ka, poolA[1]+na
		poolB[0], poolB[1] = poolB[0]+kb, poolB[1]+nb
	}
	fmt.Fprintf(md, "\nAll four after five compactions, per kind (largest summary of any compaction: %d tokens):\n\n", maxTokens)
	fmt.Fprintf(md, "| probe | constraints | errors | commands | files | numbers |\n|---|---|---|---|---|---|\n")
	for _, p := range []struct {
		name string
		t    tally
	}{{"A (hand-written)", kindsA}, {"B (mechanical)", kindsB}} {
		fmt.Fprintf(md, "| %s |", p.name)
		for _, k := range fidelityKinds {
			c := p.t[k]
			fmt.Fprintf(md, " %d/%d = %.0f%% |", c[0], c[1], 100*share(c[0], c[1]))
		}
		fmt.Fprintln(md)
	}
	a, b := share(poolA[0], poolA[1]), share(poolB[0], poolB[1])
	fmt.Fprintf(md, "\nAfter five compactions, all four transcripts: probe A %d/%d = %.1f%%, probe B %d/%d = %.1f%%.\n\n", poolA[0], poolA[1], 100*a, poolB[0], poolB[1], 100*b)
	t.Logf("%s overall after five compactions: probe A %.1f%%, probe B %.1f%%", name, 100*a, 100*b)
	if bars && (a < fidelityMinShare || b < fidelityMinShare) {
		t.Errorf("%s: facts kept after five compactions: probe A %.1f%%, probe B %.1f%%, want at least %.0f%% each", name, 100*a, 100*b, 100*fidelityMinShare)
	}
}

// TestFidelityProbesLocated checks probe A's references: each fact's text occurs in the
// message it names (text, tool call arguments or output) and in the corpus line it names.
func TestFidelityProbesLocated(t *testing.T) {
	corpus := findCorpus()
	if corpus == "" {
		t.Skip("corpus not present: set SESSIONMEM_CORPUS to the directory of ../shared/corpus")
	}
	files, _ := filepath.Glob(filepath.Join(corpus, "*.jsonl"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			req, _, err := ParseFile(f, FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, it := range req.Items {
				if it.Message != nil {
					b, _ := json.Marshal(it.Message)
					var v any
					_ = json.Unmarshal(b, &v)
					msgs = append(msgs, normText(strings.Join(stringsIn(v), "\n")))
				}
			}
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(raw), "\n")
			for _, p := range loadProbes(t, filepath.Base(f)).Probes {
				if p.Msg >= len(msgs) || p.Line > len(lines) {
					t.Errorf("%s: msg %d or line %d out of range", p.ID, p.Msg, p.Line)
					continue
				}
				var v any
				_ = json.Unmarshal([]byte(lines[p.Line-1]), &v)
				line := normText(strings.Join(stringsIn(v), "\n"))
				for _, s := range p.All {
					if !strings.Contains(msgs[p.Msg], normText(s)) {
						t.Errorf("%s: %q is not in message %d", p.ID, s, p.Msg)
					}
					if !strings.Contains(line, normText(s)) {
						t.Errorf("%s: %q is not on line %d", p.ID, s, p.Line)
					}
				}
			}
		})
	}
}

// stringsIn lists every string in a decoded JSON value.
func stringsIn(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, y := range x {
			out = append(out, stringsIn(y)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, y := range x {
			out = append(out, stringsIn(y)...)
		}
		return out
	}
	return nil
}
