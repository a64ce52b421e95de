package compaction

// Converters from the corpus formats (pi v1, Claude Code) to contract-shape entries, used to
// build the fixtures in testdata/ (go test -run TestFixtures -update) and by the optional tests
// over ../shared/corpus. See /work/shared/reference/FORMATS.md for the source formats.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flagBool("update", "rewrite golden files and fixtures in testdata/")

// corpusDir is the shared corpus: $SESSIONMEM_CORPUS, else ../shared/corpus next to the
// repository. Tests that need it skip when it is absent.
var corpusDir = func() string {
	if d := os.Getenv("SESSIONMEM_CORPUS"); d != "" {
		return d
	}
	return "../../shared/corpus"
}()

type obj = map[string]any

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// convertPi converts a pi v1 session (header line, then entries). The returned index map gives,
// for each line number, the path index of that line's entry (-1 for the header), so a v1
// compaction's firstKeptEntryIndex can be translated.
func convertPi(data []byte) (path []Entry, lineToIndex []int, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := -1
	for sc.Scan() {
		line++
		lineToIndex = append(lineToIndex, len(path))
		var o obj
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", line+1, err)
		}
		id := fmt.Sprintf("e%04d", len(path))
		switch o["type"] {
		case "session":
			lineToIndex[line] = -1
		case "message":
			m, _ := o["message"].(obj)
			if msg := piMessage(m); msg != nil {
				path = append(path, Entry{ID: id, Kind: KindMessage, Message: mustJSON(msg)})
			} else {
				path = append(path, Entry{ID: id, Kind: KindOther})
			}
		case "compaction":
			s, _ := o["summary"].(string)
			path = append(path, Entry{ID: id, Kind: KindCompaction, Summary: s})
		case "branch_summary":
			s, _ := o["summary"].(string)
			path = append(path, Entry{ID: id, Kind: KindBranchSummary, Summary: s})
		default:
			path = append(path, Entry{ID: id, Kind: KindOther})
		}
	}
	return path, lineToIndex, sc.Err()
}

func piBlocks(content any) []any {
	if s, ok := content.(string); ok {
		return []any{obj{"type": "text", "text": s}}
	}
	list, _ := content.([]any)
	out := []any{}
	for _, x := range list {
		b, _ := x.(obj)
		switch b["type"] {
		case "text":
			out = append(out, obj{"type": "text", "text": b["text"]})
		case "thinking":
			out = append(out, obj{"type": "thinking", "thinking": b["thinking"]})
		case "image":
			out = append(out, obj{"type": "image", "media_type": b["mimeType"], "data": b["data"]})
		case "toolCall":
			args := b["arguments"]
			if args == nil {
				args = obj{}
			}
			out = append(out, obj{"type": "tool_call", "id": b["id"], "name": b["name"], "arguments": args})
		}
	}
	return out
}

func piMessage(m obj) obj {
	switch m["role"] {
	case "user":
		return obj{"role": "user", "content": piBlocks(m["content"])}
	case "assistant":
		msg := obj{"role": "assistant", "content": piBlocks(m["content"])}
		if u, ok := m["usage"].(obj); ok {
			in := num(u["input"]) + num(u["cacheRead"]) + num(u["cacheWrite"])
			msg["usage"] = obj{"input_tokens": in, "output_tokens": num(u["output"])}
		}
		return msg
	case "toolResult":
		isErr, _ := m["isError"].(bool)
		return obj{"role": "tool_result", "content": []any{obj{
			"type": "tool_result", "tool_call_id": m["toolCallId"], "content": piBlocks(m["content"]), "is_error": isErr,
		}}}
	case "bashExecution":
		text := fmt.Sprintf("!%v\n%v", m["command"], m["output"])
		return obj{"role": "user", "content": []any{obj{"type": "text", "text": text}}}
	}
	return nil
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// convertCC converts a Claude Code transcript: assistant lines sharing a message id become one
// message, tool results become tool_result messages, a compact_boundary and its summary line
// become one compaction entry. Progress and snapshot lines are left out; other system lines
// become KindOther entries.
func convertCC(data []byte) ([]Entry, error) {
	var path []Entry
	var pending obj // the assistant message being assembled
	pendingID := ""
	flush := func() {
		if pending != nil {
			path = append(path, Entry{ID: fmt.Sprintf("e%04d", len(path)), Kind: KindMessage, Message: mustJSON(pending)})
			pending, pendingID = nil, ""
		}
	}
	add := func(e Entry) {
		flush()
		e.ID = fmt.Sprintf("e%04d", len(path))
		path = append(path, e)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		var o obj
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if side, _ := o["isSidechain"].(bool); side {
			continue
		}
		switch o["type"] {
		case "assistant":
			m, _ := o["message"].(obj)
			id, _ := m["id"].(string)
			if pending == nil || id != pendingID {
				flush()
				pending, pendingID = obj{"role": "assistant", "content": []any{}}, id
				if u, ok := m["usage"].(obj); ok {
					in := num(u["input_tokens"]) + num(u["cache_creation_input_tokens"]) + num(u["cache_read_input_tokens"])
					pending["usage"] = obj{"input_tokens": in, "output_tokens": num(u["output_tokens"])}
				}
			}
			pending["content"] = append(pending["content"].([]any), ccBlocks(m["content"])...)
		case "user":
			if meta, _ := o["isMeta"].(bool); meta {
				continue
			}
			m, _ := o["message"].(obj)
			if cs, _ := o["isCompactSummary"].(bool); cs {
				text := ""
				for _, b := range ccBlocks(m["content"]) {
					if t, ok := b.(obj)["text"].(string); ok {
						text += t
					}
				}
				if len(path) > 0 && path[len(path)-1].Kind == KindCompaction {
					path[len(path)-1].Summary = text
				}
				continue
			}
			var results, other []any
			for _, b := range ccBlocks(m["content"]) {
				if b.(obj)["type"] == "tool_result" {
					results = append(results, b)
				} else {
					other = append(other, b)
				}
			}
			if len(results) > 0 {
				add(Entry{Kind: KindMessage, Message: mustJSON(obj{"role": "tool_result", "content": results})})
			}
			if len(other) > 0 {
				add(Entry{Kind: KindMessage, Message: mustJSON(obj{"role": "user", "content": other})})
			}
		case "system":
			if o["subtype"] == "compact_boundary" {
				add(Entry{Kind: KindCompaction})
			} else {
				add(Entry{Kind: KindOther})
			}
		}
	}
	flush()
	return path, sc.Err()
}

func ccBlocks(content any) []any {
	if s, ok := content.(string); ok {
		return []any{obj{"type": "text", "text": s}}
	}
	list, _ := content.([]any)
	out := []any{}
	for _, x := range list {
		b, _ := x.(obj)
		switch b["type"] {
		case "text":
			out = append(out, obj{"type": "text", "text": b["text"]})
		case "thinking":
			out = append(out, obj{"type": "thinking", "thinking": b["thinking"]})
		case "image":
			src, _ := b["source"].(obj)
			out = append(out, obj{"type": "image", "media_type": src["media_type"], "data": src["data"]})
		case "tool_use":
			out = append(out, obj{"type": "tool_call", "id": b["id"], "name": b["name"], "arguments": b["input"]})
		case "tool_result":
			isErr, _ := b["is_error"].(bool)
			out = append(out, obj{"type": "tool_result", "tool_call_id": b["tool_use_id"], "content": ccBlocks(b["content"]), "is_error": isErr})
		}
	}
	return out
}

// clipEntries shortens every string in the messages to n characters and images to a stub,
// so fixtures stay small while keeping their shape.
func clipEntries(path []Entry, n int) []Entry {
	out := make([]Entry, len(path))
	for i, e := range path {
		out[i] = e
		if e.Kind == KindMessage {
			var v any
			if err := json.Unmarshal(e.Message, &v); err != nil {
				panic(err)
			}
			out[i].Message = mustJSON(clipValue(v, n))
		}
	}
	return out
}

func clipValue(v any, n int) any {
	switch x := v.(type) {
	case string:
		if utf8.RuneCountInString(x) > n {
			return string([]rune(x)[:n]) + " [clipped]"
		}
		return x
	case []any:
		for i := range x {
			x[i] = clipValue(x[i], n)
		}
	case obj:
		if x["type"] == "image" {
			x["data"] = "iVBORw0KGgo="
			return x
		}
		for k := range x {
			x[k] = clipValue(x[k], n)
		}
	}
	return v
}

type fixtureLine struct {
	ID      string          `json:"id"`
	Kind    Kind            `json:"kind"`
	Message json.RawMessage `json:"message,omitempty"`
	Summary string          `json:"summary,omitempty"`
}

func writeEntries(t *testing.T, name string, path []Entry) {
	t.Helper()
	var b bytes.Buffer
	for _, e := range path {
		b.Write(mustJSON(fixtureLine{ID: e.ID, Kind: e.Kind, Message: e.Message, Summary: e.Summary}))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join("testdata", name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readEntries(t testing.TB, name string) []Entry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read fixture: %v (regenerate with go test -run TestFixtures -update)", err)
	}
	var path []Entry
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var fl fixtureLine
		if err := json.Unmarshal([]byte(line), &fl); err != nil {
			t.Fatalf("%s line %d: %v", name, i+1, err)
		}
		path = append(path, Entry{ID: fl.ID, Kind: fl.Kind, Message: fl.Message, Summary: fl.Summary})
	}
	return path
}

func corpusFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, name))
	if os.IsNotExist(err) {
		t.Skipf("corpus not present (%s)", corpusDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Fixtures built from the corpus, with the corpus line range and the clip length.
var fixtures = []struct {
	name, source string
	lines        int
}{
	{"pi-before-compaction.entries.jsonl", "pi-before-compaction.jsonl", 420},
	{"cc-8463c716.entries.jsonl", "cc-8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 820},
}

const fixtureClip = 600

// TestFixtures regenerates testdata/*.entries.jsonl from the corpus with -update, and checks
// otherwise that they parse.
func TestFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			if *update {
				data := corpusFile(t, f.source)
				lines := bytes.SplitAfter(data, []byte("\n"))
				head := bytes.Join(lines[:min(f.lines, len(lines))], nil)
				var path []Entry
				var err error
				if strings.HasPrefix(f.source, "pi-") {
					path, _, err = convertPi(head)
				} else {
					path, err = convertCC(head)
				}
				if err != nil {
					t.Fatal(err)
				}
				writeEntries(t, f.name, clipEntries(path, fixtureClip))
			}
			if got := readEntries(t, f.name); len(got) == 0 {
				t.Fatal("fixture is empty")
			}
		})
	}
}
