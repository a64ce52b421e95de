package transcript

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/fileops"
	"github.com/sessionmem/sessionmem/memory"
)

// TestCorpusFileTrackingThroughCompactions is the compaction issue's bar, end to end: each real
// transcript is imported in four parts with a compaction after each of the first three, and
// every compaction's file lists must equal, exactly, what an independent decode of the
// read/write/edit tool calls before its first kept entry gives (reads that shell commands
// made, which that decode ignores, are allowed on top).
func TestCorpusFileTrackingThroughCompactions(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		t.Skip("no corpus at " + corpusDir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			req, _, err := ParseFile(f, FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			var items []memory.ImportItem // messages only: our compactions, not the agent's
			for _, it := range req.Items {
				if it.Message != nil {
					items = append(items, it)
				}
			}
			svc := newService(t, t.TempDir())
			for part := 1; part <= 4; part++ {
				r := req
				r.Items = items[(part-1)*len(items)/4 : part*len(items)/4]
				if _, err := svc.Import(ctx, r); err != nil {
					t.Fatal(err)
				}
				if part == 4 {
					break
				}
				res, err := svc.Compact(ctx, memory.CompactRequest{SessionID: req.SessionID, Summarizer: "extractive", KeepRecentTokens: 5000})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != memory.StatusCompacted {
					t.Fatalf("part %d: %s", part, res.Status)
				}
				tr, err := svc.Transcript(ctx, req.SessionID)
				if err != nil {
					t.Fatal(err)
				}
				var before []memory.Message
				for _, m := range tr.Messages {
					if m.EntryID == res.FirstKeptID {
						break
					}
					before = append(before, m)
				}
				wantRead, wantMod, shellText := decodeFileCalls(before, req.WorkingDir)
				if got := strings.Join(res.ModifiedFiles, "\n"); got != strings.Join(wantMod, "\n") {
					t.Errorf("compaction %d: modified files differ\n got %d: %.300s\nwant %d: %.300s", part, len(res.ModifiedFiles), got, len(wantMod), strings.Join(wantMod, " "))
				}
				want := map[string]bool{}
				for _, p := range wantRead {
					want[p] = true
				}
				got := map[string]bool{}
				for _, p := range res.ReadFiles {
					got[p] = true
					if !want[p] && !strings.Contains(shellText, filepath.Base(p)) {
						t.Errorf("compaction %d: read file %s has no tool call", part, p)
					}
				}
				for p := range want {
					if !got[p] {
						t.Errorf("compaction %d: read file %s missing", part, p)
					}
				}
				t.Logf("compaction %d: %d read, %d modified, %d messages summarized", part, len(res.ReadFiles), len(res.ModifiedFiles), len(before))
			}
		})
	}
}

// decodeFileCalls is the independent reference: a plain decode of pi's read/write/edit and
// Claude Code's Read/Write/Edit/MultiEdit/NotebookEdit calls, normalized like the contract says.
// It also returns the text of every other tool call, where shell reads live.
func decodeFileCalls(msgs []memory.Message, wd string) (read, modified []string, other string) {
	r, m := map[string]bool{}, map[string]bool{}
	var sb strings.Builder
	for _, msg := range msgs {
		for _, b := range msg.Content {
			if b.Type != memory.BlockToolCall {
				continue
			}
			var args map[string]any
			_ = json.Unmarshal(b.Arguments, &args)
			path, _ := args["path"].(string)
			if path == "" {
				path, _ = args["file_path"].(string)
			}
			if path == "" {
				path, _ = args["notebook_path"].(string)
			}
			norm, ok := fileops.Normalize(path, wd)
			switch b.Name {
			case "read", "Read", "NotebookRead":
				if ok {
					r[norm] = true
				}
			case "write", "edit", "Write", "Edit", "MultiEdit", "NotebookEdit":
				if ok {
					m[norm] = true
				}
			default:
				fmt.Fprintf(&sb, "%s %s\n", b.Name, b.Arguments)
			}
		}
	}
	for p := range r {
		if !m[p] {
			read = append(read, p)
		}
	}
	for p := range m {
		modified = append(modified, p)
	}
	sort.Strings(read)
	sort.Strings(modified)
	return read, modified, sb.String()
}
