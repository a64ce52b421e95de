package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/memory"
)

const compactDescription = `Fold the older part of a session into a summary so a resume loads far fewer tokens. The messages stay stored; the newest keep_recent_tokens (default 20000) stay verbatim.

Call it when session_save returns should_compact: true, or when the user asks to compact. Who writes the summary (summarizer): "auto" (default: MCP sampling if your client supports it, else the server's configured LLM, else you), "agent" (you), "sampling", "llm" or "extractive" (no model, a mechanical digest).

Two-step flow when you write the summary: the first call answers status "needs_summary" with compaction_id, prompt (instructions), conversation (the text to summarize), previous_summary and the file lists. Write the summary as the prompt says, then call again with session_id, compaction_id and summary. If the session changed in between, the compaction_id is stale: start over.

Other answers: status "compacted" (summary, tokens_before, tokens_after, first_kept_id, summarizer) or "nothing_to_compact" (everything is within keep_recent_tokens).

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
	}, "status")
	return server.ServerTool{
		Tool: newTool("session_compact", compactDescription, in, out, hints{
			// Open world: the llm and sampling summarizers send the conversation to a model.
			title: "Compact a session", readOnly: false, destructive: false, idempotent: false, openWorld: true}),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const name = "session_compact"
			a := newArgs(name, req)
			r := memory.CompactRequest{
				SessionID:        a.str("session_id", true, idHint),
				Summary:          a.str("summary", false, ""),
				CompactionID:     a.str("compaction_id", false, ""),
				KeepRecentTokens: a.integer("keep_recent_tokens", 1),
				Instructions:     a.str("instructions", false, ""),
				Summarizer:       a.enum("summarizer", "auto", "agent", "sampling", "llm", "extractive"),
			}
			if err := a.done(); err != nil {
				return toolError(name, err), nil
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
				return toolError(name, err), nil
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
		return result(res, text)
	}
	// needs_summary carries every field of the contract, previous_summary included when
	// empty, so it has its own shape.
	ns := needsSummary{Status: res.Status, CompactionID: res.CompactionID, Prompt: res.Prompt,
		Conversation: res.Conversation, PreviousSummary: res.PreviousSummary,
		ReadFiles: res.ReadFiles, ModifiedFiles: res.ModifiedFiles}
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

// needsSummary is session_compact's answer when the caller must write the summary.
type needsSummary struct {
	Status          string   `json:"status"`
	CompactionID    string   `json:"compaction_id"`
	Prompt          string   `json:"prompt"`
	Conversation    string   `json:"conversation"`
	PreviousSummary string   `json:"previous_summary"`
	ReadFiles       []string `json:"read_files"`
	ModifiedFiles   []string `json:"modified_files"`
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
