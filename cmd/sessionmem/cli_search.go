package main

// search, reindex, and the index part of verify: the commands about the full-text index.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
)

const searchHelp = `Usage: sessionmem search QUERY [--here | --working-dir DIR] [--file PATH] [--session ID]
                         [--role ROLE] [--since TIME] [--until TIME] [--limit N] [--json]

Search every stored session (messages, tool calls and their output, compaction summaries),
best matches first, and print each match's session, time, role and a snippet.

Query syntax: ask in plain words ("how did we fix the flaky upload test?"): the words are
ranked, not all required, function words match nothing by themselves, and word forms match
each other (fix, fixed, fixing); +word must occur; "double quotes" for an exact phrase (must
occur); a trailing * for a prefix (at least 3 characters); -word excludes entries that
contain it. Identifiers and paths are found whole and by segment: parseConfig finds
parseConfig(, login.go and auth/login.go find internal/auth/login.go.

Flags:
  --here              only sessions of the current directory
  --working-dir DIR   only sessions recorded for DIR (made absolute)
  --file PATH         only entries whose tool calls read or modified PATH (absolute, or
                      relative to each session's directory); QUERY may then be omitted
  --session ID        only this session
  --role ROLE         only messages of ROLE (user, assistant, tool_result, system)
  --since, --until T  only entries at or after / at or before T (RFC 3339, or 2006-01-02)
  --limit N           show at most N matches (default 10, at most 100)
  --json              print the session_search result as JSON
  --store DIR|URL     store directory or PostgreSQL URL (postgres://...) (default
                      $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem, else
                      ~/.local/share/sessionmem)

Examples:
  sessionmem search "retry backoff" --here
  sessionmem search --file internal/auth/login.go --limit 20
  sessionmem search 'config* -test' --since 2026-01-01 --json | jq -r '.matches[].session_id'
`

func searchCommand() command {
	return command{name: "search", summary: "search every session, best matches first", run: runSearch}
}

func runSearch(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("search", searchHelp)
	dir := c.String("working-dir", "", "")
	here := c.Bool("here", false, "")
	file := c.String("file", "", "")
	session := c.String("session", "", "")
	role := c.String("role", "", "")
	since := c.String("since", "", "")
	until := c.String("until", "", "")
	limit := c.Int("limit", memory.DefaultSearchLimit, "")
	asJSON := c.Bool("json", false, "")
	pos, err := c.parse(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	switch {
	case len(pos) > 1:
		return c.usageError(e, "pass the query as one argument (quote it): sessionmem search %q", strings.Join(pos, " "))
	case len(pos) == 0 && *file == "":
		return c.usageError(e, "pass a query, or --file PATH")
	case *here && *dir != "":
		return c.usageError(e, "pass either --here or --working-dir, not both")
	case *limit < 1 || *limit > memory.MaxSearchLimit:
		return c.usageError(e, "--limit must be 1 to %d, got %d", memory.MaxSearchLimit, *limit)
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
	req := memory.SearchRequest{WorkingDir: wd, File: *file, SessionID: *session, Role: *role, Limit: *limit}
	if len(pos) == 1 {
		req.Query = pos[0]
	}
	for _, t := range []struct {
		flag, v string
		dst     *string
	}{{"since", *since, &req.Since}, {"until", *until, &req.Until}} {
		if t.v == "" {
			continue
		}
		if d, err := time.ParseInLocation(time.DateOnly, t.v, time.Local); err == nil {
			if t.flag == "until" {
				d = d.Add(24*time.Hour - time.Nanosecond) // the whole day
			}
			*t.dst = d.Format(time.RFC3339Nano)
		} else {
			*t.dst = t.v // memory checks RFC 3339
		}
	}
	cs, err := openCLIStore(e, *c.store, openOptions{})
	if err != nil {
		return err
	}
	defer cs.close(e)
	res, err := cs.svc.Search(ctx, req)
	if err != nil {
		return searchError(c, e, err)
	}
	if *asJSON {
		return writeJSON(e.stdout, res)
	}
	if len(res.Matches) == 0 {
		fmt.Fprintln(e.stdout, "No matches.")
		return nil
	}
	for i, m := range res.Matches {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		who := string(m.Role)
		if m.Kind == memory.MatchSummary {
			who = "summary"
		}
		name := cleanLine(m.SessionName, 60)
		if name == "" {
			name = "(unnamed)"
		}
		fmt.Fprintf(e.stdout, "%s  %s\n  %s  %s  entry %s\n  %s\n", clean(name), m.SessionID, stamp(m.Time), who, m.EntryID,
			clean(cleanLine(m.Snippet, 300)))
	}
	if res.NextCursor != "" {
		fmt.Fprintf(e.stdout, "\n(more matches: --limit %d shows more)\n", min(*limit*2, memory.MaxSearchLimit))
	}
	return nil
}

const reindexHelp = `Usage: sessionmem reindex

Rebuild the full-text index of a local store (<store>/search) from the session files:
replace it by an empty one, index every session again (progress on stderr), then compact
it. Servers keep working meanwhile; their searches scan the sessions until the index is
complete. The index is rebuilt on its own when it is found missing or damaged; run this
after restoring sessions from a backup, or to make the index as small as it gets.

Flags:
  --store DIR   store directory (default $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem,
                else ~/.local/share/sessionmem). A PostgreSQL store keeps its index in the
                database, up to date in the same transaction as every save: nothing to do.
`

func reindexCommand() command {
	return command{name: "reindex", summary: "rebuild the full-text search index from the session files", run: runReindex}
}

func runReindex(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("reindex", reindexHelp)
	pos, err := c.parse(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	if len(pos) > 0 {
		return c.usageError(e, "unexpected argument %q (reindex rebuilds the whole index)", pos[0])
	}
	cs, err := openCLIStore(e, *c.store, openOptions{})
	if err != nil {
		return err
	}
	defer cs.close(e)
	rx, ok := cs.store.(storage.Reindexer)
	if !ok {
		return errors.New("this store has no search index to rebuild")
	}
	defer adaptMemoryLimit(ctx, e.getenv, reindexMemoryFloor)()
	start := time.Now()
	last := time.Time{}
	var mb float64
	var at storage.ReindexProgress
	err = rx.Reindex(ctx, func(p storage.ReindexProgress) {
		at = p
		mb = float64(p.Bytes) / 1e6
		if time.Since(last) >= time.Second || p.Done() {
			last = time.Now()
			fmt.Fprintf(e.stderr, "reindex: %s\n", reindexProgress(p, mb/max(time.Since(start).Seconds(), 1e-3)))
		}
	})
	if err != nil {
		if ierr := reindexInterrupted(ctx, at); ierr != nil {
			return ierr
		}
		return err
	}
	took := time.Since(start).Round(100 * time.Millisecond)
	sx, ok := cs.store.(storage.IndexStatser)
	if !ok {
		fmt.Fprintf(e.stdout, "Reindexed in %s (this store does not describe its index).\n", took)
		return nil
	}
	st, err := sx.IndexStats(ctx)
	if err != nil {
		return err
	}
	if st.PerRecord {
		// The PostgreSQL store: saves write their own documents, so reindex only caught up.
		fmt.Fprintf(e.stdout, "Search documents cover %s of %s records (%s).\n", thousands(st.Records), thousands(st.TotalRecords), took)
		return nil
	}
	fmt.Fprintf(e.stdout, "Indexed %s entries of %s sessions (%.1f MB of records) in %s; the index takes %s.\n",
		thousands(st.Entries), thousands(st.Sessions), mb, took, byteSize(st.Bytes))
	return nil
}

// reindexInterrupted is reindex's report when a signal stopped it (nil otherwise), at the
// progress it had reported last. The sessions are untouched: only the index is incomplete,
// and what reads it copes (see storage.Reindexer).
func reindexInterrupted(ctx context.Context, at storage.ReindexProgress) error {
	if at.PerRecord {
		return interrupted(ctx, "reindex interrupted with %s of %s records indexed; the sessions are untouched and "+
			"what was indexed stays. Run 'sessionmem reindex' again to continue from there.",
			thousands(at.Records), thousands(at.TotalRecords))
	}
	done := "before it indexed any session"
	if at.TotalSessions > 0 {
		done = fmt.Sprintf("after %d of %d sessions", at.Sessions, at.TotalSessions)
	}
	return interrupted(ctx, "reindex interrupted %s; the sessions are untouched, and the next sessionmem to open "+
		"the store finishes the index on its own (searches scan the sessions meanwhile). Run 'sessionmem reindex' "+
		"again to finish it now (it starts over).", done)
}

// reindexProgress words one progress report of reindex: sessions and the rate of reading for
// a store that indexes session by session, records for one that tracks records.
func reindexProgress(p storage.ReindexProgress, mbPerSec float64) string {
	if p.PerRecord {
		return fmt.Sprintf("%s of %s records have search documents", thousands(p.Records), thousands(p.TotalRecords))
	}
	return fmt.Sprintf("%d of %d sessions, %.1f MB of records, %.1f MB/s", p.Sessions, p.TotalSessions, float64(p.Bytes)/1e6, mbPerSec)
}

// verifySearchIndex checks the store's full-text index, when it can check it, and reports its
// size against the sessions'. A damaged index is derived data: it is reported and rebuilt
// (here, now), never counted as a damaged store.
func verifySearchIndex(ctx context.Context, e *env, st storage.Store) {
	iv, ok := st.(storage.IndexVerifier)
	if !ok {
		return // nothing to check apart from the records (the PostgreSQL store's documents are rows beside them)
	}
	err := iv.VerifyIndex(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return // interrupted: the caller says so; the index is not known to be damaged
	case errors.Is(err, storage.ErrSearchUnavailable):
		fmt.Fprintf(e.stdout, "Search index: unavailable (%v).\n", err)
		return
	case err != nil:
		fmt.Fprintf(e.stdout, "Search index: DAMAGED (%v); it is being rebuilt from the sessions ('sessionmem reindex' does it now).\n", err)
		return
	}
	sx, ok := st.(storage.IndexStatser)
	if !ok {
		fmt.Fprintln(e.stdout, "Search index: ok.")
		return
	}
	stats, err := sx.IndexStats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(e.stdout, "Search index: %v\n", err)
		}
		return
	}
	state := "ok"
	if stats.Rebuilding {
		state = "ok, being rebuilt"
	}
	ratio := ""
	if sz, ok := st.(storage.Sizer); ok {
		if size, err := sz.Size(ctx); err == nil && size.Sessions > 0 {
			ratio = fmt.Sprintf(", %.2f× the session files' %s", float64(stats.Bytes)/float64(size.Sessions), byteSize(size.Sessions))
		}
	}
	fmt.Fprintf(e.stdout, "Search index: %s, %s entries of %s sessions, %s on disk%s.\n", state,
		thousands(stats.Entries), thousands(stats.Sessions), byteSize(stats.Bytes), ratio)
}

// searchError is what search says of the service's error: a bad value of a flag or of the
// query is bad usage (exit 2), said with what to do.
func searchError(c *cliFlags, e *env, err error) error {
	var me *memory.Error
	if errors.Is(err, memory.ErrInvalid) && errors.As(err, &me) {
		hint := me.Hint
		if strings.Contains(me.Msg, "RFC 3339") {
			hint = `give a date (2026-03-01) or an RFC 3339 time (2026-03-01T09:00:00Z)`
		}
		return c.usageError(e, "%s; %s", me.Msg, hint)
	}
	return sessionError("", err)
}
