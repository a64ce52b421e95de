package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
)

const searchDescription = `Search every stored session (messages, tool calls and output, and compaction summaries), best matches first. Ask in plain words, as you would ask a colleague: "how did we fix the failing login test?", "what was the error when running the migrations?", "which version of bandit did we pin?".

Words are ranked, not all required: entries holding more of your words, rarer ones and more often come first; function words (what, did, the, we) don't match by themselves, and word forms match each other (fix, fixed, fixing). A message is also ranked by the messages right before and after it, so an answer given in reply to your topic is found. To narrow: +word or "an exact phrase" must occur; -word excludes; a trailing * makes a prefix (at least 3 characters, e.g. config*). Identifiers and paths are found whole and by segment: parseConfig finds parseConfig(, login.go and auth/login.go find internal/auth/login.go. Filters: working_dir, session_id, role, file (entries whose tool calls read or modified that file; with file, query may be omitted), since/until (RFC 3339). kind "summary" marks a compaction's summary; message_id is the id you gave the message when saving it. Pass next_cursor as cursor for more; pass a session_id to session_resume to read on.

Example: {"query":"why did the retry backoff test fail on CI? -flaky","working_dir":"/home/me/proj","limit":10}`

func searchTool(svc *memory.Service, o *Options) server.ServerTool {
	in := object("", schema{
		"query": str(fmt.Sprintf(`A question or words, ranked (plain language works); +required; "exact phrase" (required); prefix* (at least %d characters before *); -excluded. At most %d bytes and %d words. Optional when file is given.`,
			memory.MinPrefixChars, memory.MaxQueryBytes, memory.MaxQueryWords)),
		"working_dir": str("Only sessions of this project directory (absolute path)."),
		"session_id":  str("Only this session."),
		"role":        schema{"type": "string", "enum": roles, "description": "Only messages of this role."},
		"file": str("Only entries whose tool calls read or modified this file: an absolute path, or one relative " +
			"to the session's working_dir (e.g. internal/auth/login.go)."),
		"since": str(`Only entries at or after this time, RFC 3339 (e.g. "2026-01-31T09:00:00Z").`),
		"until": str("Only entries at or before this time, RFC 3339."),
		"limit": schema{"type": "integer", "minimum": 1, "maximum": memory.MaxSearchLimit,
			"description": fmt.Sprintf("Matches per page, 1 to %d (default %d).", memory.MaxSearchLimit, memory.DefaultSearchLimit)},
		"cursor": str("next_cursor from the previous call with the same arguments."),
	})
	out := outObject("", schema{
		"matches": schema{"type": "array", "description": "Best matches first.", "items": outObject("", schema{
			"session_id":   str("Session containing the match."),
			"session_name": str("The session's current name (may be empty)."),
			"entry_id":     str("Entry id of the matching message, or of the compaction for a summary."),
			"message_id":   str("The id the client gave the message when saving it (absent for summaries and for messages saved without one)."),
			"kind":         schema{"type": "string", "enum": []string{memory.MatchMessage, memory.MatchSummary}, "description": "message, or summary (a compaction's summary)."},
			"role":         str("The message's role (user, assistant, tool_result, system); empty for a summary."),
			"time":         str("When the entry was written (RFC 3339)."),
			"snippet":      str("Plain text of at most 300 characters around the best match."),
			"score":        schema{"type": "number", "description": "Orders the matches of one answer (higher is better); its scale is not fixed."},
		}, "session_id", "entry_id", "kind", "role", "snippet")},
		"next_cursor": str("Pass as cursor for the next page; empty when there are no more."),
	}, "matches", "next_cursor")
	return server.ServerTool{
		Tool: newTool("session_search", searchDescription+"\n\n"+queryLimits, in, out, hints{
			title: "Search sessions", readOnly: true, destructive: false, idempotent: true, openWorld: false,
			order: transport.Order{Scope: transport.ScopeStore}}),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const name = "session_search"
			a := newArgs(ctx, name, req)
			r := memory.SearchRequest{
				Query:      a.str("query", false, ""),
				WorkingDir: a.str("working_dir", false, ""),
				SessionID:  a.str("session_id", false, idHint),
				Role:       a.enum("role", roles...),
				File:       a.str("file", false, ""),
				Since:      a.str("since", false, ""),
				Until:      a.str("until", false, ""),
				Limit:      a.integer("limit", 1),
				Cursor:     a.str("cursor", false, ""),
			}
			if r.Limit > memory.MaxSearchLimit {
				a.fail(fmt.Sprintf("argument \"limit\" must be at most %d, got %d", memory.MaxSearchLimit, r.Limit),
					"ask for fewer and page with next_cursor")
			}
			if err := a.done(); err != nil {
				return toolError(ctx, name, err), nil
			}
			// Each page must fit the result cap: a smaller page keeps the cursor exact.
			for {
				start := time.Now()
				res, err := svc.Search(ctx, r)
				noteSearch(ctx, time.Since(start))
				if err != nil {
					return toolError(ctx, name, err), nil
				}
				res.Matches = orEmpty(res.Matches)
				out, n, err := encodedResult(res, searchText(r, res))
				if err != nil {
					return toolError(ctx, name, fmt.Errorf("encode the page: %w", err)), nil
				}
				if n <= o.MaxResultTokens || len(res.Matches) <= 1 {
					return out, nil
				}
				r.Limit = max(len(res.Matches)/2, 1)
			}
		},
	}
}

func searchText(r memory.SearchRequest, res memory.SearchResult) string {
	what := fmt.Sprintf("%q", r.Query)
	if r.Query == "" {
		what = "file " + r.File
	}
	if len(res.Matches) == 0 {
		return fmt.Sprintf("No matches for %s.", what)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s for %s, best first:", plural(len(res.Matches), "match", "matches"), what)
	for _, m := range res.Matches {
		who := string(m.Role)
		if m.Kind == memory.MatchSummary {
			who = "summary"
		}
		label := m.SessionID
		if m.SessionName != "" {
			label += " " + fmt.Sprintf("%q", clipLine(m.SessionName, 40))
		}
		fmt.Fprintf(&b, "\n- %s %s %s (%s, %s): %s", label, m.EntryID, m.Time.UTC().Format("2006-01-02 15:04"), who,
			fmt.Sprintf("%.2f", m.Score), clipLine(m.Snippet, 160))
	}
	if res.NextCursor != "" {
		fmt.Fprintf(&b, "\nMore matches: call session_search with the same arguments and cursor %q.", res.NextCursor)
	}
	return b.String()
}
