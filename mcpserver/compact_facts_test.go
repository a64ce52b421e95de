package mcpserver

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/memory"
)

// session_compact returns the durable-facts ledger as structured fields, with empty lists as
// [] (the TypeScript SDK validates structured content against the output schema).
func TestCompactReturnsFacts(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var msgs []any
	for i := range 30 {
		msgs = append(msgs, userMsg(idf("u", i), "Never touch the vendor directory. The port is :8080. "+strings.Repeat("detail ", 100)),
			assistantMsg(idf("a", i), "answer "+strings.Repeat("detail ", 100)))
	}
	var saved memory.SaveResult
	f.ok("session_save", obj{"working_dir": dir, "messages": msgs}, &saved)
	res := f.ok("session_compact", obj{"session_id": saved.SessionID, "summarizer": "extractive", "keep_recent_tokens": 1000}, nil)
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Summary string                     `json:"summary"`
		Facts   map[string]json.RawMessage `json:"facts"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"constraints", "values", "commands", "errors", "dropped"} {
		if v := out.Facts[k]; len(v) == 0 || string(v) == "null" {
			t.Errorf("facts.%s = %s", k, v)
		}
	}
	if !strings.Contains(string(out.Facts["constraints"]), "Never touch the vendor directory.") ||
		!strings.Contains(out.Summary, "\n<user-constraints>\n- Never touch the vendor directory.") {
		t.Errorf("facts %s\nsummary %s", b, out.Summary)
	}
	if string(out.Facts["commands"]) != "[]" {
		t.Errorf("facts.commands = %s, want []", out.Facts["commands"])
	}
}

// A compacted answer over the response cap drops the structured copy of the facts: the
// summary ends with the same facts in tagged blocks.
func TestCompactResultDropsFactsOverCap(t *testing.T) {
	l := &compaction.Ledger{Constraints: []compaction.LedgerNote{{Text: strings.Repeat("a rule ", 400)}}}
	res := memory.CompactResult{Status: memory.StatusCompacted, Summary: compaction.AppendLedger("## Goal", l), Facts: l, Summarizer: "extractive"}
	if out := compactResult(res, "s1", 20000); !strings.Contains(mustString(out.StructuredContent), `"facts"`) {
		t.Error("facts left out under the cap")
	}
	out := compactResult(res, "s1", 1000)
	if s := mustString(out.StructuredContent); strings.Contains(s, `"facts"`) || !strings.Contains(text(out), "left out of facts") {
		t.Errorf("over the cap: facts kept or not explained: %s", text(out))
	}
}

// The compacted answer carries every field of the contract's, the file lists as [] when no
// tool call named a file (they were left out when empty).
func TestCompactedAnswerHasEveryField(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	id := f.newSession(dir, "plain talk", 20, strings.Repeat("words about the plan ", 40))
	var got map[string]json.RawMessage
	f.ok("session_compact", obj{"session_id": id, "summarizer": "extractive", "keep_recent_tokens": 1000}, &got)
	for _, k := range []string{"status", "summary", "tokens_before", "tokens_after", "first_kept_id", "read_files", "modified_files", "summarizer"} {
		if _, ok := got[k]; !ok {
			t.Errorf("compacted answer without %q: %v", k, slices.Collect(maps.Keys(got)))
		}
	}
	if string(got["status"]) != `"compacted"` || string(got["read_files"]) != "[]" || string(got["modified_files"]) != "[]" {
		t.Errorf("status %s, read_files %s, modified_files %s", got["status"], got["read_files"], got["modified_files"])
	}
}
