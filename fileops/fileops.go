package fileops

import (
	"path"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// API CONTRACT (written by the lead before implementation; the fileops owner implements it and
// may add to it, but must not change these exported names or their meaning without telling the
// lead, because memory/ is being written against it at the same time).
//
// Messages are JSON in the contract's block form (../shared/CONTRACT.md): tool calls are blocks
// {"type":"tool_call","id":S,"name":S,"arguments":{...}} inside assistant messages. Read them
// with gjson; never decode whole messages.

// Op says what a tool call did to a file.
type Op int

// Operations.
const (
	Read Op = iota + 1
	Modify
)

// String returns "read" or "modify" (for test output and logs).
func (o Op) String() string {
	switch o {
	case Read:
		return "read"
	case Modify:
		return "modify"
	}
	return "unknown"
}

// Mapping maps extra tool names to an operation and the argument keys (gjson paths) holding
// paths, e.g. {"view_file": {Op: Read, Keys: []string{"file"}}}. Configured by the user.
// A key may point at a string or at an array of strings ("files", "edits.#.path"). A name in
// the Mapping overrides the built-in handling of that name.
type Mapping map[string]Rule

// Rule is one configured tool.
type Rule struct {
	Op   Op
	Keys []string
}

// Extractor pulls file operations out of tool calls: pi (read/write/edit with path), Claude Code
// (Read/Write/Edit/MultiEdit/NotebookEdit with file_path/notebook_path), Codex (apply_patch
// headers: Add/Update/Delete File, Move to; shell reads like `cat f`, `sed -n 1,5p f`,
// `head`/`tail`/`nl` where unambiguous) and the configured Mapping.
//
// The zero value is ready to use. An Extractor is safe for concurrent use as long as nobody
// mutates Mapping meanwhile.
type Extractor struct {
	Mapping Mapping
	// NoShell turns off the shell-command heuristics (reads seen in `cat f` and the like);
	// apply_patch given through a shell tool is still recognised.
	NoShell bool
}

// ToolCall returns the operations of one tool call. workingDir normalizes paths: inside it they
// become relative (clean, slash-separated), outside they stay absolute (cleaned); relative
// arguments are taken as relative to workingDir.
//
// args is the JSON of the call's arguments: usually an object, but a JSON string (Codex's
// function_call arguments are JSON text inside a string; custom tools such as apply_patch take
// raw text) and bare non-JSON text are accepted too.
func (x *Extractor) ToolCall(name string, args []byte, workingDir string) []FileOp {
	return x.appendToolCall(nil, name, string(args), workingDir)
}

// Message returns the operations of every tool_call block of one message (non-assistant
// messages yield nothing).
func (x *Extractor) Message(msg []byte, workingDir string) []FileOp {
	// Most messages carry no tool call; a SIMD substring search is much cheaper than parsing.
	// The unsafe view avoids copying msg; appendPath clones every path it keeps, so nothing
	// returned aliases the caller's buffer.
	s := unsafe.String(unsafe.SliceData(msg), len(msg))
	if !strings.Contains(s, `"tool_call"`) {
		return nil
	}
	if gjson.Get(s, "role").Str != "assistant" {
		return nil
	}
	content := gjson.Get(s, "content")
	if !content.IsArray() {
		return nil
	}
	var ops []FileOp
	content.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != "tool_call" {
			return true
		}
		name := b.Get("name").Str
		if name == "" {
			return true
		}
		ops = x.appendToolCall(ops, name, b.Get("arguments").Raw, workingDir)
		return true
	})
	return ops
}

// FileOp is one path touched by a tool call.
type FileOp struct {
	Path string
	Op   Op
}

// pathKeys are the argument keys that name a file in the built-in file tools (pi and Claude
// Code use path and file_path, opencode filePath, Claude Code's notebook tools notebook_path).
var pathKeys = []string{"path", "file_path", "filePath", "notebook_path"}

var builtin = map[string]Op{
	// pi
	"read":  Read,
	"write": Modify,
	"edit":  Modify,
	// Claude Code
	"Read":         Read,
	"NotebookRead": Read,
	"Write":        Modify,
	"Edit":         Modify,
	"MultiEdit":    Modify,
	"NotebookEdit": Modify,
	// opencode and Codex's experimental file tools
	"multiedit": Modify,
	"read_file": Read,
}

var shellTools = map[string]bool{
	"shell":          true,
	"bash":           true,
	"Bash":           true,
	"exec_command":   true,
	"local_shell":    true,
	"container.exec": true,
}

func (x *Extractor) appendToolCall(ops []FileOp, name, args, wd string) []FileOp {
	if r, ok := x.Mapping[name]; ok {
		for _, k := range r.Keys {
			ops = appendValue(ops, gjson.Get(args, k), r.Op, wd)
		}
		return ops
	}
	obj, text := splitArgs(args)
	if op, ok := builtin[name]; ok {
		if obj == "" {
			return ops
		}
		for _, k := range pathKeys {
			if v := gjson.Get(obj, k); v.Type == gjson.String && v.Str != "" {
				return appendPath(ops, v.Str, op, wd, wd)
			}
		}
		return ops
	}
	dir := wd
	switch {
	case name == "apply_patch" || name == "applypatch":
		if obj != "" {
			text = ""
			for _, k := range []string{"input", "patch"} {
				if v := gjson.Get(obj, k); v.Type == gjson.String {
					text = v.Str
					break
				}
			}
			if text == "" {
				if argv := stringArray(gjson.Get(obj, "command")); len(argv) == 2 && isApplyPatch(argv[0]) {
					text = argv[1]
				}
			}
			dir = resolveDir(wd, workdirOf(obj))
		}
		return appendPatch(ops, text, dir, wd)
	case shellTools[name]:
		if obj == "" {
			return x.appendShell(ops, nil, text, wd, wd)
		}
		dir = resolveDir(wd, workdirOf(obj))
		for _, k := range []string{"command", "cmd", "action.command"} {
			v := gjson.Get(obj, k)
			switch {
			case v.Type == gjson.String:
				return x.appendShell(ops, nil, v.Str, dir, wd)
			case v.IsArray():
				return x.appendShell(ops, stringArray(v), "", dir, wd)
			}
		}
	}
	return ops
}

// splitArgs returns the arguments as a JSON object (obj), or as text when they are a JSON
// string or not JSON at all. A JSON string that itself holds an object (Codex function_call
// arguments) yields that object.
func splitArgs(args string) (obj, text string) {
	a := strings.TrimSpace(args)
	if a == "" {
		return "", ""
	}
	switch a[0] {
	case '{':
		return a, ""
	case '"':
		if !gjson.Valid(a) {
			return "", a
		}
		s := gjson.Parse(a).Str
		if t := strings.TrimSpace(s); t != "" && t[0] == '{' && gjson.Valid(t) {
			return t, ""
		}
		return "", s
	}
	return "", a
}

func workdirOf(obj string) string {
	for _, k := range []string{"workdir", "working_directory", "cwd", "action.working_directory"} {
		if v := gjson.Get(obj, k); v.Type == gjson.String && v.Str != "" {
			return v.Str
		}
	}
	return ""
}

func stringArray(v gjson.Result) []string {
	if !v.IsArray() {
		return nil
	}
	var out []string
	ok := true
	v.ForEach(func(_, e gjson.Result) bool {
		if e.Type != gjson.String {
			ok = false
			return false
		}
		out = append(out, e.Str)
		return true
	})
	if !ok {
		return nil
	}
	return out
}

func appendValue(ops []FileOp, v gjson.Result, op Op, wd string) []FileOp {
	switch {
	case v.Type == gjson.String:
		ops = appendPath(ops, v.Str, op, wd, wd)
	case v.IsArray():
		v.ForEach(func(_, e gjson.Result) bool {
			ops = appendValue(ops, e, op, wd)
			return true
		})
	}
	return ops
}

// appendPath records p, relative paths being taken relative to dir (a directory the call
// changed to, or wd), normalized against the session's wd.
func appendPath(ops []FileOp, p string, op Op, dir, wd string) []FileOp {
	if dir != wd {
		if t := strings.TrimSpace(p); t != "" && t[0] != '/' && t[0] != '~' {
			p = path.Join(dir, t)
		}
	}
	if n, ok := Normalize(p, wd); ok {
		ops = append(ops, FileOp{Path: strings.Clone(n), Op: op})
	}
	return ops
}
