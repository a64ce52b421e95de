package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"

	"github.com/sessionmem/sessionmem/memory"
)

// The people-facing commands, run in process through run() against stores in t.TempDir().

// cliTestNow is the clock of every command under test, so relative times are stable.
var cliTestNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func init() {
	// Set once before any test runs and never again, so no test races on them.
	cliNow = func() time.Time { return cliTestNow }
	cliLocation = func() *time.Location { return time.UTC }
}

// cliResult is what one command invocation produced.
type cliResult struct {
	stdout, stderr string
	code           int
	err            error
}

// runCLI runs the command line in process with stdin, like main does, and reports the exit code.
func runCLI(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	return runCLIContext(t.Context(), t, stdin, args...)
}

func runCLIContext(ctx context.Context, t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var out bytes.Buffer
	var errb lockedBuffer
	err := run(ctx, args, strings.NewReader(stdin), &out, &errb)
	r := cliResult{stdout: out.String(), err: err}
	if err != nil {
		r.code = exitCode(err)
		if r.code != 2 {
			fmt.Fprintf(&errb, "sessionmem: %v\n", err) // what main prints
		}
	}
	r.stderr = errb.String()
	return r
}

// lockedBuffer is a bytes.Buffer that goroutines may write at once, as they write a
// process's stderr: the store's background work logs there (a session it cannot index) while
// the command prints its own lines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (r cliResult) must(t *testing.T) cliResult {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	return r
}

// seeded ids of seedStore.
const (
	seedAlpha = "sess-alpha"
	seedBeta  = "sess-beta"
)

// seedStore creates a store with two sessions, written through memory with a fixed clock:
// sess-alpha in /work/alpha (named, with tool calls, updated 3h before cliTestNow) and
// sess-beta in /work/beta (unnamed, updated 5m before).
func seedStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := local.Open(dir, local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	seedInto(t, st)
	return dir
}

// seedInto writes seedStore's sessions into st and closes it.
func seedInto(t *testing.T, st storage.Store) {
	t.Helper()
	clock := cliTestNow.Add(-3 * time.Hour)
	ids := []string{seedAlpha, seedBeta}
	svc := memory.New(st, memory.Options{
		Now:   func() time.Time { return clock },
		NewID: func() string { id := ids[0]; ids = ids[1:]; return id },
	})
	big := strings.Repeat("log line of the build output\n", 200)
	alpha := []memory.Message{
		userMsg("Make the build faster please"),
		{Role: memory.RoleAssistant, Content: []memory.Block{
			{Type: memory.BlockText, Text: "Reading the main file."},
			{Type: memory.BlockToolCall, ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"/work/alpha/main.go"}`)},
		}},
		{Role: memory.RoleToolResult, Content: []memory.Block{
			{Type: memory.BlockToolResult, ToolCallID: "c1", Content: []memory.Block{{Type: memory.BlockText, Text: big}}},
		}},
		{Role: memory.RoleAssistant, Content: []memory.Block{
			{Type: memory.BlockThinking, Thinking: "The cache is cold every time."},
			{Type: memory.BlockToolCall, ID: "c2", Name: "edit", Arguments: json.RawMessage(`{"path":"/work/alpha/build.sh","edits":[{"oldText":"a","newText":"b"}]}`)},
		}, Usage: &memory.Usage{InputTokens: 1200, OutputTokens: 80}},
		{Role: memory.RoleToolResult, Content: []memory.Block{
			{Type: memory.BlockToolResult, ToolCallID: "c2", Content: []memory.Block{{Type: memory.BlockText, Text: "ok"}}},
		}},
		userMsg("Now also cache the modules"),
		{Role: memory.RoleAssistant, Content: []memory.Block{{Type: memory.BlockText, Text: "Done: the module cache is kept between builds."}}},
	}
	ctx := t.Context()
	if _, err := svc.Save(ctx, memory.SaveRequest{WorkingDir: "/work/alpha", Name: "alpha build speed", Model: "m1", Messages: alpha}); err != nil {
		t.Fatal(err)
	}
	clock = cliTestNow.Add(-5 * time.Minute)
	if _, err := svc.Save(ctx, memory.SaveRequest{WorkingDir: "/work/beta", Messages: []memory.Message{
		userMsg("Second session:\nwith a two-line prompt"),
		{Role: memory.RoleAssistant, Content: []memory.Block{{Type: memory.BlockText, Text: "Hello."}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

func userMsg(text string) memory.Message {
	return memory.Message{Role: memory.RoleUser, Content: []memory.Block{{Type: memory.BlockText, Text: text}}}
}

// listJSON returns the sessions `list --json` reports.
func listJSON(t *testing.T, store string, args ...string) []memory.Session {
	t.Helper()
	r := runCLI(t, "", append([]string{"list", "--store", store, "--json", "--limit", "0"}, args...)...).must(t)
	var out []memory.Session
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("list --json: %v\n%s", err, r.stdout)
	}
	return out
}

func TestCLIHelp(t *testing.T) {
	for _, name := range []string{"list", "show", "compact", "delete", "import", "export", "stats", "verify", "prune", "hook"} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, "", name, "--help").must(t)
			if want := "Usage: sessionmem " + name; !strings.HasPrefix(r.stdout, want) {
				t.Fatalf("help = %q, want prefix %q", r.stdout, want)
			}
			if !strings.Contains(r.stdout, "--store ") && name != "hook" {
				t.Errorf("help does not document --store:\n%s", r.stdout)
			}
		})
	}
	t.Run("usage lists the commands", func(t *testing.T) {
		r := runCLI(t, "", "help").must(t)
		for _, name := range []string{"list", "show", "compact", "delete", "import", "export", "stats", "verify", "prune", "hook"} {
			if !regexp.MustCompile(`(?m)^  ` + name + ` `).MatchString(r.stdout) {
				t.Errorf("usage does not list %s:\n%s", name, r.stdout)
			}
		}
	})
}

func TestCLIUsageErrors(t *testing.T) {
	store := seedStore(t)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"list unknown flag", []string{"list", "--bogus"}, "flag provided but not defined: -bogus"},
		{"list here and dir", []string{"list", "--here", "--working-dir", "/x"}, "either --here or --working-dir"},
		{"list negative limit", []string{"list", "--limit", "-1"}, "--limit must be"},
		{"list positional", []string{"list", "foo"}, `unexpected argument "foo"`},
		{"list bad limit", []string{"list", "--limit", "x"}, "invalid value"},
		{"show no id", []string{"show"}, "missing session id"},
		{"show two ids", []string{"show", "a", "b"}, "expected one session id"},
		{"show bad id", []string{"show", "a/b"}, `"a/b" is not a session id`},
		{"compact agent", []string{"compact", seedAlpha, "--summarizer", "agent"}, "use extractive or llm"},
		{"compact negative keep", []string{"compact", seedAlpha, "--keep-recent-tokens", "-5"}, "must be positive"},
		{"delete pipe without yes", []string{"delete", seedAlpha}, "pass --yes"},
		{"import nothing", []string{"import"}, "--claude-code, --codex, --pi or --file"},
		{"import two sources", []string{"import", "--pi", "--codex"}, "only one of"},
		{"import interval without watch", []string{"import", "--file", "x.jsonl", "--interval", "1s"}, "only applies with --watch"},
		{"import zero interval", []string{"import", "--pi", "--watch", "--interval", "0s"}, "--interval must be positive"},
		{"export no id", []string{"export"}, "missing session id"},
		{"stats positional", []string{"stats", "x"}, "unexpected argument"},
		{"verify positional", []string{"verify", "x"}, "unexpected argument"},
		{"search bad since", []string{"search", "build", "--since", "yesterday"}, "give a date (2026-03-01) or an RFC 3339 time"},
		{"search bad role", []string{"search", "build", "--role", "robot"}, "pass one of user, assistant, tool_result, system"},
		{"search bad query", []string{"search", `"unclosed`}, "unbalanced double quote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", append(tt.args, "--store", store)...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "--help' for usage") {
				t.Fatalf("stderr = %q, want %q and a pointer to --help", r.stderr, tt.want)
			}
			if r.stdout != "" {
				t.Fatalf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
	// Nothing above may have changed the store.
	if got := listJSON(t, store); len(got) != 2 {
		t.Fatalf("sessions after usage errors = %d, want 2", len(got))
	}
}

func TestCLIUnknownSession(t *testing.T) {
	store := seedStore(t)
	for _, args := range [][]string{
		{"show", "nosuch"},
		{"show", "nosuch", "--json"},
		{"compact", "nosuch"},
		{"delete", "nosuch", "--yes"},
		{"export", "nosuch"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runCLI(t, "", append(args, "--store", store)...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1; stderr %s", r.code, r.stderr)
			}
			if want := `no session "nosuch"; run 'sessionmem list' to see session ids`; !strings.Contains(r.stderr, want) {
				t.Fatalf("stderr = %q, want %q", r.stderr, want)
			}
			if r.stdout != "" {
				t.Fatalf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

func TestCLIStoreFromEnvironment(t *testing.T) {
	store := seedStore(t)
	t.Setenv(envStore, store)
	r := runCLI(t, "", "list").must(t)
	if !strings.Contains(r.stdout, seedAlpha) {
		t.Fatalf("list with %s set:\n%s", envStore, r.stdout)
	}
	t.Run("flag wins", func(t *testing.T) {
		r := runCLI(t, "", "list", "--store", t.TempDir()).must(t)
		if got, want := r.stdout, "No sessions found.\n"; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
	})
}

func TestCLIList(t *testing.T) {
	store := seedStore(t)
	sessions := listJSON(t, store)
	if len(sessions) != 2 || sessions[0].ID != seedBeta || sessions[1].ID != seedAlpha {
		t.Fatalf("list --json order = %+v, want beta then alpha", sessions)
	}
	r := runCLI(t, "", "list", "--store", store).must(t)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	want := []string{
		"ID          UPDATED                      MSGS  COMP  TOKENS  NAME / FIRST PROMPT",
		fmt.Sprintf("sess-beta   5m ago    2026-03-10 11:55 %6d %5d %7s  Second session: with a two-line prompt",
			sessions[0].MessageCount, 0, compactCount(sessions[0].ContextTokens)),
		fmt.Sprintf("sess-alpha  3h ago    2026-03-10 09:00 %6d %5d %7s  alpha build speed",
			sessions[1].MessageCount, 0, compactCount(sessions[1].ContextTokens)),
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("table:\n%s\nwant:\n%s", r.stdout, strings.Join(want, "\n"))
	}
	if sessions[1].MessageCount != 7 {
		t.Errorf("alpha message_count = %d, want 7", sessions[1].MessageCount)
	}

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"query matches name", []string{"--query", "BUILD"}, []string{seedAlpha}},
		{"query matches preview", []string{"--query", "second session"}, []string{seedBeta}},
		{"query matches nothing", []string{"--query", "zzz"}, nil},
		{"working dir", []string{"--working-dir", "/work/alpha/"}, []string{seedAlpha}},
		{"limit", []string{"--limit", "1"}, []string{seedBeta}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"list", "--store", store, "--json"}, tt.args...)
			r := runCLI(t, "", args...).must(t)
			var got []memory.Session
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("ids = %v, want %v", ids, tt.want)
			}
		})
	}
	t.Run("limit says there is more", func(t *testing.T) {
		r := runCLI(t, "", "list", "--store", store, "--limit", "1").must(t)
		if !strings.Contains(r.stdout, "more sessions") || strings.Contains(r.stdout, seedAlpha) {
			t.Fatalf("stdout:\n%s", r.stdout)
		}
	})
	t.Run("here", func(t *testing.T) {
		r := runCLI(t, "", "list", "--store", store, "--here").must(t)
		if got, want := r.stdout, "No sessions found.\n"; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
	})
	t.Run("empty json is an array", func(t *testing.T) {
		r := runCLI(t, "", "list", "--store", t.TempDir(), "--json").must(t)
		if got, want := strings.TrimSpace(r.stdout), "[]"; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
	})
}

var entryIDRE = regexp.MustCompile(`#[A-Za-z0-9_.-]+`)

func TestCLIShow(t *testing.T) {
	store := seedStore(t)
	r := runCLI(t, "", "show", seedAlpha, "--store", store).must(t)
	out := entryIDRE.ReplaceAllString(r.stdout, "#ID")
	for _, want := range []string{
		"Session    sess-alpha\nName       alpha build speed\nDirectory  /work/alpha\nModel      m1\n" +
			"Created    2026-03-10 09:00:00 UTC (3h ago)\nUpdated    2026-03-10 09:00:00 UTC (3h ago)\n",
		"Size       7 messages, 0 compactions, about ",
		"== Messages (7) ==\n\n[1] user  #ID\n  Make the build faster please\n",
		"[2] assistant  #ID\n  Reading the main file.\n  → read(path=\"/work/alpha/main.go\")\n",
		"[3] tool result  #ID\n  ← read:\n      log line of the build output\n",
		"… (5,",
		"characters; --all shows everything)",
		"[4] assistant  #ID  (in 1,200, out 80 tokens)\n  (thinking) The cache is cold every time.\n" +
			"  → edit(edits=[{\"oldText\":\"a\",\"newText\":\"b\"}], path=\"/work/alpha/build.sh\")\n",
		"[5] tool result  #ID\n  ← edit: ok\n",
		"[7] assistant  #ID\n  Done: the module cache is kept between builds.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show output lacks %q\n---\n%s", want, out)
		}
	}
	if strings.Contains(out, "== Summary") {
		t.Errorf("an uncompacted session shows a summary section:\n%s", out)
	}

	t.Run("all", func(t *testing.T) {
		r := runCLI(t, "", "show", seedAlpha, "--all", "--store", store).must(t)
		if strings.Contains(r.stdout, "--all shows everything") || strings.Count(r.stdout, "log line of the build output") != 200 {
			t.Fatalf("--all shortened the tool output:\n%s", r.stdout)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := runCLI(t, "", "show", seedAlpha, "--json", "--store", store).must(t)
		var tr memory.Transcript
		if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil {
			t.Fatal(err)
		}
		if tr.Session.ID != seedAlpha || len(tr.Messages) != 7 || tr.Messages[1].Content[1].Name != "read" {
			t.Fatalf("transcript = %+v", tr)
		}
	})
	t.Run("flags after and before the id", func(t *testing.T) {
		a := runCLI(t, "", "show", "--json", seedBeta, "--store", store).must(t)
		b := runCLI(t, "", "show", seedBeta, "--store", store, "--json").must(t)
		if a.stdout != b.stdout || !strings.HasPrefix(a.stdout, "{") {
			t.Fatalf("flag order changed the output:\n%s\n---\n%s", a.stdout, b.stdout)
		}
	})
	t.Run("terminal escapes are removed", func(t *testing.T) {
		if got, want := clean("a\x1b[31mred\x1b[0m\u202eb\tc\n"), "a[31mred[0mb\tc\n"; got != want {
			t.Fatalf("clean = %q, want %q", got, want)
		}
	})
}

func TestCLICompact(t *testing.T) {
	t.Setenv(envLLMURL, "")
	t.Setenv(envLLMModel, "")
	t.Setenv(envLLMAPIKey, "")
	store := seedStore(t)
	// 15 context tokens: counted in the calibrated tokens of context_tokens, which the
	// session's usage report puts a little below its character estimate.
	r := runCLI(t, "", "compact", seedAlpha, "--keep-recent-tokens", "15", "--store", store).must(t)
	m := regexp.MustCompile(`Context tokens: ([\d,]+) → ([\d,]+)\n`).FindStringSubmatch(r.stdout)
	if !strings.HasPrefix(r.stdout, "Compacted sess-alpha with the extractive summarizer.\n") || m == nil {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	if m[1] == m[2] {
		t.Errorf("tokens before = after = %s", m[1])
	}
	if !strings.Contains(r.stdout, "Files: 1 read, 1 modified\n") {
		t.Errorf("file counts missing:\n%s", r.stdout)
	}
	s := runCLI(t, "", "show", seedAlpha, "--store", store).must(t)
	for _, want := range []string{"== Summary (latest compaction) ==", "Files read (1):\n  main.go\n", "Files modified (1):\n  build.sh\n"} {
		if !strings.Contains(s.stdout, want) {
			t.Errorf("show after compact lacks %q:\n%s", want, s.stdout)
		}
	}
	if got := listJSON(t, store, "--query", "alpha"); len(got) != 1 || got[0].Compactions != 1 {
		t.Fatalf("after compact: %+v", got)
	}

	t.Run("nothing to compact", func(t *testing.T) {
		r := runCLI(t, "", "compact", seedBeta, "--store", store).must(t)
		if !strings.HasPrefix(r.stdout, "Nothing to compact in sess-beta") {
			t.Fatalf("stdout:\n%s", r.stdout)
		}
	})
	t.Run("llm not configured", func(t *testing.T) {
		r := runCLI(t, "", "compact", seedBeta, "--summarizer", "llm", "--store", store)
		if r.code != 1 || !strings.Contains(r.stderr, "no LLM summarizer is configured") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("bad llm environment is a usage-free error", func(t *testing.T) {
		t.Setenv(envLLMModel, "gpt")
		r := runCLI(t, "", "compact", seedBeta, "--store", store)
		if r.code != 1 || !strings.Contains(r.stderr, envLLMURL) {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := runCLI(t, "", "compact", seedBeta, "--json", "--store", store).must(t)
		var res memory.CompactResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Status != memory.StatusNothingToCompact {
			t.Fatalf("json = %s (%v)", r.stdout, err)
		}
	})
}

// fakeTerminal makes every stream count as a terminal for the length of a test.
func fakeTerminal(t *testing.T) {
	old := isTerminal
	isTerminal = func(any) bool { return true }
	t.Cleanup(func() { isTerminal = old })
}

func TestCLIDelete(t *testing.T) {
	store := seedStore(t)
	t.Run("declined on a terminal", func(t *testing.T) {
		fakeTerminal(t)
		r := runCLI(t, "n\n", "delete", seedBeta, "--store", store)
		if r.code != 1 || !strings.Contains(r.stderr, "Delete session sess-beta") || !strings.Contains(r.stderr, "not deleted") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		if got := listJSON(t, store); len(got) != 2 {
			t.Fatalf("sessions = %d, want 2", len(got))
		}
	})
	t.Run("confirmed on a terminal", func(t *testing.T) {
		fakeTerminal(t)
		r := runCLI(t, "y\n", "delete", seedBeta, "--store", store).must(t)
		if got, want := r.stdout, "Deleted sess-beta.\n"; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
	})
	t.Run("yes in a pipe", func(t *testing.T) {
		runCLI(t, "", "delete", "--yes", seedAlpha, "--store", store).must(t)
		if got := listJSON(t, store); len(got) != 0 {
			t.Fatalf("sessions left: %+v", got)
		}
	})
	t.Run("again is an error", func(t *testing.T) {
		r := runCLI(t, "", "delete", "-y", seedAlpha, "--store", store)
		if r.code != 1 || !strings.Contains(r.stderr, `no session "sess-alpha"`) {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}
