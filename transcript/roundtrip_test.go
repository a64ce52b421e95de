package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
)

// A session compacted twice by different summarizers exports every compaction with its
// summarizer, times and tokens, and the round trip reproduces the bytes.
func TestExportRoundTripKeepsEveryCompaction(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	svc := newService(t, filepath.Join(dir, "a"))
	var id string
	save := func(round int) {
		var msgs []memory.Message
		for i := range 12 {
			c := fmt.Sprintf("c%d-%d", round, i)
			msgs = append(msgs,
				memory.Message{Role: memory.RoleUser, Content: []memory.Block{{Type: "text", Text: fmt.Sprintf("round %d step %d <b>&", round, i)}}},
				memory.Message{Role: memory.RoleAssistant, Content: []memory.Block{{Type: "tool_call", ID: c, Name: "edit",
					Arguments: json.RawMessage(fmt.Sprintf(`{"path":"/w/f%d.go"}`, i))}}},
				memory.Message{Role: memory.RoleToolResult, Content: []memory.Block{{Type: "tool_result", ToolCallID: c,
					Content: []memory.Block{{Type: "text", Text: strings.Repeat("output ", 400)}}}}})
		}
		if round == 0 {
			msgs[0].Pinned = true // exports carry pins
		}
		res, err := svc.Save(ctx, memory.SaveRequest{SessionID: id, WorkingDir: "/w", Name: "rt", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		id = res.SessionID
	}
	save(0)
	if _, err := svc.Compact(ctx, memory.CompactRequest{SessionID: id, Summarizer: "extractive", KeepRecentTokens: 3000}); err != nil {
		t.Fatal(err)
	}
	save(1)
	step1, err := svc.Compact(ctx, memory.CompactRequest{SessionID: id, KeepRecentTokens: 3000})
	if err != nil || step1.Status != memory.StatusNeedsSummary {
		t.Fatal(err, step1.Status)
	}
	if _, err := svc.Compact(ctx, memory.CompactRequest{SessionID: id, CompactionID: step1.CompactionID, Summary: "## Goal\nround two"}); err != nil {
		t.Fatal(err)
	}
	save(2)
	var first bytes.Buffer
	if err := Export(ctx, svc, id, &first); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(first.String(), `"type":"compaction"`); got != 2 {
		t.Fatalf("export has %d compaction lines, want 2", got)
	}
	for _, who := range []string{`"summarizer":"extractive"`, `"summarizer":"agent"`} {
		if !strings.Contains(first.String(), who) {
			t.Errorf("export lacks %s", who)
		}
	}
	if got := strings.Count(first.String(), `"pinned":true`); got != 1 {
		t.Fatalf("export has %d pinned messages, want 1", got)
	}
	exp := filepath.Join(dir, "export.jsonl")
	if err := os.WriteFile(exp, first.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := newService(t, filepath.Join(dir, "b"))
	if _, err := (&Importer{Svc: fresh}).ImportFile(ctx, exp, FormatSessionmem); err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if err := Export(ctx, fresh, id, &second); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		a, b := strings.Split(first.String(), "\n"), strings.Split(second.String(), "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				j := 0
				for j < len(a[i]) && j < len(b[i]) && a[i][j] == b[i][j] {
					j++
				}
				t.Fatalf("exports differ at line %d col %d:\n%.300s\n%.300s", i+1, j, a[i][max(0, j-100):], b[i][max(0, j-100):])
			}
		}
		t.Fatalf("exports differ in length")
	}
	r1, _ := svc.Resume(ctx, memory.ResumeRequest{SessionID: id, MaxTokens: 1 << 20})
	r2, _ := fresh.Resume(ctx, memory.ResumeRequest{SessionID: id, MaxTokens: 1 << 20})
	if r1.Summary != r2.Summary || len(r1.Messages) != len(r2.Messages) || r1.Messages[0].EntryID != r2.Messages[0].EntryID {
		t.Fatalf("resume differs after round trip")
	}
}
