package compaction

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var mainSections = []string{secGoal, secConstraints, secDone, secInProgress, secBlocked, secDecisions, secNext, secCritical}

// sourceText gathers every string of the entries, normalised the way bullets are, so a
// bullet can be traced back to the conversation.
func sourceText(entries []Entry) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteString("\n")
		case []any:
			for _, y := range x {
				walk(y)
			}
		case map[string]any:
			if x["type"] == "image" {
				return
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	for _, e := range entries {
		switch e.Kind {
		case KindMessage:
			var v any
			if err := json.Unmarshal(e.Message, &v); err != nil {
				panic(err)
			}
			walk(v)
		case KindBranchSummary, KindCompaction:
			b.WriteString(e.Summary + "\n")
		}
	}
	return normSource(b.String())
}

func normSource(s string) string {
	s = strings.ReplaceAll(s, "**", "")
	s = strings.ReplaceAll(s, "`", "'")
	return spaceRe().ReplaceAllString(s, " ")
}

var (
	labelRe = regexp.MustCompile(`^(Changed|Ran|Commands run:|Error seen:|Resolved:)\s*`)
	spanRe  = regexp.MustCompile("`([^`]*)`")
)

// traceable reports whether a bullet consists of text found in source (clipping aside).
func traceable(bullet, source string) bool {
	in := func(s string) bool {
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "…"))
		s = strings.ReplaceAll(s, "**", "")
		return s == "" || strings.Contains(source, spaceRe().ReplaceAllString(s, " "))
	}
	bullet = labelRe.ReplaceAllString(strings.TrimPrefix(bullet, "Resolved: "), "")
	if spans := spanRe.FindAllStringSubmatch(bullet, -1); len(spans) > 0 {
		for _, s := range spans {
			if !in(s[1]) {
				return false
			}
		}
		return true
	}
	if before, after, found := strings.Cut(bullet, "**: "); found {
		return in(before) && in(after)
	}
	return in(bullet)
}

// checkExtractiveFilled summarizes path extractively and checks every section has bullets
// that come from the conversation (sections in mayBeEmpty may say "(none)").
func checkExtractiveFilled(t *testing.T, path []Entry, mayBeEmpty []string) string {
	t.Helper()
	out, err := Extractive{}.Summarize(t.Context(), Request{History: path})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out); n > ExtractiveMaxChars+100 {
		t.Errorf("summary is %d characters, want at most about %d", n, ExtractiveMaxChars)
	}
	for _, h := range []string{"## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress", "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context"} {
		if !strings.Contains(out, "\n"+h+"\n") && !strings.HasPrefix(out, h+"\n") {
			t.Errorf("summary lacks heading %q", h)
		}
	}
	source := sourceText(path)
	got := parseSummary(out)
	for _, sec := range mainSections {
		if len(got[sec]) == 0 && !slices.Contains(mayBeEmpty, sec) {
			t.Errorf("section %q is empty", sec)
		}
		for _, b := range got[sec] {
			if !traceable(b, source) {
				t.Errorf("section %q: bullet not found in the conversation: %q", sec, b)
			}
		}
	}
	if t.Failed() {
		t.Logf("summary:\n%s", out)
	}
	return out
}

// allowedEmpty: Blocked may say "(none)" only when every failure in the window was resolved.
func allowedEmpty(path []Entry) []string {
	if len(unresolvedFailures(parseWindow(path))) == 0 {
		return []string{secBlocked}
	}
	return nil
}

func TestExtractiveFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			path := readEntries(t, f.name)
			checkExtractiveFilled(t, path, allowedEmpty(path))
		})
	}
}

// session builds a small coding session with every kind of fact the extraction looks for.
func session(tag string) []Entry {
	return ids([]Entry{
		userE(fmt.Sprintf("Add a retry loop to fetch_%s.go. You must keep the public API unchanged and never log secrets.", tag)),
		asstE("Let me look at the file first.", tcall(tag+"1", "read", map[string]any{"path": "fetch_" + tag + ".go"})),
		resE(tag+"1", "package fetch\nfunc Get() {}", false),
		asstE("I decided to use exponential backoff because the server rate-limits bursts.", tcall(tag+"2", "edit", map[string]any{"path": "fetch_" + tag + ".go", "old": "a", "new": "b"})),
		resE(tag+"2", "ok", false),
		asstE("Now the tests.", tcall(tag+"3", "bash", map[string]any{"command": "go test ./fetch_" + tag})),
		resE(tag+"3", "--- FAIL: TestRetry_"+tag+" (0.02s)\nretry_test.go:12: want 3 attempts, got 1", true),
		asstE("I fixed the attempt counter in fetch_"+tag+".go.", tcall(tag+"4", "bash", map[string]any{"command": "go vet ./fetch_" + tag})),
		resE(tag+"4", "error: vet failed on port 8443", true),
		userE("Prefer table tests. Also, what is the timeout for " + tag + "?"),
		asstE("The timeout is 250 ms for " + tag + ". Next I will rerun go test and then update README_" + tag + ".md."),
	})
}

func TestExtractiveSections(t *testing.T) {
	out := checkExtractiveFilled(t, session("a"), nil)
	for _, want := range []string{
		"Add a retry loop to fetch_a.go",
		"You must keep the public API unchanged and never log secrets.",
		"- [x] Changed `fetch_a.go`",
		"**I decided to use exponential backoff**: because the server rate-limits bursts.",
		"`go test ./fetch_a` failed: `--- FAIL: TestRetry_a (0.02s)`",
		"Prefer table tests.",
		"The timeout is 250 ms for a.",
		"Next I will rerun go test and then update README_a.md.",
		"Commands run: `go test ./fetch_a`, `go vet ./fetch_a`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q\n%s", want, out)
		}
	}
	again, _ := Extractive{}.Summarize(t.Context(), Request{History: session("a")})
	if again != out {
		t.Fatal("extractive summary is not deterministic")
	}
}

func TestExtractiveResolvedErrorIsNotBlocked(t *testing.T) {
	path := ids([]Entry{
		userE("Make the build pass, it must stay green."),
		asstE("Building.", tcall("b1", "bash", map[string]any{"command": "make build"})),
		resE("b1", "main.go:3: undefined: foo", true),
		asstE("I fixed the typo in main.go.", tcall("b2", "bash", map[string]any{"command": "make build"})),
		resE("b2", "ok", false),
	})
	out, err := Extractive{}.Summarize(t.Context(), Request{History: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := parseSummary(out)[secBlocked]; len(got) != 0 {
		t.Fatalf("Blocked = %q, want none (the build succeeded later)", got)
	}
	if !strings.Contains(out, "Error seen: `main.go:3: undefined: foo`") {
		t.Fatalf("critical context lacks the error seen:\n%s", out)
	}
}

// TestExtractiveFactsSurviveCompactions runs three successive compactions, each over a new
// window plus the previous summary, and checks that facts from the first window are still in
// the last summary.
func TestExtractiveFactsSurviveCompactions(t *testing.T) {
	prev := ""
	for _, tag := range []string{"a", "b", "c"} {
		out, err := Extractive{}.Summarize(t.Context(), Request{History: session(tag), PreviousSummary: prev})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > ExtractiveMaxChars {
			t.Fatalf("summary after %s is %d characters", tag, len(out))
		}
		prev = out + "\n\n<read-files>\nx.go\n</read-files>" // stored summaries carry file tags
	}
	final := parseSummary(prev)
	facts := []struct{ section, text string }{
		{secGoal, "Add a retry loop to fetch_a.go"},
		{secConstraints, "You must keep the public API unchanged and never log secrets."},
		{secDone, "Changed `fetch_a.go`"},
		{secDecisions, "exponential backoff"},
		{secCritical, "The timeout is 250 ms for a."},
		{secCritical, "`go test ./fetch_a`"},
		{secBlocked, "`go vet ./fetch_a` failed"},
		{secGoal, "Add a retry loop to fetch_c.go"},
		{secDone, "Changed `fetch_c.go`"},
	}
	for _, f := range facts {
		if !slices.ContainsFunc(final[f.section], func(b string) bool { return strings.Contains(b, f.text) }) {
			t.Errorf("section %q lost %q after 3 compactions:\n%s", f.section, f.text, prev)
		}
	}
	if strings.Count(prev, "<read-files>") != 1 {
		t.Errorf("file tags of earlier summaries were fed back:\n%s", prev)
	}
	// Work in progress at the first compaction has been carried on since: it is now Done.
	if !slices.ContainsFunc(final[secDone], func(b string) bool { return strings.Contains(b, "what is the timeout for a?") }) {
		t.Errorf("earlier in-progress item did not move to Done:\n%s", prev)
	}
}

func TestExtractiveResolvesPreviousBlocker(t *testing.T) {
	prev := "## Progress\n### Blocked\n- bash `make build` failed: `undefined: foo`\n"
	path := ids([]Entry{
		userE("try again"),
		asstE("Building.", tcall("b1", "bash", map[string]any{"command": "make build"})),
		resE("b1", "ok", false),
	})
	out, err := Extractive{}.Summarize(t.Context(), Request{History: path, PreviousSummary: prev})
	if err != nil {
		t.Fatal(err)
	}
	s := parseSummary(out)
	if len(s[secBlocked]) != 0 || !slices.Contains(s[secDone], "Resolved: bash `make build` failed: `undefined: foo`") {
		t.Fatalf("previous blocker not resolved:\n%s", out)
	}
}

func TestExtractiveBounded(t *testing.T) {
	var path []Entry
	for i := range 400 {
		id := fmt.Sprintf("c%d", i)
		path = append(path,
			userE(fmt.Sprintf("Request %d: you must never touch file_%d.go and always prefer option %d. %s", i, i, i, textOf(50))),
			asstE(fmt.Sprintf("I decided on plan %d because reason %d. I fixed bug %d. Next I will do step %d.", i, i, i, i),
				tcall(id, "bash", map[string]any{"command": fmt.Sprintf("go test ./pkg%d", i)})),
			resE(id, fmt.Sprintf("FAIL pkg%d: 12 tests, 3 failures", i), i%2 == 0),
		)
	}
	prev := ""
	for round := range 3 {
		out, err := Extractive{}.Summarize(t.Context(), Request{History: ids(path), PreviousSummary: prev})
		if err != nil {
			t.Fatal(err)
		}
		if got := EstimateText(out); got > 2100 {
			t.Fatalf("round %d: summary is %d tokens, want about 2,000 at most", round, got)
		}
		if !strings.Contains(out, "Request 0: you must never touch file_0.go") {
			t.Fatalf("round %d: the original goal was dropped", round)
		}
		prev = out
	}
}

func TestExtractiveTurnPrefix(t *testing.T) {
	prefix := session("p")[:7]
	out, err := Extractive{}.Summarize(t.Context(), Request{TurnPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"## Original Request\nAdd a retry loop to fetch_p.go.", "## Early Progress\n- Changed `fetch_p.go`", "## Context for Suffix\n"} {
		if !strings.Contains(out, h) {
			t.Errorf("turn-prefix summary lacks %q:\n%s", h, out)
		}
	}
	if strings.Contains(out, "## Goal") {
		t.Errorf("turn-prefix summary uses the full layout:\n%s", out)
	}
}

func TestExtractiveHonoursContext(t *testing.T) {
	ctx, cancel := contextWithCancel(t)
	cancel()
	if _, err := (Extractive{}).Summarize(ctx, Request{History: session("x")}); err == nil {
		t.Fatal("Summarize with a cancelled context succeeded")
	}
}

func TestExtractiveEmpty(t *testing.T) {
	out, err := Extractive{}.Summarize(t.Context(), Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out, "(none)"); got != len(mainSections) {
		t.Fatalf("empty request: %d sections say (none), want %d:\n%s", got, len(mainSections), out)
	}
}

func TestSearchWithNoMatchIsNotBlocked(t *testing.T) {
	grep := func(id, cmd, out string) []Entry {
		return []Entry{
			{ID: id + "a", Kind: KindMessage, Message: []byte(`{"role":"assistant","content":[{"type":"tool_call","id":"` + id + `","name":"bash","arguments":{"command":` + strconv.Quote(cmd) + `}}]}`)},
			{ID: id + "r", Kind: KindMessage, Message: []byte(`{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"` + id + `","content":[{"type":"text","text":` + strconv.Quote(out) + `}],"is_error":true}]}`)},
		}
	}
	history := []Entry{{ID: "u", Kind: KindMessage, Message: []byte(`{"role":"user","content":[{"type":"text","text":"find the console calls"}]}`)}}
	history = append(history, grep("c1", `grep -n "console" src/theme.ts`, "Command exited with code 1")...)
	history = append(history, grep("c2", `cd pkg && rg TODO`, "")...)
	history = append(history, grep("c3", `go build ./...`, "main.go:3: undefined: x\nCommand exited with code 1")...)
	sum, err := Extractive{}.Summarize(t.Context(), Request{History: history})
	if err != nil {
		t.Fatal(err)
	}
	blocked := sum[strings.Index(sum, "### Blocked"):strings.Index(sum, "## Key Decisions")]
	if strings.Contains(blocked, "console") || strings.Contains(blocked, "TODO") {
		t.Errorf("a search with no match is listed as blocked:\n%s", blocked)
	}
	if !strings.Contains(blocked, "go build") {
		t.Errorf("a real failure is missing from Blocked:\n%s", blocked)
	}
}
