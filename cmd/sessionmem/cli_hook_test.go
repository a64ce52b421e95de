package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/fileops"
)

// hookPayload is the JSON an agent sends a hook.
func hookPayload(t *testing.T, fields map[string]string) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hookContextOf decodes a SessionStart answer and returns its additionalContext.
func hookContextOf(t *testing.T, stdout string) string {
	t.Helper()
	var out struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("hook stdout is not the JSON answer: %v\n%s", err, stdout)
	}
	if got, want := out.HookSpecificOutput.HookEventName, "SessionStart"; got != want {
		t.Fatalf("hookEventName = %q, want %q", got, want)
	}
	return out.HookSpecificOutput.AdditionalContext
}

const ccSession = "11111111-2222-3333-4444-555555555555"

func TestCLIHookClaudeCode(t *testing.T) {
	store := t.TempDir()
	transcriptPath := copyFixture(t, "claude-code.jsonl", t.TempDir(), "projects/-work-proj/"+ccSession+".jsonl")
	run := func(t *testing.T, fields map[string]string) cliResult {
		t.Helper()
		r := runCLI(t, hookPayload(t, fields), "hook", "claude-code", "--store", store)
		if r.code != 0 {
			t.Fatalf("hook exit %d; stderr %s", r.code, r.stderr)
		}
		return r
	}

	// Stop imports the live transcript and says nothing.
	r := run(t, map[string]string{"session_id": ccSession, "transcript_path": transcriptPath, "cwd": "/work/proj", "hook_event_name": "Stop"})
	if r.stdout != "" || strings.Contains(r.stderr, "sessionmem hook:") {
		t.Fatalf("Stop: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	got := listJSON(t, store)
	if len(got) != 1 || got[0].ID != ccFixtureID || got[0].MessageCount != 7 || got[0].Compactions != 1 {
		t.Fatalf("after Stop: %+v", got)
	}

	tests := []struct {
		name    string
		fields  map[string]string
		want    []string // in additionalContext; nil means stdout must be empty
		notWant []string
	}{
		{
			name:   "resume injects summary and files",
			fields: map[string]string{"session_id": ccSession, "transcript_path": transcriptPath, "cwd": "/work/proj", "hook_event_name": "SessionStart", "source": "resume"},
			want: []string{"what this session (" + ccFixtureID + ") recorded", "## Summary of the earlier work",
				"it now waits with waitReady(t).", "## Files modified\n- parser_test.go\n"},
		},
		{
			name:    "compact injects only the files",
			fields:  map[string]string{"session_id": ccSession, "transcript_path": transcriptPath, "cwd": "/work/proj", "hook_event_name": "SessionStart", "source": "compact"},
			want:    []string{"## Files modified\n- parser_test.go\n"},
			notWant: []string{"waitReady"},
		},
		{
			name: "startup points at the previous session of the directory",
			fields: map[string]string{"session_id": "99999999-0000-0000-0000-000000000000", "transcript_path": filepath.Join(t.TempDir(), "missing.jsonl"),
				"cwd": "/work/proj", "hook_event_name": "SessionStart", "source": "startup"},
			want: []string{"the previous session in this directory was " + ccFixtureID, `("Fix the flaky test in parser_test.go")`,
				"session_resume with session_id", "waitReady(t)", "- parser_test.go"},
		},
		{
			name:   "startup in another directory says nothing",
			fields: map[string]string{"session_id": "99999999-0000-0000-0000-000000000000", "cwd": "/work/elsewhere", "hook_event_name": "SessionStart", "source": "startup"},
		},
		{
			name:   "clear says nothing",
			fields: map[string]string{"session_id": ccSession, "transcript_path": transcriptPath, "cwd": "/work/proj", "hook_event_name": "SessionStart", "source": "clear"},
		},
		{
			name:   "PreCompact says nothing",
			fields: map[string]string{"session_id": ccSession, "transcript_path": transcriptPath, "cwd": "/work/proj", "hook_event_name": "PreCompact", "trigger": "auto"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.fields)
			if tt.want == nil {
				if r.stdout != "" {
					t.Fatalf("stdout = %q, want nothing", r.stdout)
				}
				return
			}
			ctx := hookContextOf(t, r.stdout)
			for _, w := range tt.want {
				if !strings.Contains(ctx, w) {
					t.Errorf("additionalContext lacks %q:\n%s", w, ctx)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(ctx, w) {
					t.Errorf("additionalContext has %q:\n%s", w, ctx)
				}
			}
		})
	}
	if got := listJSON(t, store); len(got) != 1 || got[0].MessageCount != 7 {
		t.Fatalf("hooks re-imported something: %+v", got)
	}

	t.Run("a growing transcript is imported incrementally", func(t *testing.T) {
		appendBytes(t, transcriptPath, []byte(`{"type":"user","uuid":"u9","parentUuid":"a4","sessionId":"`+ccSession+
			`","timestamp":"2026-03-01T10:07:00.000Z","cwd":"/work/proj","isSidechain":false,"message":{"role":"user","content":"Thanks!"}}`+"\n"))
		run(t, map[string]string{"session_id": ccSession, "transcript_path": transcriptPath, "cwd": "/work/proj", "hook_event_name": "Stop"})
		if got := listJSON(t, store); got[0].MessageCount != 8 {
			t.Fatalf("after growth: %+v", got)
		}
	})
}

func TestCLIHookCodex(t *testing.T) {
	store := t.TempDir()
	rollout := copyFixture(t, "codex.jsonl", t.TempDir(), "rollout.jsonl")
	in := hookPayload(t, map[string]string{"session_id": "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee", "transcript_path": rollout,
		"cwd": "/work/codexproj", "hook_event_name": "Stop", "turn_id": "t1", "model": "gpt-5"})
	r := runCLI(t, in, "hook", "codex", "--store", store).must(t)
	if r.stdout != "" {
		t.Fatalf("stdout = %q", r.stdout)
	}
	if got := listJSON(t, store); len(got) != 1 || got[0].ID != codexFixtureID {
		t.Fatalf("sessions = %+v", got)
	}
	in = hookPayload(t, map[string]string{"session_id": "0199ffff-0000-7000-8000-000000000000", "cwd": "/work/codexproj",
		"hook_event_name": "SessionStart", "source": "startup"})
	r = runCLI(t, in, "hook", "codex", "--store", store).must(t)
	if ctx := hookContextOf(t, r.stdout); !strings.Contains(ctx, codexFixtureID) || !strings.Contains(ctx, `("Print hello")`) {
		t.Fatalf("additionalContext:\n%s", ctx)
	}
}

// TestCLIHookPinnedContext: the AGENTS.md instructions Codex injects are imported pinned, and a
// later session's SessionStart context carries them verbatim.
func TestCLIHookPinnedContext(t *testing.T) {
	store := t.TempDir()
	rollout := copyFixture(t, "codex.jsonl", t.TempDir(), "rollout.jsonl")
	b, err := os.ReadFile(rollout)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	agents := `{"timestamp":"2026-03-03T08:00:00.500Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /work/codexproj\n\n<INSTRUCTIONS>\nAlways run gofmt & go vet before <commit>.\n</INSTRUCTIONS>"}]}}`
	if err := os.WriteFile(rollout, []byte(string(first)+"\n"+agents+"\n"+string(rest)), 0o600); err != nil {
		t.Fatal(err)
	}
	in := hookPayload(t, map[string]string{"session_id": "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee", "transcript_path": rollout,
		"cwd": "/work/codexproj", "hook_event_name": "Stop", "turn_id": "t1", "model": "gpt-5"})
	runCLI(t, in, "hook", "codex", "--store", store).must(t)
	in = hookPayload(t, map[string]string{"session_id": "0199ffff-0000-7000-8000-000000000000", "cwd": "/work/codexproj",
		"hook_event_name": "SessionStart", "source": "startup"})
	r := runCLI(t, in, "hook", "codex", "--store", store).must(t)
	ctx := hookContextOf(t, r.stdout)
	if !strings.Contains(ctx, "## Standing context (pinned, verbatim)") || !strings.Contains(ctx, "Always run gofmt & go vet before <commit>.") {
		t.Fatalf("additionalContext lacks the pinned instructions:\n%s", ctx)
	}
	// The instructions are not the session's first prompt.
	if got := listJSON(t, store); len(got) != 1 || !strings.HasPrefix(got[0].Preview, "Print hello") {
		t.Fatalf("sessions = %+v", got)
	}
}

// A hook never fails the agent: whatever goes wrong, stdout stays empty, one line goes to
// stderr and the exit code is 0.
func TestCLIHookNeverFails(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	aDir := t.TempDir()
	good := `{"session_id":"` + ccSession + `","cwd":"/work/proj","hook_event_name":"SessionStart","source":"startup"}`
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"empty stdin", "", []string{"hook", "claude-code"}, "hook input is not the JSON object"},
		{"garbage stdin", "{nope", []string{"hook", "claude-code"}, "hook input is not the JSON object"},
		{"no agent", good, []string{"hook"}, "name the agent"},
		{"unknown agent", good, []string{"hook", "cursor"}, `unknown agent "cursor"`},
		{"bad flag", good, []string{"hook", "claude-code", "--nope"}, "flag provided but not defined"},
		{"store is a file", good, []string{"hook", "claude-code", "--store", notADir}, "open store"},
		{"transcript is a directory", `{"session_id":"x","transcript_path":"` + aDir + `","cwd":"/work/proj","hook_event_name":"Stop"}`,
			[]string{"hook", "claude-code"}, "sessionmem hook: "},
	}
	t.Run("stdin is a terminal", func(t *testing.T) {
		fakeTerminal(t)
		r := runCLI(t, good, "hook", "claude-code", "--store", t.TempDir())
		if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "reads the hook's JSON on stdin") {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !strings.Contains(strings.Join(args, " "), "--store") {
				args = append(args, "--store", t.TempDir())
			}
			r := runCLI(t, tt.stdin, args...)
			if r.code != 0 || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q", r.code, r.stdout)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("stderr = %q, want %q", r.stderr, tt.want)
			}
		})
	}
}

// The shipped configuration files must parse and call the hook command.
func TestCLIHookConfigFiles(t *testing.T) {
	for _, name := range []string{"claude-code-settings.json", "codex-hooks.json"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "hooks", name))
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				Hooks map[string][]struct {
					Matcher string `json:"matcher"`
					Hooks   []struct {
						Type    string `json:"type"`
						Command string `json:"command"`
						Timeout int    `json:"timeout"`
					} `json:"hooks"`
				} `json:"hooks"`
			}
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			for _, event := range []string{"SessionStart", "PreCompact", "Stop"} {
				groups := cfg.Hooks[event]
				if len(groups) == 0 || len(groups[0].Hooks) == 0 {
					t.Fatalf("no %s hook", event)
				}
				h := groups[0].Hooks[0]
				if h.Type != "command" || !strings.HasPrefix(h.Command, "sessionmem hook ") || h.Timeout <= 0 {
					t.Errorf("%s hook = %+v", event, h)
				}
			}
		})
	}
}

// The text hooks and show print keeps the ledger of durable facts and leaves the file lists
// (printed apart) out.
func TestSummaryTextKeepsLedger(t *testing.T) {
	l := compaction.Ledger{Constraints: []compaction.LedgerNote{{Text: "Never push to main."}}}
	stored := compaction.AppendLedger(fileops.AppendTags("## Goal\n- g", []string{"a.go"}, []string{"b.go"}), &l)
	want := "## Goal\n- g\n\n<user-constraints>\n- Never push to main.\n</user-constraints>"
	if got := summaryText(stored); got != want {
		t.Errorf("summaryText = %q, want %q", got, want)
	}
	if got := summaryText(fileops.AppendTags("## Goal\n- g", []string{"a.go"}, nil)); got != "## Goal\n- g" {
		t.Errorf("without a ledger: %q", got)
	}
}
