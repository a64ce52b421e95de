package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/memory"
)

const showHelp = `Usage: sessionmem show ID [--all] [--json]

Print a session for reading: its header (name, directory, model, created and updated), the
latest compaction summary with the files read and modified, then every message on the
current path, oldest first (messages folded into the summary included). Tool calls are
shown as name(arguments), shortened; tool results and thinking are shortened unless --all.

Flags:
  --all         show tool results, thinking and tool arguments in full
  --json        print the whole transcript as JSON (session, summary, read_files,
                modified_files, messages in the contract's message shape)
  --store LOC   store directory or PostgreSQL URL (postgres://...) (default $SESSIONMEM_STORE,
                else $XDG_DATA_HOME/sessionmem, else ~/.local/share/sessionmem)

Examples:
  sessionmem show 01a196fb-1dd0-7135-9f31-cc1d42fe7a38 | less
  sessionmem show cc-8463c716-a2ea-4c14-9efa-87158ebd9f20 --all
  sessionmem show cc-8463c716-a2ea-4c14-9efa-87158ebd9f20 --json | jq '.messages | length'
`

func showCommand() command {
	return command{name: "show", summary: "print a session's summary, files and messages", run: runShow}
}

func runShow(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("show", showHelp)
	all := c.Bool("all", false, "")
	asJSON := c.Bool("json", false, "")
	id, err := c.parseID(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	cs, err := openCLIStore(e, *c.store, openOptions{})
	if err != nil {
		return err
	}
	defer cs.close(e)
	tr, err := cs.svc.Transcript(ctx, id)
	if err != nil {
		return sessionError(id, err)
	}
	if *asJSON {
		return writeJSON(e.stdout, tr)
	}
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	writeTranscript(w, tr, *all)
	return w.Flush()
}

// Limits of the shortened view.
const (
	showResultLines  = 6
	showResultRunes  = 500
	showArgsRunes    = 160
	showThinkRunes   = 300
	showFileListSize = 40
)

// writeTranscript renders tr for reading.
func writeTranscript(w io.Writer, tr memory.Transcript, all bool) {
	s := tr.Session
	now := cliNow()
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%-10s %s\n", k, v)
		}
	}
	field("Session", s.ID)
	field("Name", cleanLine(s.Name, 200))
	field("Directory", clean(s.WorkingDir))
	model := cleanLine(s.Model, 100)
	if s.Provider != "" {
		model += " (" + cleanLine(s.Provider, 60) + ")"
	}
	field("Model", strings.TrimSpace(model))
	field("Forked", s.ParentSessionID)
	field("Created", fmt.Sprintf("%s (%s)", stampSeconds(s.CreatedAt), ago(s.CreatedAt, now)))
	field("Updated", fmt.Sprintf("%s (%s)", stampSeconds(s.UpdatedAt), ago(s.UpdatedAt, now)))
	field("Size", fmt.Sprintf("%s, %s, about %s context tokens", plural(s.MessageCount, "message"),
		plural(s.Compactions, "compaction"), thousands(int64(s.ContextTokens))))

	if tr.Summary != "" || len(tr.ReadFiles) > 0 || len(tr.ModifiedFiles) > 0 {
		fmt.Fprintf(w, "\n== Summary (latest compaction) ==\n\n")
		if text := summaryText(tr.Summary); text != "" {
			fmt.Fprintln(w, clean(text))
		}
		writeFileList(w, "Files read", tr.ReadFiles, all)
		writeFileList(w, "Files modified", tr.ModifiedFiles, all)
	}

	fmt.Fprintf(w, "\n== Messages (%d) ==\n", len(tr.Messages))
	names := map[string]string{} // tool call id → tool name
	for i, m := range tr.Messages {
		label := string(m.Role)
		if m.Role == memory.RoleToolResult {
			label = "tool result"
		}
		fmt.Fprintf(w, "\n[%d] %s", i+1, label)
		if m.EntryID != "" {
			fmt.Fprintf(w, "  #%s", m.EntryID)
		}
		if m.Usage != nil {
			fmt.Fprintf(w, "  (in %s, out %s tokens)", thousands(int64(m.Usage.InputTokens)), thousands(int64(m.Usage.OutputTokens)))
		}
		fmt.Fprintln(w)
		for _, b := range m.Content {
			writeBlock(w, b, names, all)
		}
	}
}

func writeFileList(w io.Writer, title string, files []string, all bool) {
	if len(files) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s (%d):\n", title, len(files))
	shown := files
	if !all && len(shown) > showFileListSize {
		shown = shown[:showFileListSize]
	}
	for _, f := range shown {
		fmt.Fprintf(w, "  %s\n", clean(f))
	}
	if len(shown) < len(files) {
		fmt.Fprintf(w, "  … %d more (--all lists them)\n", len(files)-len(shown))
	}
}

func writeBlock(w io.Writer, b memory.Block, names map[string]string, all bool) {
	switch b.Type {
	case memory.BlockText:
		writeIndented(w, clean(b.Text))
	case memory.BlockThinking:
		text := clean(b.Thinking)
		if !all {
			text = shorten(text, 3, showThinkRunes)
		}
		writeIndented(w, "(thinking) "+text)
	case memory.BlockToolCall:
		names[b.ID] = b.Name
		args := formatArgs(b.Arguments)
		if !all {
			args = cleanLine(args, showArgsRunes)
		}
		fmt.Fprintf(w, "  → %s(%s)\n", cleanLine(b.Name, 80), clean(args))
	case memory.BlockToolResult:
		name := names[b.ToolCallID]
		if name == "" {
			name = "tool"
		}
		head := "  ← " + cleanLine(name, 80)
		if b.IsError {
			head += " (error)"
		}
		text := clean(blocksText(b.Content))
		if !all {
			text = shorten(text, showResultLines, showResultRunes)
		}
		if !strings.Contains(text, "\n") && utf8.RuneCountInString(text) < 100 {
			fmt.Fprintf(w, "%s: %s\n", head, text)
			return
		}
		fmt.Fprintf(w, "%s:\n", head)
		writeIndentedBy(w, text, "      ")
	case memory.BlockImage:
		fmt.Fprintf(w, "  [image %s, %s base64 characters]\n", cleanLine(b.MediaType, 40), thousands(int64(len(b.Data))))
	default:
		fmt.Fprintf(w, "  [%s block]\n", cleanLine(b.Type, 40))
	}
}

// blocksText joins the text of a tool result's content blocks.
func blocksText(bs []memory.Block) string {
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case memory.BlockText:
			parts = append(parts, b.Text)
		case memory.BlockImage:
			parts = append(parts, fmt.Sprintf("[image %s]", b.MediaType))
		}
	}
	return strings.Join(parts, "\n")
}

// formatArgs renders tool arguments as key=value pairs in key order, values as compact JSON.
func formatArgs(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			return buf.String()
		}
		return string(raw)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		var buf bytes.Buffer
		v := string(obj[k])
		if json.Compact(&buf, obj[k]) == nil {
			v = buf.String()
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ", ")
}

// shorten keeps the first lines and runes of text and says how much was left out.
func shorten(text string, lines, runes int) string {
	total := utf8.RuneCountInString(text)
	cut := text
	if ls := strings.SplitN(cut, "\n", lines+1); len(ls) > lines {
		cut = strings.Join(ls[:lines], "\n")
	}
	if utf8.RuneCountInString(cut) > runes {
		cut = string([]rune(cut)[:runes])
	}
	if len(cut) == len(text) {
		return text
	}
	return fmt.Sprintf("%s\n… (%s more characters; --all shows everything)", strings.TrimRight(cut, "\n"),
		thousands(int64(total-utf8.RuneCountInString(cut))))
}

func writeIndented(w io.Writer, text string) { writeIndentedBy(w, text, "  ") }

func writeIndentedBy(w io.Writer, text, indent string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintf(w, "%s%s\n", indent, strings.TrimRight(line, " \t"))
	}
}
