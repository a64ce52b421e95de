package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
)

// rawCounts is what a transcript holds, counted straight from the file with generic JSON,
// independently of the readers under test.
type rawCounts struct {
	prompts     []string // user texts
	callIDs     []string
	resultIDs   []string // tool call ids answered
	compactions int
}

func countRaw(t *testing.T, path string, f Format) rawCounts {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 64<<20)
	var rc rawCounts
	for sc.Scan() {
		var d map[string]any
		if json.Unmarshal(sc.Bytes(), &d) != nil {
			continue
		}
		switch f {
		case FormatClaudeCode:
			countClaude(d, &rc)
		case FormatPi:
			countPi(d, &rc)
		case FormatCodex:
			countCodex(d, &rc)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rc
}

func str(v any) string { s, _ := v.(string); return s }

func countClaude(d map[string]any, rc *rawCounts) {
	if d["isSidechain"] == true {
		return
	}
	if d["type"] == "system" && d["subtype"] == "compact_boundary" {
		rc.compactions++
	}
	msg, _ := d["message"].(map[string]any)
	if msg == nil {
		return
	}
	switch d["type"] {
	case "user":
		if d["isMeta"] == true || d["isCompactSummary"] == true {
			return
		}
		if s, ok := msg["content"].(string); ok {
			rc.prompts = append(rc.prompts, s)
			return
		}
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			b := b.(map[string]any)
			switch b["type"] {
			case "tool_result":
				rc.resultIDs = append(rc.resultIDs, str(b["tool_use_id"]))
			case "text":
				rc.prompts = append(rc.prompts, str(b["text"]))
			}
		}
	case "assistant":
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			b := b.(map[string]any)
			if b["type"] == "tool_use" {
				rc.callIDs = append(rc.callIDs, str(b["id"]))
			}
		}
	}
}

func countPi(d map[string]any, rc *rawCounts) {
	switch d["type"] {
	case "compaction":
		rc.compactions++
		return
	case "custom_message":
		rc.prompts = append(rc.prompts, "")
		return
	case "message":
	default:
		return
	}
	msg := d["message"].(map[string]any)
	switch msg["role"] {
	case "user", "custom", "hookMessage":
		rc.prompts = append(rc.prompts, "")
	case "bashExecution":
		rc.prompts = append(rc.prompts, "$ "+str(msg["command"]))
	case "toolResult":
		rc.resultIDs = append(rc.resultIDs, str(msg["toolCallId"]))
	case "assistant":
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			b := b.(map[string]any)
			if b["type"] == "toolCall" {
				rc.callIDs = append(rc.callIDs, str(b["id"]))
			}
		}
	}
}

func countCodex(d map[string]any, rc *rawCounts) {
	pl, _ := d["payload"].(map[string]any)
	if d["type"] == "compacted" {
		rc.compactions++
	}
	if d["type"] != "response_item" || pl == nil {
		return
	}
	switch pl["type"] {
	case "message":
		if pl["role"] != "user" {
			return
		}
		content, _ := pl["content"].([]any)
		text := str(content[0].(map[string]any)["text"])
		for _, pre := range []string{"<environment_context>", "# AGENTS.md", "<user_instructions>"} {
			if strings.HasPrefix(text, pre) {
				return
			}
		}
		rc.prompts = append(rc.prompts, text)
	case "function_call", "custom_tool_call", "local_shell_call":
		rc.callIDs = append(rc.callIDs, str(pl["call_id"]))
	case "function_call_output", "custom_tool_call_output":
		rc.resultIDs = append(rc.resultIDs, str(pl["call_id"]))
	}
}

// parsed is what a parse produced, in the same terms as rawCounts.
func parsedCounts(req memory.ImportRequest) rawCounts {
	var pc rawCounts
	for _, it := range req.Items {
		if it.Message == nil {
			pc.compactions++
			continue
		}
		for _, b := range it.Message.Content {
			switch b.Type {
			case memory.BlockToolCall:
				pc.callIDs = append(pc.callIDs, b.ID)
			case memory.BlockToolResult:
				pc.resultIDs = append(pc.resultIDs, b.ToolCallID)
			}
		}
		if it.Message.Role == memory.RoleUser {
			var texts []string
			for _, b := range it.Message.Content {
				if b.Type == memory.BlockText {
					texts = append(texts, b.Text)
				}
			}
			pc.prompts = append(pc.prompts, strings.Join(texts, "\n"))
		}
	}
	return pc
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file        string
		format      Format
		session     string
		workingDir  string
		model       string
		compactions int
		unparsable  int
		unknown     []string
	}{
		{"claude-code-a.jsonl", FormatClaudeCode, "cc-8463c716-a2ea-4c14-9efa-87158ebd9f20", "/home/USER/projects/spotter-worktrees/spotter-fum", "claude-opus-4-6", 1, 0, nil},
		{"claude-code-b.jsonl", FormatClaudeCode, "cc-ae4a77f8-aedd-4bc1-888f-c94edc91af04", "/home/USER/projects/spotter-worktrees/spotter-4te", "claude-opus-4-6", 1, 0, nil},
		{"pi-v1.jsonl", FormatPi, "pi-ffae836b-9420-4060-ac13-7745215f90ff", "/Users/badlogic/workspaces/pi-mono", "claude-opus-4-5", 1, 0, nil},
		{"pi-v2.jsonl", FormatPi, "pi-0199c0de-0000-7000-8000-000000000002", "/srv/app", "claude-opus-4-5", 1, 0, []string{"brand_new_entry"}},
		{"pi-v3.jsonl", FormatPi, "pi-0199c0de-0000-7000-8000-000000000002", "/srv/app", "claude-opus-4-5", 1, 0, []string{"brand_new_entry"}},
		{"codex-rollout.jsonl", FormatCodex, "codex-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "/home/dev/proj", "gpt-5-codex", 1, 1, []string{"future_line_kind", "response_item/future_item"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("..", "testdata", "transcripts", tt.file)
			got, err := Detect(path)
			if err != nil || got != tt.format {
				t.Fatalf("Detect = %q, %v; want %q", got, err, tt.format)
			}
			req, st, err := ParseFile(path, FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			if req.SessionID != tt.session || req.WorkingDir != tt.workingDir || req.Model != tt.model {
				t.Errorf("request = %q %q %q; want %q %q %q", req.SessionID, req.WorkingDir, req.Model, tt.session, tt.workingDir, tt.model)
			}
			if req.Created.IsZero() {
				t.Errorf("Created is zero")
			}
			raw := countRaw(t, path, tt.format)
			parsed := parsedCounts(req)
			if got, want := sorted(parsed.callIDs), sorted(raw.callIDs); !slices.Equal(got, want) {
				t.Errorf("tool calls = %v\nwant %v", got, want)
			}
			if got, want := sorted(parsed.resultIDs), sorted(raw.resultIDs); !slices.Equal(got, want) {
				t.Errorf("tool results = %v\nwant %v", got, want)
			}
			if got, want := len(parsed.prompts), len(raw.prompts); got != want {
				t.Errorf("user prompts = %d, want %d", got, want)
			}
			for _, p := range raw.prompts {
				if !slices.ContainsFunc(parsed.prompts, func(s string) bool { return strings.Contains(s, p) }) {
					t.Errorf("prompt %.60q missing", p)
				}
			}
			if got, want := parsed.compactions, tt.compactions; got != want {
				t.Errorf("compactions = %d, want %d", got, want)
			}
			if raw.compactions != tt.compactions {
				t.Errorf("raw compactions = %d, want %d", raw.compactions, tt.compactions)
			}
			if got, want := st.ToolCalls, len(raw.callIDs); got != want {
				t.Errorf("Stats.ToolCalls = %d, want %d", got, want)
			}
			if got, want := st.Unparsable, tt.unparsable; got != want {
				t.Errorf("Stats.Unparsable = %d, want %d", got, want)
			}
			var unknown []string
			for k := range st.Unknown {
				unknown = append(unknown, k)
			}
			if got, want := sorted(unknown), sorted(tt.unknown); !slices.Equal(got, want) {
				t.Errorf("Stats.Unknown = %v, want %v", got, want)
			}
			checkItems(t, req)
		})
	}
}

// checkItems asserts what memory requires of every item: unique valid ids, no empty message,
// tool arguments that are JSON objects.
func checkItems(t *testing.T, req memory.ImportRequest) {
	t.Helper()
	ids := map[string]bool{}
	for i, it := range req.Items {
		if it.Message == nil {
			if it.Summary == "" {
				t.Errorf("item %d: empty summary", i)
			}
			continue
		}
		m := it.Message
		if !validID(m.ID) || ids[m.ID] {
			t.Errorf("item %d: id %q invalid or repeated", i, m.ID)
		}
		ids[m.ID] = true
		if len(m.Content) == 0 {
			t.Errorf("item %d (%s): no content", i, m.ID)
		}
		for _, b := range m.Content {
			if b.Type == memory.BlockToolCall {
				var obj map[string]any
				if err := json.Unmarshal(b.Arguments, &obj); err != nil {
					t.Errorf("item %d: arguments %s not an object", i, b.Arguments)
				}
			}
		}
	}
}

func TestClaudeGrouping(t *testing.T) {
	path := filepath.Join("..", "testdata", "transcripts", "claude-code-a.jsonl")
	req, _, err := ParseFile(path, FormatClaudeCode)
	if err != nil {
		t.Fatal(err)
	}
	// Independently: distinct message ids and the usage of each id's last line.
	ids := map[string]bool{}
	lastUsage := map[string]memory.Usage{}
	data, _ := os.ReadFile(path)
	for _, line := range bytes.Split(data, []byte("\n")) {
		var l struct {
			Type    string
			Message struct {
				ID    string
				Usage struct {
					Input  int `json:"input_tokens"`
					Output int `json:"output_tokens"`
					CC     int `json:"cache_creation_input_tokens"`
					CR     int `json:"cache_read_input_tokens"`
				}
			}
		}
		if json.Unmarshal(line, &l) == nil && l.Type == "assistant" {
			ids[l.Message.ID] = true
			u := l.Message.Usage
			lastUsage[l.Message.ID] = memory.Usage{InputTokens: u.Input + u.CC + u.CR, OutputTokens: u.Output}
		}
	}
	var assistants []*memory.Message
	for _, it := range req.Items {
		if it.Message != nil && it.Message.Role == memory.RoleAssistant {
			assistants = append(assistants, it.Message)
		}
	}
	if got, want := len(assistants), len(ids); got != want {
		t.Errorf("assistant messages = %d, want %d (distinct message.id)", got, want)
	}
	for _, m := range assistants {
		if m.Usage == nil || *m.Usage != lastUsage[m.ID] {
			t.Errorf("%s usage = %+v, want %+v (counted once)", m.ID, m.Usage, lastUsage[m.ID])
		}
	}
	// msg_01TeKam… made three calls, each answered right after it on disk; as one message they
	// come first, then the three results.
	i := slices.IndexFunc(req.Items, func(it memory.ImportItem) bool {
		return it.Message != nil && it.Message.ID == "msg_01TeKamWeK4PT2KUfBXJHBkX"
	})
	if i < 0 || i+3 >= len(req.Items) {
		t.Fatalf("grouped message not found")
	}
	calls := req.Items[i].Message.Content
	if got, want := len(calls), 3; got != want {
		t.Fatalf("grouped message has %d blocks, want %d", got, want)
	}
	for k := 0; k < 3; k++ {
		r := req.Items[i+1+k].Message
		if r == nil || r.Role != memory.RoleToolResult || r.Content[0].ToolCallID != calls[k].ID {
			t.Errorf("item %d after the call is %+v, want the result of %s", k+1, r, calls[k].ID)
		}
	}
}

func TestCompactionPlacement(t *testing.T) {
	tests := []struct {
		file      string
		before    string // id of the message right before the summary
		after     string // id of the message right after it ("" for end)
		prefix    string // summary text starts with
		firstKept string
	}{
		// The boundary and summary come after the last tool result before compaction.
		{"claude-code-a.jsonl", "", "", "This session is being continued", ""},
		{"claude-code-b.jsonl", "", "bcef8ee6-5859-41ce-8dcb-6bc87388fbe6", "This session is being continued", ""},
		{"pi-v2.jsonl", "", "", "The user asked for a file list", "d1b2c3d4"},
		{"codex-rollout.jsonl", "codex.18", "codex.23", "Summary: added", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			req, _, err := ParseFile(filepath.Join("..", "testdata", "transcripts", tt.file), FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(req.Items, func(it memory.ImportItem) bool { return it.Message == nil })
			if i <= 0 {
				t.Fatalf("no summary after a message (index %d)", i)
			}
			it := req.Items[i]
			if !strings.HasPrefix(it.Summary, tt.prefix) {
				t.Errorf("summary = %.60q, want prefix %q", it.Summary, tt.prefix)
			}
			if got, want := it.FirstKeptID, tt.firstKept; got != want {
				t.Errorf("FirstKeptID = %q, want %q", got, want)
			}
			if tt.before != "" && req.Items[i-1].Message.ID != tt.before {
				t.Errorf("before summary: %s, want %s", req.Items[i-1].Message.ID, tt.before)
			}
			if tt.after != "" && (i+1 >= len(req.Items) || req.Items[i+1].Message.ID != tt.after) {
				t.Errorf("after summary: %+v, want %s", req.Items[i+1].Message, tt.after)
			}
		})
	}
}

func TestPiVersionsAgree(t *testing.T) {
	// pi rewrites v1/v2 files as v3 in place: the same messages must get the same ids.
	v2, _, err := ParseFile(filepath.Join("..", "testdata", "transcripts", "pi-v2.jsonl"), FormatPi)
	if err != nil {
		t.Fatal(err)
	}
	v3, _, err := ParseFile(filepath.Join("..", "testdata", "transcripts", "pi-v3.jsonl"), FormatPi)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(req memory.ImportRequest) []string {
		var out []string
		for _, it := range req.Items {
			if it.Message != nil {
				out = append(out, it.Message.ID)
			}
		}
		return out
	}
	a, b := ids(v2), ids(v3)
	b = slices.DeleteFunc(b, func(id string) bool { return !slices.Contains(a, id) })
	if !slices.Equal(a, b) || len(a) == 0 {
		t.Errorf("v2 ids %v\nv3 ids %v", a, ids(v3))
	}
	if got, want := v3.Name, "file listing"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
}

// TestCodexPinsStandingInstructions: the AGENTS.md instructions Codex injects become one pinned
// system message; the environment and permission blocks stay out; nothing else is pinned.
func TestCodexPinsStandingInstructions(t *testing.T) {
	req, _, err := ParseFile(filepath.Join("..", "testdata", "transcripts", "codex-rollout.jsonl"), FormatCodex)
	if err != nil {
		t.Fatal(err)
	}
	var pinned []*memory.Message
	for _, it := range req.Items {
		if m := it.Message; m != nil {
			if m.Pinned {
				pinned = append(pinned, m)
			}
			if len(m.Content) > 0 && strings.Contains(m.Content[0].Text, "<environment_context>") {
				t.Errorf("environment context imported: %s", m.ID)
			}
		}
	}
	if len(pinned) != 1 || pinned[0].ID != "codex.2" || pinned[0].Role != memory.RoleSystem ||
		pinned[0].Content[0].Text != "# AGENTS.md instructions for /home/dev/proj\n\n<INSTRUCTIONS>\nUse tabs.\n</INSTRUCTIONS>" {
		t.Fatalf("pinned = %+v", pinned)
	}
}

func TestCodexMapping(t *testing.T) {
	req, _, err := ParseFile(filepath.Join("..", "testdata", "transcripts", "codex-rollout.jsonl"), FormatCodex)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*memory.Message{}
	for _, it := range req.Items {
		if it.Message != nil {
			byID[it.Message.ID] = it.Message
		}
	}
	tests := []struct {
		id   string
		want string // JSON of the message content
	}{
		{"codex.8", `[{"type":"tool_call","id":"call_A1","name":"shell","arguments":{"command":["bash","-lc","cat main.go"],"workdir":"/home/dev/proj"}}]`},
		{"codex.11", `[{"type":"tool_call","id":"call_B2","name":"apply_patch","arguments":{"input":"*** Begin Patch\n*** Update File: main.go\n@@\n-func main() {}\n+func main() { flag.Bool(\"verbose\", false, \"\") }\n*** End Patch\n"}}]`},
		{"codex.13", `[{"type":"tool_call","id":"call_C3","name":"local_shell","arguments":{"type":"exec","command":["go","build","./..."],"working_directory":"/home/dev/proj"}}]`},
		{"codex.14", `[{"type":"tool_result","tool_call_id":"call_C3","content":[{"type":"text","text":"main.go:1: undefined: flag"}],"is_error":true}]`},
		{"codex.15", `[{"type":"tool_call","id":"call_D4","name":"update_plan","arguments":{"input":"not json at all"}}]`},
		{"codex.23", `[{"type":"text","text":"Fix the import please"},{"type":"image","media_type":"image/png","data":"iVBORw0KGgo="}]`},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			m := byID[tt.id]
			if m == nil {
				t.Fatalf("no message %s", tt.id)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(m.Content); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(buf.String()); got != tt.want {
				t.Errorf("content = %s\nwant      %s", got, tt.want)
			}
		})
	}
}

// TestTolerance feeds lines a reader must survive: garbage, unknown types, an over-long line,
// a non-object, and a torn last line, spliced into a real transcript.
func TestTolerance(t *testing.T) {
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 1 << 20
	src := filepath.Join("..", "testdata", "transcripts", "claude-code-b.jsonl")
	want, _, err := ParseFile(src, FormatClaudeCode)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(src)
	lines := bytes.SplitAfter(data, []byte("\n"))
	junk := [][]byte{
		[]byte("{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"cut off\n"),
		[]byte("not json\n"),
		[]byte("[1,2,3]\n"),
		[]byte("\n"),
		[]byte(`{"type":"hologram","uuid":"x","sessionId":"ae4a77f8-aedd-4bc1-888f-c94edc91af04"}` + "\n"),
		[]byte(`{"type":"assistant","message":"not an object"}` + "\n"),
		append(append([]byte(`{"type":"progress","data":"`), bytes.Repeat([]byte("x"), maxLine+10)...), []byte("\"}\n")...),
	}
	var buf bytes.Buffer
	for i, l := range lines {
		buf.Write(l)
		if i == 5 {
			for _, j := range junk {
				buf.Write(j)
			}
		}
	}
	buf.WriteString(`{"type":"user","message":{"role":"user","content":"torn`)
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	got, st, err := ParseFile(path, FormatClaudeCode)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, got.Items), mustJSON(t, want.Items); a != b {
		t.Errorf("items differ from the clean file's")
	}
	if got, want := st.Unparsable, 5; got != want {
		t.Errorf("Unparsable = %d, want %d", got, want)
	}
	if got, want := st.Unknown["hologram"], 1; got != want {
		t.Errorf("Unknown[hologram] = %d, want %d", got, want)
	}
	if got, want := st.Next.Offset, int64(buf.Len()-len(`{"type":"user","message":{"role":"user","content":"torn`)); got != want {
		t.Errorf("Next.Offset = %d, want %d (before the torn line)", got, want)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
