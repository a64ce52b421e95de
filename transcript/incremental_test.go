package transcript

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
)

// TestIncrementalParse cuts each fixture at every line boundary and at points inside lines:
// parsing the prefix (holding back an open Claude Code message) and then the rest from the
// checkpoint must give exactly the items of one whole parse.
func TestIncrementalParse(t *testing.T) {
	for _, name := range []string{"claude-code-a.jsonl", "claude-code-b.jsonl", "pi-v1.jsonl", "pi-v2.jsonl", "pi-v3.jsonl", "codex-rollout.jsonl"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "testdata", "transcripts", name))
			if err != nil {
				t.Fatal(err)
			}
			whole, _, err := Parse(bytes.NewReader(data), mustDetect(t, name), ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := mustJSON(t, whole.Items)
			format := mustDetect(t, name)
			// About 30 cuts per file, half of them inside a line, keep this fast under -race.
			var cuts []int
			stride := max(1, bytes.Count(data, []byte("\n"))/15)
			n := 0
			for i, c := range data {
				if c == '\n' {
					if n++; n%stride == 0 {
						cuts = append(cuts, i+1, i-1) // after the newline, inside the line
					}
				}
			}
			for _, cut := range cuts {
				first, st, err := Parse(bytes.NewReader(data[:cut]), format, ParseOptions{HoldOpenTail: true})
				if err != nil {
					t.Fatal(err)
				}
				rest, _, err := Parse(bytes.NewReader(data[st.Next.Offset:]), format, ParseOptions{Start: st.Next})
				if err != nil {
					t.Fatal(err)
				}
				if rest.SessionID != whole.SessionID || rest.WorkingDir != whole.WorkingDir {
					t.Fatalf("cut %d: second request %q %q, want %q %q", cut, rest.SessionID, rest.WorkingDir, whole.SessionID, whole.WorkingDir)
				}
				if got := mustJSON(t, append(first.Items, rest.Items...)); got != want {
					t.Fatalf("cut %d: items differ from one whole parse (%d+%d vs %d)", cut, len(first.Items), len(rest.Items), len(whole.Items))
				}
			}
		})
	}
}

func mustDetect(t *testing.T, name string) Format {
	t.Helper()
	f, err := Detect(filepath.Join("..", "testdata", "transcripts", name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestClaudeContinuation: without holding back, an assistant message that grows after an
// import continues under a new id; nothing is lost and no id repeats.
func TestClaudeContinuation(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "transcripts", "claude-code-a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	whole, _, _ := Parse(bytes.NewReader(data), FormatClaudeCode, ParseOptions{})
	// Cut right after the first of msg_01TeKam…'s three tool calls.
	lines := bytes.SplitAfter(data, []byte("\n"))
	cut := 0
	for _, l := range lines[:59] {
		cut += len(l)
	}
	path := filepath.Join(t.TempDir(), "c.jsonl")
	os.WriteFile(path, data[:cut], 0o600)
	first, st, err := ParseFileWith(path, FormatClaudeCode, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Next.OpenMessageID, "msg_01TeKamWeK4PT2KUfBXJHBkX"; got != want {
		t.Fatalf("OpenMessageID = %q, want %q", got, want)
	}
	os.WriteFile(path, data, 0o600)
	rest, _, err := ParseFileWith(path, FormatClaudeCode, ParseOptions{Start: st.Next})
	if err != nil {
		t.Fatal(err)
	}
	all := memory.ImportRequest{Items: append(first.Items, rest.Items...)}
	checkItems(t, all)
	if got, want := sorted(parsedCounts(all).callIDs), sorted(parsedCounts(whole).callIDs); !slices.Equal(got, want) {
		t.Errorf("tool calls %v, want %v", got, want)
	}
	// The first call's result was written before the second call; then the message goes on.
	if got, want := rest.Items[0].Message.Role, memory.RoleToolResult; got != want {
		t.Errorf("first item role = %q, want %q", got, want)
	}
	if id := rest.Items[1].Message.ID; !strings.HasPrefix(id, "msg_01TeKamWeK4PT2KUfBXJHBkX.") {
		t.Errorf("continuation id = %q", id)
	}
}

func TestParseRestartsOnRewrite(t *testing.T) {
	data, _ := os.ReadFile(filepath.Join("..", "testdata", "transcripts", "pi-v2.jsonl"))
	path := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(path, data, 0o600)
	_, st, err := ParseFile(path, FormatPi)
	if err != nil {
		t.Fatal(err)
	}
	v3, _ := os.ReadFile(filepath.Join("..", "testdata", "transcripts", "pi-v3.jsonl"))
	os.WriteFile(path, v3, 0o600) // pi migrating the file in place
	req, st2, err := ParseFileWith(path, FormatPi, ParseOptions{Start: st.Next})
	if err != nil {
		t.Fatal(err)
	}
	if !st2.Restarted || len(req.Items) == 0 {
		t.Errorf("Restarted = %v with %d items; want a restart from the top", st2.Restarted, len(req.Items))
	}
}
