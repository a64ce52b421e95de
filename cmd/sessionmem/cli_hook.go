package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/fileops"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/transcript"
)

const hookHelp = `Usage: sessionmem hook claude-code|codex [--timeout D]

Run as a Claude Code or Codex hook. Reads the hook's JSON from stdin (session_id,
transcript_path, cwd, hook_event_name, source, trigger), imports what the live transcript
gained since the last hook (incrementally: only the appended part is read), and on
SessionStart prints the context the agent should start with, as
{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"..."}}:
  source startup   the latest summary and read/modified files of the newest earlier session
                   of the same directory (or a pointer to it when it has no summary yet)
  source resume    the resumed session's latest summary and file lists
  source compact   the session's read/modified file lists (the agent's own summary is
                   already in its context)
  source clear     nothing
Other events (PreCompact, Stop, ...) only import.

A hook must never get in the agent's way: any problem is one line on stderr, stdout stays
empty, and the exit code is 0.

Flags:
  --timeout D   give up after D (default 20s)
  --store LOC   store directory or PostgreSQL URL (postgres://...) (default $SESSIONMEM_STORE,
                else $XDG_DATA_HOME/sessionmem, else ~/.local/share/sessionmem)

Configuration: see hooks/claude-code-settings.json and hooks/codex-hooks.json.
`

func hookCommand() command {
	return command{name: "hook", summary: "run as a Claude Code / Codex hook (JSON on stdin)", run: runHook}
}

// hookInput is the JSON Claude Code and Codex send a command hook on stdin (the fields used).
type hookInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Source         string `json:"source"`
	Trigger        string `json:"trigger"`
}

// hookOutput is the JSON form of a SessionStart hook's answer.
type hookOutput struct {
	HookSpecificOutput struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// Bounds of the injected context, well under what agents accept from a hook (Claude Code
// keeps about 10,000 characters of additionalContext inline).
const (
	hookMaxInput     = 1 << 20
	hookSummaryRunes = 6000
	hookMaxFiles     = 40
)

// hookAgents maps the hook's agent name to its transcript format and session-id prefix.
var hookAgents = map[string]struct {
	format transcript.Format
	prefix string
}{
	"claude-code": {transcript.FormatClaudeCode, "cc"},
	"codex":       {transcript.FormatCodex, "codex"},
}

func runHook(ctx context.Context, e *env, args []string) (err error) {
	c := newCLIFlags("hook", hookHelp)
	timeout := c.Duration("timeout", 20*time.Second, "")
	pos, err := c.parse(e, args)
	if err != nil {
		// A misconfigured hook must not block the agent either: the message is on stderr.
		return nil
	}
	if len(pos) != 1 {
		fmt.Fprintln(e.stderr, "sessionmem hook: name the agent: 'sessionmem hook claude-code' or 'sessionmem hook codex'")
		return nil
	}
	agent, ok := hookAgents[pos[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "sessionmem hook: unknown agent %q; use claude-code or codex\n", pos[0])
		return nil
	}
	if isTerminal(e.stdin) {
		fmt.Fprintln(e.stderr, "sessionmem hook: reads the hook's JSON on stdin; the agent runs it (see 'sessionmem hook --help')")
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(e.stderr, "sessionmem hook: internal error: %v\n", r)
			err = nil
		}
	}()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	out, herr := hook(ctx, e, *c.store, agent.format, agent.prefix)
	if herr != nil {
		fmt.Fprintf(e.stderr, "sessionmem hook: %v\n", herr)
		return nil
	}
	if out != nil {
		if _, werr := e.stdout.Write(out); werr != nil {
			fmt.Fprintf(e.stderr, "sessionmem hook: write output: %v\n", werr)
		}
	}
	return nil
}

// hook does the work and returns what to print on stdout (nil for nothing).
func hook(ctx context.Context, e *env, storeFlag string, format transcript.Format, prefix string) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(e.stdin, hookMaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read hook input: %w", err)
	}
	if len(raw) > hookMaxInput {
		return nil, fmt.Errorf("hook input is larger than %d bytes", hookMaxInput)
	}
	var in hookInput
	if err := json.Unmarshal(bytes.TrimSpace(raw), &in); err != nil {
		return nil, fmt.Errorf("hook input is not the JSON object the agent sends: %w", err)
	}
	cs, err := openCLIStore(e, storeFlag, openOptions{create: true}) // it imports
	if err != nil {
		return nil, err
	}
	defer cs.close(e)

	sessionID := ""
	if in.SessionID != "" && storage.ValidID(prefix+"-"+in.SessionID) {
		sessionID = prefix + "-" + in.SessionID
	}
	var importErr error
	if in.TranscriptPath != "" {
		im := &transcript.Importer{Svc: cs.svc, StateDir: importStateDir(cs.dir, e.getenv)}
		res, err := im.ImportFile(ctx, in.TranscriptPath, format)
		switch {
		case err == nil:
			if res.SessionID != "" {
				sessionID = res.SessionID
			}
		case errors.Is(err, fs.ErrNotExist):
			// A brand-new session has no transcript yet.
		default:
			importErr = err
		}
	}
	if in.HookEventName != "SessionStart" {
		return nil, importErr
	}
	if importErr != nil {
		// Still give the agent what the store already holds; report the import problem.
		fmt.Fprintf(e.stderr, "sessionmem hook: %v\n", importErr)
	}

	var target string
	withSummary := true
	switch in.Source {
	case "clear":
		return nil, nil
	case "compact":
		target, withSummary = sessionID, false
	case "resume":
		target = sessionID
	default: // "startup", or a source this version does not know
		if target, err = priorSession(ctx, cs.svc, in.Cwd, sessionID); err != nil {
			return nil, err
		}
	}
	if target == "" {
		return nil, nil
	}
	text, err := hookContext(ctx, cs.svc, target, in.Source, withSummary)
	if err != nil || text == "" {
		if errors.Is(err, memory.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	var out hookOutput
	out.HookSpecificOutput.HookEventName = "SessionStart"
	out.HookSpecificOutput.AdditionalContext = text
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// priorSession returns the newest session of cwd other than current, "" if none.
func priorSession(ctx context.Context, svc *memory.Service, cwd, current string) (string, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return "", nil
	}
	res, err := svc.List(ctx, memory.ListRequest{WorkingDir: cwd, Limit: 5})
	if err != nil {
		return "", fmt.Errorf("list sessions of %s: %w", cwd, err)
	}
	for _, s := range res.Sessions {
		if s.ID != current {
			return s.ID, nil
		}
	}
	return "", nil
}

// summaryText is a stored summary for people and agents: the file-list blocks left out (they
// are shown apart), the ledger of durable facts kept.
func summaryText(stored string) string {
	text := strings.TrimSpace(fileops.StripTags(stored))
	if l, ok := compaction.LedgerFromSummary(stored); ok {
		text = compaction.AppendLedger(text, &l)
	}
	return text
}

// hookContext builds the text injected at session start from session id's latest summary and
// file lists. It is "" when there is nothing worth saying.
func hookContext(ctx context.Context, svc *memory.Service, id, source string, withSummary bool) (string, error) {
	meta, err := svc.Get(ctx, id)
	if err != nil {
		return "", err
	}
	res, err := svc.Resume(ctx, memory.ResumeRequest{SessionID: id})
	if err != nil {
		return "", err
	}
	summary := ""
	if withSummary {
		summary = summaryText(res.Summary)
	}
	pinned, err := svc.Pinned(ctx, id)
	if err != nil {
		return "", err
	}
	files := len(res.ReadFiles) + len(res.ModifiedFiles)
	startup := source != "resume" && source != "compact"
	if summary == "" && files == 0 && len(pinned) == 0 && !startup {
		return "", nil
	}
	var b strings.Builder
	label := cleanLine(meta.Name, 100)
	if label == "" {
		label = cleanLine(meta.Preview, 100)
	}
	switch {
	case startup:
		fmt.Fprintf(&b, "sessionmem: the previous session in this directory was %s", id)
		if label != "" {
			fmt.Fprintf(&b, " (%q)", label)
		}
		fmt.Fprintf(&b, ", last active %s (%s), %d messages.\n", stamp(meta.UpdatedAt), ago(meta.UpdatedAt, cliNow()), meta.MessageCount)
		fmt.Fprintf(&b, "Its full history is stored in sessionmem (session_resume with session_id %q).\n", id)
	case source == "compact":
		fmt.Fprintf(&b, "sessionmem: files this session (%s) worked with before the compaction.\n", id)
	default:
		fmt.Fprintf(&b, "sessionmem: what this session (%s) recorded before it was resumed.\n", id)
	}
	writeHookPinned(&b, pinned)
	if summary != "" {
		fmt.Fprintf(&b, "\n## Summary of the earlier work\n\n%s\n", clipRunes(clean(summary), hookSummaryRunes))
	}
	writeHookFiles(&b, "Files read", res.ReadFiles)
	writeHookFiles(&b, "Files modified", res.ModifiedFiles)
	return b.String(), nil
}

// writeHookPinned writes the session's pinned messages (standing context the user or the
// agent asked to keep: the task, the project's instructions) verbatim, their text blocks that
// is; the pinned cap (memory.MaxPinnedTokens) bounds them.
func writeHookPinned(b *strings.Builder, pinned []memory.Message) {
	if len(pinned) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Standing context (pinned, verbatim)\n")
	for _, m := range pinned {
		var parts []string
		for _, blk := range m.Content {
			if blk.Type == memory.BlockText && strings.TrimSpace(blk.Text) != "" {
				parts = append(parts, clean(blk.Text))
			}
		}
		if len(parts) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n### %s message %s\n\n%s\n", m.Role, m.EntryID, strings.Join(parts, "\n\n"))
	}
}

func writeHookFiles(b *strings.Builder, title string, files []string) {
	if len(files) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n", title)
	for i, f := range files {
		if i == hookMaxFiles {
			fmt.Fprintf(b, "- … and %d more\n", len(files)-hookMaxFiles)
			break
		}
		fmt.Fprintf(b, "- %s\n", cleanLine(f, 300))
	}
}
