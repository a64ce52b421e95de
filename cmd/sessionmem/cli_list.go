package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionmem/sessionmem/memory"
)

const listHelp = `Usage: sessionmem list [--working-dir DIR | --here] [--query Q] [--limit N] [--json]

List stored sessions, newest first: id, last update (relative and absolute), messages,
compactions, estimated context tokens, and the name or first prompt.

Flags:
  --working-dir DIR   only sessions recorded for DIR (made absolute)
  --here              only sessions of the current directory
  --query Q           case-insensitive match on name and first prompt
  --limit N           show at most N sessions (default 20; 0 shows all)
  --json              print a JSON array of sessions (the session_list shape) for scripts
  --store DIR|URL     store directory or PostgreSQL URL (postgres://...) (default
                      $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem, else
                      ~/.local/share/sessionmem)

Examples:
  sessionmem list
  sessionmem list --here --limit 5
  sessionmem list --query "flaky test" --json | jq -r '.[0].session_id'
`

func listCommand() command {
	return command{name: "list", summary: "list stored sessions, newest first", run: runList}
}

// listPage is the most session_list returns per call.
const listPage = 100

func runList(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("list", listHelp)
	dir := c.String("working-dir", "", "")
	here := c.Bool("here", false, "")
	query := c.String("query", "", "")
	limit := c.Int("limit", 20, "")
	asJSON := c.Bool("json", false, "")
	pos, err := c.parse(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	switch {
	case len(pos) > 0:
		return c.usageError(e, "unexpected argument %q (filters are flags: --query, --working-dir)", pos[0])
	case *here && *dir != "":
		return c.usageError(e, "pass either --here or --working-dir, not both")
	case *limit < 0:
		return c.usageError(e, "--limit must be 0 (all) or more, got %d", *limit)
	}
	wd := *dir
	if *here {
		if wd, err = os.Getwd(); err != nil {
			return fmt.Errorf("current directory: %w", err)
		}
	}
	if wd != "" {
		if wd, err = filepath.Abs(wd); err != nil {
			return c.usageError(e, "--working-dir %q: %v", *dir, err)
		}
	}
	cs, err := openCLIStore(e, *c.store, openOptions{})
	if err != nil {
		return err
	}
	defer cs.close(e)

	var sessions []memory.Session
	more := false
	req := memory.ListRequest{WorkingDir: wd, Query: *query}
	for {
		req.Limit = listPage
		if *limit > 0 {
			req.Limit = min(listPage, *limit-len(sessions))
		}
		res, err := cs.svc.List(ctx, req)
		if err != nil {
			return sessionError("", err)
		}
		sessions = append(sessions, res.Sessions...)
		if res.NextCursor == "" {
			break
		}
		if *limit > 0 && len(sessions) >= *limit {
			more = true
			break
		}
		req.Cursor = res.NextCursor
	}
	if *asJSON {
		if sessions == nil {
			sessions = []memory.Session{}
		}
		return writeJSON(e.stdout, sessions)
	}
	if len(sessions) == 0 {
		fmt.Fprintln(e.stdout, "No sessions found.")
		return nil
	}
	writeSessionTable(e, sessions)
	if more {
		fmt.Fprintf(e.stdout, "(more sessions: --limit %d shows more, --limit 0 shows all)\n", *limit*2)
	}
	return nil
}

// writeSessionTable prints sessions as an aligned table.
func writeSessionTable(e *env, sessions []memory.Session) {
	now := cliNow()
	idW := len("ID")
	for _, s := range sessions {
		idW = max(idW, len(s.ID))
	}
	fmt.Fprintf(e.stdout, "%-*s  %-26s %6s %5s %7s  %s\n", idW, "ID", "UPDATED", "MSGS", "COMP", "TOKENS", "NAME / FIRST PROMPT")
	for _, s := range sessions {
		updated := fmt.Sprintf("%-9s %s", ago(s.UpdatedAt, now), stamp(s.UpdatedAt))
		label := cleanLine(s.Name, 70)
		if label == "" {
			label = cleanLine(s.Preview, 70)
		}
		if label == "" {
			label = "-"
		}
		fmt.Fprintf(e.stdout, "%-*s  %-26s %6d %5d %7s  %s\n", idW, s.ID, updated, s.MessageCount, s.Compactions,
			compactCount(s.ContextTokens), strings.TrimSpace(label))
	}
}
