package compaction

import (
	"slices"
	"strings"
	"testing"
)

// foreignSummary is a summary in the layout Claude Code writes (an analysis, then "Summary:"
// with numbered sections), made up for this test.
const foreignSummary = `Analysis:
Let me go through the conversation in order:
1. **Initial Request**: the scratchpad repeats the request; ANALYSIS-ONLY words.

Summary:
1. Primary Request and Intent:
   The user asked to port the release scripts from bash to Go, one script at a time.

2. Key Technical Concepts:
   - Release artifacts are signed with cosign before upload
   - **scripts/release.go**: the new entry point

3. Files and Code Sections:
   - scripts/release.go (new)
` + "   ```go\n   func main() { CODE-ONLY() }\n   ```" + `

4. Errors and fixes:
   - go vet flagged a copied lock: passed the mutex by pointer

5. Problem Solving:
   Kept the bash scripts runnable until every Go port passes CI.

6. All user messages:
   - "Please port the release scripts to Go"
   - "never push tags from the script"
   - "thanks, looks good"

7. Pending Tasks:
   - Port scripts/changelog.sh

8. Current Work:
   Porting scripts/sign.sh; the cosign call is written, its test is not.

9. Optional Next Step:
   Write the test for the cosign call.
`

// A previous summary in another agent's layout (an imported session's) is read into the
// template's sections instead of being dropped: the first extractive compaction after an
// import used to write "Goal (none)" and lose everything the imported summary held.
func TestExtractiveKeepsForeignSummary(t *testing.T) {
	window := []Entry{asstE("Let me continue with the cosign test."), asstE("The test for the cosign call is written and passes.")}
	out, err := Extractive{}.Summarize(t.Context(), Request{History: window, PreviousSummary: foreignSummary})
	if err != nil {
		t.Fatal(err)
	}
	got := parseSummary(out)
	for _, f := range []struct{ section, text string }{
		{secGoal, "port the release scripts from bash to Go"},
		{secConstraints, "never push tags from the script"},
		{secCritical, "signed with cosign"},
		{secDone, "passed the mutex by pointer"},
		{secDecisions, "Kept the bash scripts runnable"},
		{secDone, "Porting scripts/sign.sh"}, // in progress last time: carried on since
	} {
		if !slices.ContainsFunc(got[f.section], func(b string) bool { return strings.Contains(b, f.text) }) {
			t.Errorf("section %q lacks %q:\n%s", f.section, f.text, out)
		}
	}
	for _, absent := range []string{"ANALYSIS-ONLY", "CODE-ONLY", "thanks, looks good"} {
		if strings.Contains(out, absent) {
			t.Errorf("summary holds %q:\n%s", absent, out)
		}
	}
}

func TestForeignHeadings(t *testing.T) {
	for _, tc := range []struct {
		line, title, rest, section string
		ok                         bool
	}{
		{"1. Primary Request and Intent:", "Primary Request and Intent", "", secGoal, true},
		{"7. Pending Tasks:", "Pending Tasks", "", secNext, true},
		{"1. **Initial Request**: do the thing", "Initial Request", "do the thing", secGoal, true},
		{"## Key Technical Concepts", "Key Technical Concepts", "", secCritical, true},
		{"**Current Work**", "Current Work", "", secInProgress, true},
		{"Analysis:", "Analysis", "", "", true},
		{"1. Ran the tests: all pass", "", "", "", false},
		{"The fix: use a pointer", "", "", "", false},
		{"plain text without a title", "", "", "", false},
	} {
		title, rest, ok := foreignHeading(tc.line)
		if ok != tc.ok || (ok && (title != tc.title || rest != tc.rest || foreignSection(title) != tc.section)) {
			t.Errorf("foreignHeading(%q) = %q, %q, %v (section %q)", tc.line, title, rest, ok, foreignSection(title))
		}
	}
	if !isTemplateSummary("## Goal\n- x\n") || isTemplateSummary(foreignSummary) {
		t.Errorf("isTemplateSummary is wrong about the template or the foreign layout")
	}
}
