package fileops

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

const wd = "/home/u/proj"

func opsString(ops []FileOp) string {
	parts := make([]string, 0, len(ops))
	for _, o := range ops {
		parts = append(parts, o.Op.String()+":"+o.Path)
	}
	return strings.Join(parts, " ")
}

type callCase struct {
	name     string
	tool     string
	args     string
	want     string // space-separated "read:path" / "modify:path"
	noShell  bool
	mapping  Mapping
	workdirs string // overrides wd when set
}

func runCallCases(t *testing.T, cases []callCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := &Extractor{Mapping: tc.mapping, NoShell: tc.noShell}
			dir := wd
			if tc.workdirs != "" {
				dir = tc.workdirs
			}
			if got, want := opsString(x.ToolCall(tc.tool, []byte(tc.args), dir)), tc.want; got != want {
				t.Fatalf("ToolCall(%q, %s) = %q, want %q", tc.tool, tc.args, got, want)
			}
		})
	}
}

func TestToolCallPi(t *testing.T) {
	runCallCases(t, []callCase{
		{name: "read absolute inside", tool: "read", args: `{"path":"/home/u/proj/src/a.ts"}`, want: "read:src/a.ts"},
		{name: "read with offset", tool: "read", args: `{"path":"src/a.ts","offset":10,"limit":5}`, want: "read:src/a.ts"},
		{name: "read dot slash", tool: "read", args: `{"path":"./a.ts"}`, want: "read:a.ts"},
		{name: "read outside", tool: "read", args: `{"path":"/etc/hosts"}`, want: "read:/etc/hosts"},
		{name: "read escaping relative", tool: "read", args: `{"path":"../other/x.go"}`, want: "read:/home/u/other/x.go"},
		{name: "read tilde kept", tool: "read", args: `{"path":"~/.bashrc"}`, want: "read:~/.bashrc"},
		{name: "write", tool: "write", args: `{"path":"b.go","content":"package b"}`, want: "modify:b.go"},
		{name: "edit", tool: "edit", args: `{"path":"/home/u/proj/c.go","edits":[{"oldText":"a","newText":"b"}]}`, want: "modify:c.go"},
		{name: "edit old shape", tool: "edit", args: `{"path":"c.go","oldText":"a","newText":"b"}`, want: "modify:c.go"},
		{name: "empty path", tool: "read", args: `{"path":"  "}`, want: ""},
		{name: "path not string", tool: "read", args: `{"path":42}`, want: ""},
		{name: "no args", tool: "write", args: ``, want: ""},
		{name: "args as JSON string", tool: "read", args: `"{\"path\":\"d.go\"}"`, want: "read:d.go"},
		{name: "working dir itself", tool: "read", args: `{"path":"/home/u/proj/"}`, want: ""},
		{name: "unclean path", tool: "write", args: `{"path":"/home/u/proj/x/../y//z.go"}`, want: "modify:y/z.go"},
		{name: "opencode filePath", tool: "edit", args: `{"filePath":"/home/u/proj/o.go","oldString":"a","newString":"b"}`, want: "modify:o.go"},
		{name: "unknown tool", tool: "grep", args: `{"path":"a.go","pattern":"x"}`, want: ""},
	})
}

func TestToolCallClaudeCode(t *testing.T) {
	runCallCases(t, []callCase{
		{name: "Read", tool: "Read", args: `{"file_path":"/home/u/proj/lib/a.ex"}`, want: "read:lib/a.ex"},
		{name: "Read with range", tool: "Read", args: `{"file_path":"/home/u/proj/lib/a.ex","offset":100,"limit":50}`, want: "read:lib/a.ex"},
		{name: "Write", tool: "Write", args: `{"file_path":"/home/u/proj/new.md","content":"x"}`, want: "modify:new.md"},
		{name: "Edit", tool: "Edit", args: `{"replace_all":false,"file_path":"/home/u/proj/a.ex","old_string":"x","new_string":"y"}`, want: "modify:a.ex"},
		{name: "MultiEdit", tool: "MultiEdit", args: `{"file_path":"/tmp/m.go","edits":[{"old_string":"a","new_string":"b"}]}`, want: "modify:/tmp/m.go"},
		{name: "NotebookEdit", tool: "NotebookEdit", args: `{"notebook_path":"/home/u/proj/n.ipynb","new_source":"x"}`, want: "modify:n.ipynb"},
		{name: "NotebookRead", tool: "NotebookRead", args: `{"notebook_path":"n.ipynb"}`, want: "read:n.ipynb"},
		{name: "Grep not tracked", tool: "Grep", args: `{"pattern":"x","path":"/home/u/proj"}`, want: ""},
		{name: "Glob not tracked", tool: "Glob", args: `{"pattern":"**/*.go"}`, want: ""},
		{name: "Bash cat", tool: "Bash", args: `{"command":"cat mix.exs","description":"show"}`, want: "read:mix.exs"},
	})
}

func TestToolCallCodex(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: docs/new.md\n+hello\n*** Update File: src/app.py\n@@ def f():\n-    a\n+    b\n*** Update File: old/name.py\n*** Move to: new/name.py\n@@\n-x\n+y\n*** Delete File: gone.txt\n*** End Patch"
	want := "modify:docs/new.md modify:src/app.py modify:old/name.py modify:new/name.py modify:gone.txt"
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	runCallCases(t, []callCase{
		{name: "apply_patch input", tool: "apply_patch", args: `{"input":` + q(patch) + `}`, want: want},
		{name: "apply_patch raw string", tool: "apply_patch", args: q(patch), want: want},
		{name: "apply_patch bare text", tool: "apply_patch", args: patch, want: want},
		{name: "apply_patch patch key", tool: "apply_patch", args: `{"patch":` + q(patch) + `}`, want: want},
		{name: "apply_patch command argv", tool: "apply_patch", args: `{"command":["apply_patch",` + q(patch) + `]}`, want: want},
		{name: "shell argv apply_patch", tool: "shell", args: `{"command":["apply_patch",` + q(patch) + `],"workdir":"/home/u/proj"}`, want: want},
		{name: "shell heredoc apply_patch", tool: "shell", args: `{"command":["bash","-lc",` + q("apply_patch <<'EOF'\n"+patch+"\nEOF\n") + `]}`, want: want},
		{name: "shell heredoc with cd", tool: "shell", args: `{"command":["bash","-lc",` + q("cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x.go\n+x\n*** End Patch\nEOF") + `]}`, want: "modify:sub/x.go"},
		{name: "bash string heredoc", tool: "bash", args: `{"command":` + q("apply_patch <<'PATCH'\n*** Begin Patch\n*** Delete File: /home/u/proj/z.go\n*** End Patch\nPATCH") + `}`, want: "modify:z.go"},
		{name: "patch content mentions header", tool: "apply_patch", args: q("*** Begin Patch\n*** Add File: t.md\n+*** Add File: not-a-file\n*** End Patch"), want: "modify:t.md"},
		{name: "patch absolute outside", tool: "apply_patch", args: q("*** Begin Patch\n*** Update File: /etc/x.conf\n*** End Patch"), want: "modify:/etc/x.conf"},
		{name: "patch workdir", tool: "apply_patch", args: `{"input":` + q("*** Begin Patch\n*** Add File: a.go\n*** End Patch") + `,"workdir":"pkg"}`, want: "modify:pkg/a.go"},
		{name: "patch CRLF", tool: "apply_patch", args: q("*** Begin Patch\r\n*** Add File: crlf.go\r\n+x\r\n*** End Patch\r\n"), want: "modify:crlf.go"},
		{name: "shell argv cat", tool: "shell", args: `{"command":["cat","README.md"]}`, want: "read:README.md"},
		{name: "shell bash -lc sed", tool: "shell", args: `{"command":["bash","-lc","sed -n '1,120p' src/main.rs"],"workdir":"/home/u/proj"}`, want: "read:src/main.rs"},
		{name: "shell workdir relative file", tool: "shell", args: `{"command":["bash","-lc","nl -ba lib.rs | sed -n '1,200p'"],"workdir":"/home/u/proj/crate"}`, want: "read:crate/lib.rs"},
		{name: "function_call arguments as string", tool: "shell", args: q(`{"command":["bash","-lc","cat a.txt"]}`), want: "read:a.txt"},
		{name: "exec_command cmd", tool: "exec_command", args: `{"cmd":"head -n 40 src/lib.rs"}`, want: "read:src/lib.rs"},
		{name: "local_shell action", tool: "local_shell", args: `{"action":{"type":"exec","command":["tail","-n","5","log.txt"],"working_directory":"/var"}}`, want: "read:/var/log.txt"},
		{name: "no shell still sees patch", tool: "shell", noShell: true, args: `{"command":["apply_patch",` + q("*** Begin Patch\n*** Add File: p.go\n*** End Patch") + `]}`, want: "modify:p.go"},
		{name: "no shell skips cat", tool: "shell", noShell: true, args: `{"command":["cat","a"]}`, want: ""},
	})
}

func TestToolCallMapping(t *testing.T) {
	m := Mapping{
		"view_file":  {Op: Read, Keys: []string{"file"}},
		"multi_save": {Op: Modify, Keys: []string{"files", "edits.#.path"}},
		"read":       {Op: Modify, Keys: []string{"target"}},
	}
	runCallCases(t, []callCase{
		{name: "string key", tool: "view_file", mapping: m, args: `{"file":"v.go"}`, want: "read:v.go"},
		{name: "array keys", tool: "multi_save", mapping: m, args: `{"files":["a.go","/home/u/proj/b.go"],"edits":[{"path":"c.go"},{"path":""}]}`, want: "modify:a.go modify:b.go modify:c.go"},
		{name: "overrides builtin", tool: "read", mapping: m, args: `{"path":"p.go","target":"t.go"}`, want: "modify:t.go"},
		{name: "missing key", tool: "view_file", mapping: m, args: `{"other":"v.go"}`, want: ""},
	})
}

func TestShellReads(t *testing.T) {
	cases := []struct{ name, cmd, want string }{
		{"cat", "cat a.go", "read:a.go"},
		{"cat two files", "cat -n a.go b/c.go", "read:a.go read:b/c.go"},
		{"cat quoted", `cat "my file.txt" 'x y'`, "read:my file.txt read:x y"},
		{"cat escaped space", `cat my\ file`, "read:my file"},
		{"head -n", "head -n 20 a.go", "read:a.go"},
		{"head -20", "head -20 a.go", "read:a.go"},
		{"head -n20", "head -n20 a.go", "read:a.go"},
		{"tail +N", "tail -n +100 a.go", "read:a.go"},
		{"tail lines", "tail --lines=5 a.log", "read:a.log"},
		{"sed range", "sed -n '10,40p' a.go", "read:a.go"},
		{"sed dollar", "sed -n '5,$p' a.go", "read:a.go"},
		{"sed -e", "sed -n -e 1,5p -e 9p a.go", "read:a.go"},
		{"sed multi", "sed -n '1p;3,4p' a.go", "read:a.go"},
		{"nl -ba", "nl -ba a.go", "read:a.go"},
		{"nl pipe sed", "nl -ba src/x.go | sed -n '1,80p'", "read:src/x.go"},
		{"cat pipe head", "cat a.go | head -5", "read:a.go"},
		{"cat pipe grep wc", "cat a.go | grep -n foo | wc -l", "read:a.go"},
		{"less", "less README", "read:README"},
		{"more", "more README", "read:README"},
		{"cd prefix", "cd /home/u/proj/pkg && cat a.go", "read:pkg/a.go"},
		{"cd relative twice", "cd pkg && cd sub && head a.go", "read:pkg/sub/a.go"},
		{"cd outside", "cd /opt && cat x", "read:/opt/x"},
		{"absolute binary", "/bin/cat a", "read:a"},
		{"bash -lc wrapper", `bash -lc "cat a.go"`, "read:a.go"},
		{"sh -c wrapper", `sh -c 'head -n 3 a.go'`, "read:a.go"},
		{"tilde", "cat ~/.zshrc", "read:~/.zshrc"},
		{"double dash", "cat -- -weird", "read:-weird"},
		{"hash inside word", "cat a#b", "read:a#b"},
		// ambiguous or not a read: nothing
		{"pipe into tee", "cat a.go | tee b.go", ""},
		{"redirect out", "cat a.go > b.go", ""},
		{"redirect in", "cat < a.go", ""},
		{"stderr redirect", "cat a.go 2>/dev/null", ""},
		{"append", "cat a >> b", ""},
		{"glob", "cat *.go", ""},
		{"question glob", "cat a?.go", ""},
		{"brace", "cat {a,b}.go", ""},
		{"variable", "cat $FILE", ""},
		{"variable in quotes", `cat "$HOME/a"`, ""},
		{"command subst", "cat $(ls)", ""},
		{"backticks", "cat `ls`", ""},
		{"semicolon", "cat a; rm b", ""},
		{"or", "cat a || echo no", ""},
		{"and non cd", "make && cat a", ""},
		{"and after read", "cat a && rm a", ""},
		{"background", "cat a &", ""},
		{"newline", "cat a\nrm b", ""},
		{"comment", "cat a # note", ""},
		{"subshell", "(cat a)", ""},
		{"sed in place", "sed -i 's/a/b/' a.go", ""},
		{"sed without -n", "sed 's/a/b/' a.go", ""},
		{"sed write cmd", "sed -n 'w out' a.go", ""},
		{"sed no file", "sed -n '1,5p'", ""},
		{"sort -o", "cat a | sort -o b", ""},
		{"unknown filter", "cat a | python x.py", ""},
		{"cat stdin", "cat", ""},
		{"cat dash", "cat -", ""},
		{"head unknown flag", "head --follow=name a", ""},
		{"cat unknown flag", "cat -z a", ""},
		{"grep not a reader", "grep foo a.go", ""},
		{"ls", "ls -la", ""},
		{"rm", "rm a.go", ""},
		{"unterminated quote", `cat "a`, ""},
		{"cd dash", "cd - && cat a", ""},
		{"echo", "echo hi", ""},
		{"git", "git status", ""},
		{"heredoc cat", "cat <<EOF\nx\nEOF", ""},
		{"process subst", "cat <(ls)", ""},
		{"empty", "   ", ""},
	}
	x := &Extractor{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := fmt.Sprintf(`{"command":%q}`, tc.cmd)
			if got := opsString(x.ToolCall("bash", []byte(args), wd)); got != tc.want {
				t.Fatalf("bash %q = %q, want %q", tc.cmd, got, tc.want)
			}
		})
	}
}

func TestPatchPaths(t *testing.T) {
	cases := []struct {
		name, patch string
		want        []string
	}{
		{"add", "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch", []string{"a.txt"}},
		{"update and move", "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b/c.txt\n@@\n-x\n+y\n*** End Patch", []string{"a.txt", "b/c.txt"}},
		{"delete", "*** Begin Patch\n*** Delete File: d.txt\n*** End Patch", []string{"d.txt"}},
		{"trailing spaces", "*** Add File:   e.txt  \n", []string{"e.txt"}},
		{"indented header ignored", " *** Add File: f.txt\n", nil},
		{"plus line ignored", "+*** Delete File: g.txt\n", nil},
		{"empty path ignored", "*** Add File: \n", nil},
		{"no patch", "hello", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := PatchPaths(tc.patch); !slices.Equal(got, tc.want) {
				t.Fatalf("PatchPaths = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct {
		name, p, wd, want string
		ok                bool
	}{
		{"relative", "a/b.go", "/w", "a/b.go", true},
		{"dot slash", "./a", "/w", "a", true},
		{"absolute inside", "/w/a", "/w", "a", true},
		{"absolute inside trailing slash wd", "/w/a", "/w/", "a", true},
		{"prefix but not inside", "/wx/a", "/w", "/wx/a", true},
		{"outside", "/etc/x", "/w", "/etc/x", true},
		{"dotdot", "../x", "/w/y", "/w/x", true},
		{"root wd", "/a/b", "/", "a/b", true},
		{"tilde", "~/x/../y", "/w", "~/x/../y", true},
		{"blank", " \t", "/w", "", false},
		{"newline", "a\nb", "/w", "", false},
		{"wd itself", "/w/.", "/w", "", false},
		{"no wd relative", "./a/../b", "", "b", true},
		{"no wd absolute", "/a//b/", "", "/a/b", true},
		{"spaces trimmed", "  a.go ", "/w", "a.go", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Normalize(tc.p, tc.wd)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Normalize(%q, %q) = %q, %v; want %q, %v", tc.p, tc.wd, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	cases := []struct{ name, msg, want string }{
		{"two calls", `{"role":"assistant","content":[{"type":"text","text":"reading \"tool_call\""},{"type":"tool_call","id":"1","name":"read","arguments":{"path":"a.go"}},{"type":"tool_call","id":"2","name":"Edit","arguments":{"file_path":"/home/u/proj/b.go"}}]}`, "read:a.go modify:b.go"},
		{"role after content", `{"content":[{"type":"tool_call","id":"1","name":"write","arguments":{"path":"w.go"}}],"role":"assistant"}`, "modify:w.go"},
		{"user role", `{"role":"user","content":[{"type":"tool_call","id":"1","name":"read","arguments":{"path":"a.go"}}]}`, ""},
		{"tool_result", `{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"1","content":"tool_call read a.go"}]}`, ""},
		{"string content", `{"role":"assistant","content":"tool_call"}`, ""},
		{"no name", `{"role":"assistant","content":[{"type":"tool_call","id":"1","arguments":{"path":"a.go"}}]}`, ""},
		{"string arguments", `{"role":"assistant","content":[{"type":"tool_call","id":"1","name":"shell","arguments":"{\"command\":[\"cat\",\"z\"]}"}]}`, "read:z"},
		{"invalid json", `{"role":"assistant","content":[{"type":"tool_call"`, ""},
	}
	x := &Extractor{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := opsString(x.Message([]byte(tc.msg), wd)); got != tc.want {
				t.Fatalf("Message = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMessageDoesNotAliasInput(t *testing.T) {
	msg := []byte(`{"role":"assistant","content":[{"type":"tool_call","id":"1","name":"read","arguments":{"path":"abc.go"}}]}`)
	ops := (&Extractor{}).Message(msg, wd)
	for i := range msg {
		msg[i] = 'X'
	}
	if got, want := opsString(ops), "read:abc.go"; got != want {
		t.Fatalf("after overwriting input: %q, want %q", got, want)
	}
}
