package fileops

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/internal/testpaths"
)

// The fixtures in ../testdata/fileops are excerpts of the shared corpus converted to the contract's
// message shape (see ../testdata/README.md). Regenerate them with
//
//	go test -run TestRegenerateFixtures -regen-fixtures ./fileops/
var regen = flag.Bool("regen-fixtures", false, "rewrite ../testdata/fileops/*.jsonl from ../shared/corpus")

// corpusDir holds the shared corpus of full transcripts ("" when absent: tests using it skip).
var corpusDir = testpaths.CorpusDir()

type fixtureSpec struct {
	out, src string
	lines    int // source lines to convert (0 = all)
}

var fixtureSpecs = []fixtureSpec{
	{out: "pi-excerpt.jsonl", src: "pi-before-compaction.jsonl", lines: 300},
	{out: "cc-excerpt.jsonl", src: "cc-8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", lines: 700},
}

// transcript is a converted session: the working dir and the contract-shaped messages.
type transcript struct {
	WorkingDir string
	Messages   [][]byte
}

// convertCorpus turns pi v1 or Claude Code lines into contract messages. When trim is set,
// long strings are cut so the fixture stays small; paths and shell commands are kept whole.
func convertCorpus(t testing.TB, file string, maxLines int, trim bool) transcript {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("open corpus: %v", err)
	}
	defer f.Close()
	var tr transcript
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		if maxLines > 0 && n > maxLines {
			break
		}
		var line struct {
			Type    string `json:"type"`
			Cwd     string `json:"cwd"`
			Message *struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
				// pi toolResult
				ToolCallID string `json:"toolCallId"`
				IsError    bool   `json:"isError"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if tr.WorkingDir == "" && line.Cwd != "" {
			tr.WorkingDir = line.Cwd
		}
		m := line.Message
		if m == nil || (line.Type != "message" && line.Type != "user" && line.Type != "assistant") {
			continue
		}
		var blocks []map[string]any
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = []map[string]any{{"type": "text", "text": s}}
		} else if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		role := m.Role
		var out []map[string]any
		for _, b := range blocks {
			switch b["type"] {
			case "text":
				out = append(out, map[string]any{"type": "text", "text": cut(trim, b["text"])})
			case "thinking":
				out = append(out, map[string]any{"type": "thinking", "thinking": cut(trim, b["thinking"])})
			case "toolCall", "tool_use":
				args := b["arguments"]
				if args == nil {
					args = b["input"]
				}
				if a, ok := args.(map[string]any); ok && trim {
					for k, v := range a {
						if k != "command" {
							a[k] = cutAny(v)
						}
					}
				}
				out = append(out, map[string]any{"type": "tool_call", "id": b["id"], "name": b["name"], "arguments": args})
			case "tool_result":
				role = "tool_result"
				out = append(out, map[string]any{"type": "tool_result", "tool_call_id": b["tool_use_id"], "content": cutAny(b["content"]), "is_error": b["is_error"] == true})
			}
		}
		switch role {
		case "toolResult":
			var text strings.Builder
			for _, b := range out {
				if s, ok := b["text"].(string); ok {
					text.WriteString(s)
				}
			}
			out = []map[string]any{{"type": "tool_result", "tool_call_id": m.ToolCallID, "content": cut(trim, text.String()), "is_error": m.IsError}}
			role = "tool_result"
		case "user", "assistant", "tool_result":
		default:
			continue
		}
		if len(out) == 0 {
			continue
		}
		msg, err := json.Marshal(map[string]any{"role": role, "content": out})
		if err != nil {
			t.Fatal(err)
		}
		tr.Messages = append(tr.Messages, msg)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read corpus: %v", err)
	}
	return tr
}

func cut(trim bool, v any) any {
	if s, ok := v.(string); ok && trim && len(s) > 300 {
		return strings.ToValidUTF8(s[:300], "") + "…"
	}
	return v
}

func cutAny(v any) any {
	switch x := v.(type) {
	case string:
		return cut(true, x)
	case []any:
		for i := range x {
			x[i] = cutAny(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = cutAny(x[k])
		}
	}
	return v
}

func TestRegenerateFixtures(t *testing.T) {
	if !*regen {
		t.Skip("run with -regen-fixtures to rewrite ../testdata/fileops from ../shared/corpus")
	}
	for _, sp := range fixtureSpecs {
		tr := convertCorpus(t, filepath.Join(corpusDir, sp.src), sp.lines, true)
		var b bytes.Buffer
		hdr, _ := json.Marshal(map[string]string{"working_dir": tr.WorkingDir, "source": sp.src})
		b.Write(hdr)
		b.WriteByte('\n')
		for _, m := range tr.Messages {
			b.Write(m)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join("..", "testdata", "fileops", sp.out), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func loadFixture(t testing.TB, name string) transcript {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "fileops", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var hdr struct {
		WorkingDir string `json:"working_dir"`
	}
	if err := json.Unmarshal(lines[0], &hdr); err != nil || hdr.WorkingDir == "" {
		t.Fatalf("fixture header: %v", err)
	}
	return transcript{WorkingDir: hdr.WorkingDir, Messages: lines[1:]}
}

// expectedOps decodes messages the plain way and collects the paths of the file tools
// (pi read/write/edit, Claude Code Read/Write/Edit/MultiEdit), independently of Extractor.
func expectedOps(t testing.TB, msgs [][]byte, wd string) (read, modified map[string]bool) {
	t.Helper()
	read, modified = map[string]bool{}, map[string]bool{}
	for _, raw := range msgs {
		var m struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string         `json:"type"`
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("decode fixture message: %v", err)
		}
		if m.Role != "assistant" {
			continue
		}
		for _, b := range m.Content {
			if b.Type != "tool_call" {
				continue
			}
			p, _ := b.Arguments["path"].(string)
			if p == "" {
				p, _ = b.Arguments["file_path"].(string)
			}
			if p == "" {
				continue
			}
			switch {
			case strings.HasPrefix(p, wd+"/"):
				p = strings.TrimPrefix(p, wd+"/")
			case !strings.HasPrefix(p, "/"):
				p = path.Clean(p)
			}
			switch b.Name {
			case "read", "Read":
				read[p] = true
			case "write", "edit", "Write", "Edit", "MultiEdit":
				modified[p] = true
			}
		}
	}
	for p := range modified {
		delete(read, p)
	}
	return read, modified
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// precisionRecall compares got with want.
func precisionRecall(got, want []string) (precision, recall float64, extra, missing []string) {
	w := map[string]bool{}
	for _, p := range want {
		w[p] = true
	}
	g := map[string]bool{}
	tp := 0
	for _, p := range got {
		g[p] = true
		if w[p] {
			tp++
		} else {
			extra = append(extra, p)
		}
	}
	for _, p := range want {
		if !g[p] {
			missing = append(missing, p)
		}
	}
	precision, recall = 1, 1
	if len(got) > 0 {
		precision = float64(tp) / float64(len(got))
	}
	if len(want) > 0 {
		recall = float64(tp) / float64(len(want))
	}
	return precision, recall, extra, missing
}

// checkWindows runs the Extractor over msgs split into windows, carrying the lists from one
// window to the next through AddLists as a compaction does, and compares the cumulative lists
// with the independent decode after every window.
func checkWindows(t *testing.T, tr transcript, windows int) {
	t.Helper()
	x := &Extractor{NoShell: true}
	var carriedRead, carriedMod []string
	for w := range windows {
		end := len(tr.Messages) * (w + 1) / windows
		var s Sets
		s.AddLists(carriedRead, carriedMod)
		for _, m := range tr.Messages[len(tr.Messages)*w/windows : end] {
			s.Add(x.Message(m, tr.WorkingDir)...)
		}
		carriedRead, carriedMod = s.Lists()
		wr, wm := expectedOps(t, tr.Messages[:end], tr.WorkingDir)
		for _, c := range []struct {
			kind      string
			got, want []string
		}{{"read", carriedRead, sortedKeys(wr)}, {"modified", carriedMod, sortedKeys(wm)}} {
			p, r, extra, missing := precisionRecall(c.got, c.want)
			t.Logf("window %d/%d %s: %d paths, precision %.3f recall %.3f", w+1, windows, c.kind, len(c.want), p, r)
			if p != 1 || r != 1 {
				t.Errorf("window %d %s: precision %.3f recall %.3f; extra %q; missing %q", w+1, c.kind, p, r, extra, missing)
			}
		}
	}
}

func TestFixturePrecisionRecall(t *testing.T) {
	for _, sp := range fixtureSpecs {
		t.Run(sp.out, func(t *testing.T) {
			tr := loadFixture(t, sp.out)
			checkWindows(t, tr, 1)
			checkWindows(t, tr, 3)
			checkShellExtras(t, tr)
		})
	}
}

// checkShellExtras runs the full Extractor (shell heuristics on): it must find everything the
// file tools name, and every extra read must be a file named in some shell command.
func checkShellExtras(t *testing.T, tr transcript) {
	t.Helper()
	var s Sets
	x := &Extractor{}
	for _, m := range tr.Messages {
		s.Add(x.Message(m, tr.WorkingDir)...)
	}
	read, mod := s.Lists()
	wr, wm := expectedOps(t, tr.Messages, tr.WorkingDir)
	if _, r, _, missing := precisionRecall(mod, sortedKeys(wm)); r != 1 {
		t.Errorf("with shell: modified recall %.3f, missing %q", r, missing)
	}
	all := bytes.Join(tr.Messages, nil)
	_, _, extra, _ := precisionRecall(read, sortedKeys(wr))
	for _, p := range extra {
		if !bytes.Contains(all, []byte(path.Base(p))) {
			t.Errorf("shell read %q appears nowhere in the transcript", p)
		}
	}
	t.Logf("shell heuristics added %d read paths: %q", len(extra), extra)
}

func corpusFiles(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		t.Skip("corpus not present at " + corpusDir)
	}
	return files
}

func TestCorpusPrecisionRecall(t *testing.T) {
	for _, f := range corpusFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tr := convertCorpus(t, f, 0, false)
			checkWindows(t, tr, 1)
			checkWindows(t, tr, 3)
			checkShellExtras(t, tr)
		})
	}
}

func BenchmarkMessage(b *testing.B) {
	var msgs [][]byte
	for _, f := range corpusFiles(b) {
		msgs = append(msgs, convertCorpus(b, f, 0, false).Messages...)
	}
	size := 0
	for _, m := range msgs {
		size += len(m)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	x := &Extractor{}
	for b.Loop() {
		n := 0
		for _, m := range msgs {
			n += len(x.Message(m, "/Users/badlogic/workspaces/pi-mono"))
		}
		if n == 0 {
			b.Fatal("no ops")
		}
	}
	b.ReportMetric(float64(len(msgs)), "msgs/op")
}

func BenchmarkMessageToolCallsOnly(b *testing.B) {
	var msgs [][]byte
	for _, f := range corpusFiles(b) {
		for _, m := range convertCorpus(b, f, 0, false).Messages {
			if bytes.Contains(m, []byte(`"tool_call"`)) {
				msgs = append(msgs, m)
			}
		}
	}
	size := 0
	for _, m := range msgs {
		size += len(m)
	}
	b.SetBytes(int64(size))
	x := &Extractor{}
	for b.Loop() {
		for _, m := range msgs {
			x.Message(m, "/Users/badlogic/workspaces/pi-mono")
		}
	}
	b.ReportMetric(float64(len(msgs)), "msgs/op")
}
