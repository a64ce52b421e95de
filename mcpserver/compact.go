package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
)

const compactDescription = `Fold the older part of a session into a summary so a resume loads far fewer tokens. The messages stay stored; the newest keep_recent_tokens (default 20000) stay verbatim.

Call it when session_save returns should_compact: true, or when the user asks to compact. Who writes the summary (summarizer): "auto" (default: MCP sampling if your client supports it, else the server's configured LLM, else you), "agent" (you), "sampling", "llm" or "extractive" (no model, a mechanical digest).

Two-step flow when you write the summary: the first call answers status "needs_summary" with compaction_id, prompt (instructions), conversation (the text to summarize), previous_summary and the file lists. Write the summary as the prompt says, then call again with session_id, compaction_id and summary. If the session changed in between, the compaction_id is stale: start over.

Other answers: status "compacted" (summary, tokens_before, tokens_after, first_kept_id, summarizer) or "nothing_to_compact" (everything is within keep_recent_tokens).

The server records durable facts itself, the same whoever writes the summary: the user's instructions word for word, values the user gave, commands with their last outcome, and errors (open or resolved). They come back in facts and end the stored summary in tagged blocks after the file lists; a summary you write should not repeat them. The whole stored summary stays under 12,000 tokens.

Example: {"session_id":"s-abc","summarizer":"agent"} then {"session_id":"s-abc","compaction_id":"c-9f2","summary":"## Goal\n…"}`

func compactTool(svc *memory.Service, o *Options) server.ServerTool {
	in := object("", schema{
		"session_id":         str("The session to compact."),
		"summary":            str("Your summary (second step of the agent flow; send with compaction_id)."),
		"compaction_id":      str("The compaction_id from the needs_summary answer this summary is for."),
		"keep_recent_tokens": integer("How many tokens of the newest context to keep verbatim (default 20000).", 1),
		"instructions":       str("Extra focus for the summary, e.g. \"keep the API decisions\"."),
		"summarizer": schema{"type": "string", "enum": []string{"auto", "agent", "sampling", "llm", "extractive"},
			"description": "Who writes the summary; default auto."},
	}, "session_id")
	files := func(desc string) schema { return strList(desc) }
	out := outObject("", schema{
		"status": schema{"type": "string", "enum": []string{memory.StatusNeedsSummary, memory.StatusCompacted, memory.StatusNothingToCompact},
			"description": "needs_summary: write the summary and call again; compacted: done; nothing_to_compact: nothing old enough."},
		"compaction_id":    str("needs_summary: send it back with your summary."),
		"prompt":           str("needs_summary: how to write the summary."),
		"conversation":     str("needs_summary: the conversation text to summarize."),
		"previous_summary": str("needs_summary: the previous summary to update (may be empty)."),
		"summary":          str("compacted: the stored summary, with <read-files>/<modified-files> blocks."),
		"tokens_before":    integer("compacted: context tokens before.", 0),
		"tokens_after":     integer("compacted: context tokens after.", 0),
		"first_kept_id":    str("compacted: entry id of the first message kept verbatim."),
		"summarizer":       str("compacted: who wrote the summary (agent, sampling, llm, extractive)."),
		"read_files":       files("Cumulative files read (not modified)."),
		"modified_files":   files("Cumulative files modified."),
		"context_tokens":   integer("nothing_to_compact: the current context estimate.", 0),
		"facts":            factsSchema(),
	}, "status")
	return server.ServerTool{
		Tool: newTool("session_compact", compactDescription, in, out, hints{
			// Open world: the llm and sampling summarizers send the conversation to a model.
			title: "Compact a session", readOnly: false, destructive: false, idempotent: false, openWorld: true,
			order: transport.Order{Write: true, Scope: transport.ScopeSession}}),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const name = "session_compact"
			a := newArgs(ctx, name, req)
			r := memory.CompactRequest{
				SessionID:        a.str("session_id", true, idHint),
				Summary:          a.str("summary", false, ""),
				CompactionID:     a.str("compaction_id", false, ""),
				KeepRecentTokens: a.integer("keep_recent_tokens", 1),
				Instructions:     a.str("instructions", false, ""),
				Summarizer:       a.enum("summarizer", "auto", "agent", "sampling", "llm", "extractive"),
			}
			if err := a.done(); err != nil {
				return toolError(ctx, name, err), nil
			}
			sp := newSampling(ctx, req, o)
			r.Sampler = sp.summarizer()
			r.Progress = progressFunc(ctx, req)
			res, err := svc.Compact(ctx, r)
			// A 2026-07-28 client must sample first. Unless the compaction completed anyway
			// (memory fell back to a summarizer that wrote it), ask and let the client retry.
			if err != nil || res.Status != memory.StatusCompacted {
				if ask := sp.inputRequest(); ask != nil {
					return ask, nil
				}
			}
			if err != nil {
				return toolError(ctx, name, err), nil
			}
			return compactResult(res, r.SessionID, o.MaxResultTokens), nil
		},
	}
}

func compactResult(res memory.CompactResult, id string, capTokens int) *mcp.CallToolResult {
	var text string
	switch res.Status {
	case memory.StatusNeedsSummary:
		res.ReadFiles, res.ModifiedFiles = orEmpty(res.ReadFiles), orEmpty(res.ModifiedFiles)
		text = fmt.Sprintf("Write a summary of \"conversation\" following \"prompt\" (update \"previous_summary\" if set), "+
			"then call session_compact with session_id %q, compaction_id %q and your summary.", id, res.CompactionID)
	case memory.StatusCompacted:
		res.ReadFiles, res.ModifiedFiles = orEmpty(res.ReadFiles), orEmpty(res.ModifiedFiles)
		text = fmt.Sprintf("Compacted session %s with the %s summarizer: context %d → %d tokens; messages from %s on are kept verbatim.",
			id, res.Summarizer, res.TokensBefore, res.TokensAfter, res.FirstKeptID)
	default:
		text = fmt.Sprintf("Nothing to compact in session %s: its context (≈ %d tokens) is all within keep_recent_tokens.",
			id, res.ContextTokens)
	}
	if res.Status != memory.StatusNeedsSummary {
		body := func() any { return res }
		if res.Status == memory.StatusCompacted {
			// Every field of the contract's answer, the file lists too when they are empty.
			body = func() any {
				return compacted{Status: res.Status, Summary: res.Summary, TokensBefore: res.TokensBefore,
					TokensAfter: res.TokensAfter, FirstKeptID: res.FirstKeptID, ReadFiles: res.ReadFiles,
					ModifiedFiles: res.ModifiedFiles, Summarizer: res.Summarizer, Facts: res.Facts}
			}
		}
		out := result(body(), text)
		if res.Facts != nil && tokens(out) > capTokens {
			// The summary ends with the same facts in tagged blocks; the structured copy is
			// what can go when the answer would pass the cap.
			res.Facts = nil
			out = result(body(), text+" The facts are in the summary's tagged blocks (left out of facts to fit the response limit).")
		}
		return out
	}
	// needs_summary carries every field of the contract, previous_summary included when
	// empty, so it has its own shape.
	ns := needsSummary{Status: res.Status, CompactionID: res.CompactionID, Prompt: res.Prompt,
		Conversation: res.Conversation, PreviousSummary: res.PreviousSummary,
		ReadFiles: res.ReadFiles, ModifiedFiles: res.ModifiedFiles, Facts: res.Facts}
	out := result(ns, text)
	// The conversation to summarize is the one field that can grow without bound; keep the
	// answer under the cap by dropping its oldest part, saying so where the model reads it.
	orig := ns.Conversation
	keep := len(orig)
	for over := tokens(out) - capTokens; over > 0 && keep > 0; over = tokens(out) - capTokens {
		keep = max(keep-over*4-256, 0)
		start := len(orig) - keep
		if i := strings.IndexByte(orig[start:], '\n'); i >= 0 && i < 2000 {
			start += i + 1
		}
		for start < len(orig) && !utf8.RuneStart(orig[start]) {
			start++
		}
		keep = len(orig) - start
		ns.Conversation = fmt.Sprintf("[… %d older characters left out to fit the response limit …]\n%s", start, orig[start:])
		out = result(ns, text)
	}
	return out
}

// compacted is session_compact's answer once the compaction is stored.
type compacted struct {
	Status        string             `json:"status"`
	Summary       string             `json:"summary"`
	TokensBefore  int                `json:"tokens_before"`
	TokensAfter   int                `json:"tokens_after"`
	FirstKeptID   string             `json:"first_kept_id"`
	ReadFiles     []string           `json:"read_files"`
	ModifiedFiles []string           `json:"modified_files"`
	Summarizer    string             `json:"summarizer"`
	Facts         *compaction.Ledger `json:"facts,omitempty"`
}

// needsSummary is session_compact's answer when the caller must write the summary.
type needsSummary struct {
	Status          string   `json:"status"`
	CompactionID    string   `json:"compaction_id"`
	Prompt          string   `json:"prompt"`
	Conversation    string   `json:"conversation"`
	PreviousSummary string   `json:"previous_summary"`
	ReadFiles       []string `json:"read_files"`
	ModifiedFiles   []string `json:"modified_files"`
	// Facts is the ledger the compaction will store (the prompt refers to it).
	Facts *compaction.Ledger `json:"facts,omitempty"`
}

// factsSchema describes compaction.Ledger: the durable facts the server records and appends
// to every stored summary, whoever wrote the prose.
func factsSchema() schema {
	note := func(desc string) schema {
		return schema{"type": "array", "description": desc, "items": outObject("", schema{
			"text":       str("The user's words."),
			"superseded": boolean("The user later restated this value."),
		}, "text")}
	}
	count := func(kind string) schema {
		return integer("Facts of this kind dropped to stay within the budget: "+kind+".", 0)
	}
	return outObject("needs_summary and compacted: the durable-facts ledger, cumulative over the session's compactions. "+
		"It is computed from the messages, not written by a model, and ends the stored summary in tagged blocks "+
		"(<user-constraints>, <user-values>, <commands-run>, <errors-seen>, <facts-dropped>) after the file lists.", schema{
		"constraints": note("The user's instructions and preferences, word for word, oldest first."),
		"values":      note("Lines in which the user stated numbers, colours, versions, sizes or mappings."),
		"commands": schema{"type": "array", "description": "Commands run (exploration left out) and the outcome of their last run.",
			"items": outObject("", schema{
				"command": str("The command, shortened (a cd into the working directory, output plumbing and commit messages left out)."),
				"status":  schema{"type": "string", "enum": []string{compaction.StatusOK, compaction.StatusFailed}, "description": "Outcome of the last run."},
				"runs":    integer("How many times it ran.", 1),
			}, "command", "status")},
		"errors": schema{"type": "array", "description": "Failures by their identifying line; open until a later run resolved them.",
			"items": outObject("", schema{
				"error":  str("The line that identifies the failure."),
				"status": schema{"type": "string", "enum": []string{compaction.StatusOpen, compaction.StatusResolved}},
				"source": str("What failed: a command, a tool and its file, or \"user\" for an error the user pasted."),
			}, "error", "status")},
		"dropped": outObject("How many facts of each kind were dropped to keep the ledger within its budget (resolved and superseded first).", schema{
			"constraints": count("constraints"), "values": count("values"), "commands": count("commands"), "errors": count("errors"),
		}),
	})
}

// resumeFactsSchema is factsSchema as session_resume returns it.
func resumeFactsSchema() schema {
	s := factsSchema()
	s["description"] = "First page only, when the session was compacted: the latest compaction's durable-facts ledger, " +
		"the same facts session_compact returned (and the summary's tagged blocks hold), structured. Absent otherwise."
	return s
}

// progressFunc forwards compaction progress as notifications/progress when the client asked
// for it with a progress token, and nil otherwise.
func progressFunc(ctx context.Context, req mcp.CallToolRequest) func(done, total float64, message string) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	token := req.Params.Meta.ProgressToken
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	return func(done, total float64, message string) {
		params := map[string]any{"progressToken": token, "progress": done}
		if total > 0 {
			params["total"] = total
		}
		if message != "" {
			params["message"] = message
		}
		// Progress is advisory: a lost notification must not fail the compaction.
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", params)
	}
}
