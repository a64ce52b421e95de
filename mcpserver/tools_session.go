package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/message"
)

const idHint = "call session_list to see session ids"

const saveDescription = `Append messages to a session, creating it when session_id is omitted.

Call it after every turn with the messages that are new since the last save (user prompt, assistant replies with their tool calls, tool results). Give each message your own stable "id": a message whose id is already stored is skipped, so retrying a save is safe (without ids a retry stores duplicates).

Returns session_id (keep it for later calls), saved (new messages stored), message_count, leaf_id, context_tokens and should_compact (true when context_window was given and the context is close to it: then call session_compact).

Example: {"working_dir":"/home/me/proj","name":"fix login bug","context_window":200000,"messages":[{"id":"u1","role":"user","content":"Why does login fail?"},{"id":"a1","role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_call","id":"c1","name":"read","arguments":{"path":"auth.go"}}]},{"id":"t1","role":"tool_result","content":[{"type":"tool_result","` + message.FieldToolCallID + `":"c1","content":"package auth…"}]}]}`

func saveTool(svc *memory.Service) server.ServerTool {
	in := object("", schema{
		"session_id": str("The session to append to. Omit to create a new session (then working_dir is required)."),
		"working_dir": str("Absolute path of the project directory. Required when creating; recorded as given " +
			"(it need not exist here). With session_id it is not applied: a session keeps its working_dir."),
		"name":      str("A short human name for the session (sets or renames it)."),
		"model":     str("Model that produced the assistant messages, e.g. claude-sonnet-4-5."),
		"provider":  str("Provider of that model, e.g. anthropic."),
		"parent_id": str("Entry id to branch from (default: the current leaf). Use an entry_id returned earlier."),
		"messages": schema{"type": "array", "minItems": 1, "items": messageInSchema(),
			"description": "The new messages, oldest first (at least one)."},
		"context_window": integer("Your model's context window in tokens; enables should_compact.", 1),
	}, "messages")
	out := outObject("", schema{
		"session_id":     str("The session written to (new when you omitted session_id)."),
		"saved":          integer("Messages stored by this call (replayed ids are not counted).", 0),
		"message_count":  integer("Messages on the session's current path.", 0),
		"leaf_id":        str("Entry id of the newest message (the current leaf)."),
		"context_tokens": integer("Estimated tokens a resume would load now.", 0),
		"should_compact": boolean("True when context_tokens is near context_window: call session_compact."),
		"working_dir": str("The session's working directory, the one it was created with (a working_dir given " +
			"with session_id does not move the session)."),
	}, "session_id", "saved", "message_count", "leaf_id", "context_tokens", "should_compact", "working_dir")
	return server.ServerTool{
		Tool: newTool("session_save", saveDescription+"\n\n"+saveLimits, in, out, hints{
			title: "Save session messages", readOnly: false, destructive: false, idempotent: false, openWorld: false,
			order: transport.Order{Write: true, Scope: transport.ScopeSession, Creates: true}}),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r, bad := saveRequest(ctx, req)
			if bad != nil {
				return bad, nil
			}
			res, err := svc.Save(ctx, r)
			if err != nil {
				return toolError(ctx, "session_save", err), nil
			}
			noteSaved(ctx, res.Saved)
			return saveAnswer(res, len(r.Messages)), nil
		},
	}
}

// saveRequest reads a session_save call's arguments; a bad one is answered with the returned
// tool error. (Apart from saveTool so that a benchmark can run all of a save but the store.)
func saveRequest(ctx context.Context, req mcp.CallToolRequest) (memory.SaveRequest, *mcp.CallToolResult) {
	const name = "session_save"
	a := newArgs(ctx, name, req)
	r := memory.SaveRequest{
		SessionID:     a.str("session_id", false, idHint),
		WorkingDir:    a.str("working_dir", false, ""),
		Name:          a.str("name", false, ""),
		Model:         a.str("model", false, ""),
		Provider:      a.str("provider", false, ""),
		ParentID:      a.str("parent_id", false, ""),
		ContextWindow: a.integer("context_window", 1),
	}
	items, sent := a.get("messages")
	if err := a.done(); err != nil {
		return r, toolError(ctx, name, err)
	}
	if r.SessionID == "" && strings.TrimSpace(r.WorkingDir) == "" {
		return r, toolError(ctx, name, &argError{"working_dir is required when creating a session (no session_id given)",
			"send the project's absolute path as working_dir, or pass session_id to append to an existing session"})
	}
	msgs, err := decodeMessages(items, sent)
	if err != nil {
		return r, toolError(ctx, name, err)
	}
	noteSaveBytes(ctx, len(items.Raw))
	r.Messages = msgs
	return r, nil
}

// saveAnswer is session_save's result for res, the outcome of saving sent messages.
func saveAnswer(res memory.SaveResult, sent int) *mcp.CallToolResult {
	// Concatenated rather than formatted (fmt.Sprintf): this is on every save's path.
	text := "Saved " + plural(res.Saved, "new message", "new messages") + " to session " + res.SessionID +
		" (" + plural(res.MessageCount, "message", "messages") + " on the path, leaf " + res.LeafID +
		", context ≈ " + strconv.Itoa(res.ContextTokens) + " tokens)."
	if res.Saved < sent {
		text += " " + strconv.Itoa(sent-res.Saved) + " already stored (same id), skipped."
	}
	if res.OtherWorkingDir {
		// Said rather than refused: a team member continuing a session from another checkout
		// (another path) must still be able to save to it.
		text += " working_dir was not applied: the session stays in " + res.WorkingDir +
			" (a session keeps the working_dir it was created with; omit working_dir when passing session_id)."
	}
	if res.ShouldCompact {
		text += " The context is close to the window: call session_compact now."
	}
	return result(res, text)
}

const messageHint = `each message needs "role" (system, user, assistant or tool_result) and "content" ` +
	`(a string or a list of blocks), e.g. {"role":"user","content":"hello"}`

// decodeMessages decodes the messages argument (items; sent false when it is absent or null)
// one by one so an error names the bad message; memory.DecodeInputMessage checks each
// message's field names and decodes it in one pass. items is valid JSON: newArgs read it
// from arguments that were checked whole.
func decodeMessages(items gjson.Result, sent bool) ([]memory.Message, error) {
	if !sent {
		return nil, &argError{`missing required argument "messages"`, "send at least one message; " + messageHint}
	}
	if !items.IsArray() {
		return nil, &argError{`argument "messages" must be an array of messages`, messageHint}
	}
	var msgs []memory.Message
	var err error
	items.ForEach(func(_, item gjson.Result) bool {
		i := len(msgs)
		if !item.IsObject() {
			err = &argError{fmt.Sprintf("messages[%d] must be an object", i), messageHint + "; nothing was saved"}
			return false
		}
		m, derr := memory.DecodeInputMessage([]byte(item.Raw))
		if derr != nil {
			hint := messageHint + "; nothing was saved"
			if ie, ok := derr.(*memory.InputError); ok && ie.Hint != "" {
				hint = ie.Hint
			}
			err = &argError{fmt.Sprintf("messages[%d]%s", i, derr.Error()), hint}
			return false
		}
		msgs = append(msgs, m)
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, &argError{`argument "messages" is empty`, "send at least one message; nothing was saved"}
	}
	return msgs, nil
}

const resumeDescription = `Load what you need to continue a session: the latest compaction summary, the files read and modified so far, the durable facts the server recorded (facts), the pinned messages the summary replaced (pinned: standing context, verbatim), and the messages after the summary (oldest first, content in block form).

Call it at the start of a conversation that continues earlier work. Omit session_id to get the newest session of working_dir. The answer never exceeds max_tokens (default 20000); when next_cursor is not empty, call again with the same session_id and that cursor for the rest. prune: true replaces old tool outputs with a one-line placeholder to save tokens.

Example: {"working_dir":"/home/me/proj"} or {"session_id":"s-abc","cursor":"<next_cursor>"}`

func resumeTool(svc *memory.Service) server.ServerTool {
	in := object("", schema{
		"session_id":  str("The session to resume. Omit to take the newest session of working_dir."),
		"working_dir": str("Project directory; used to pick the newest session when session_id is omitted."),
		"max_tokens":  integer("Upper bound on this response in estimated tokens (JSON characters / 4). Default 20000, at least 1000.", 1000),
		"cursor":      str("next_cursor from the previous call, to continue paging."),
		"prune":       boolean("Replace tool-result content older than the recent window with a placeholder."),
	})
	out := outObject("", schema{
		"session_id":     str("The session resumed."),
		"working_dir":    str("Its project directory."),
		"summary":        str("Latest compaction summary with its <read-files>/<modified-files> blocks; empty if never compacted."),
		"read_files":     strList("Files read (and not modified), relative to working_dir when inside it."),
		"modified_files": strList("Files written or edited."),
		"facts":          resumeFactsSchema(),
		"pinned": schema{"type": "array", "items": messageOutSchema(), "description": "First page only: the pinned messages that lie before " +
			"the latest compaction's first kept message, oldest first, verbatim; read them before the messages. " +
			"Pinned messages from that point on are among messages. Empty when there are none and on later pages."},
		"messages":       schema{"type": "array", "items": messageOutSchema(), "description": "Messages after the summary, oldest first."},
		"context_tokens": integer("Estimated tokens of the whole resumed context (pinned messages included).", 0),
		"next_cursor":    str("Pass as cursor to get the next page; empty when complete."),
	}, "session_id", "summary", "messages", "next_cursor")
	return server.ServerTool{
		Tool: newTool("session_resume", resumeDescription, in, out, hints{
			title: "Resume a session", readOnly: true, destructive: false, idempotent: true, openWorld: false,
			order: transport.Order{Scope: transport.ScopeSession}}),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const name = "session_resume"
			a := newArgs(ctx, name, req)
			r := memory.ResumeRequest{
				SessionID:  a.str("session_id", false, idHint),
				WorkingDir: a.str("working_dir", false, ""),
				MaxTokens:  a.integer("max_tokens", 1000),
				Cursor:     a.str("cursor", false, ""),
				Prune:      a.boolean("prune"),
				Raw:        true,
			}
			if err := a.done(); err != nil {
				return toolError(ctx, name, err), nil
			}
			// memory sizes the page so that it and what resumeResult adds around it
			// (memory.ResumeFrameChars) stay within max_tokens.
			res, err := svc.Resume(ctx, r)
			if err != nil {
				return toolError(ctx, name, err), nil
			}
			if res.Ahead != nil {
				transport.AfterAnswer(ctx, res.Ahead)
			}
			return resumeResult(ctx, res), nil
		},
	}
}

// A resume page goes out with the messages as memory read them from the store
// (memory.ResumeRequest.Raw), the bytes a client saved plus entry_id: they are neither decoded
// nor encoded again on their way out. The structured content is built once as JSON
// (transport.RawStructured: the page's other fields, then "messages"), and the stdio transport copies it
// into the answer as it is (encodeMessage).

// resumeResult shapes a resume page: structured content plus a short text (which repeats the
// cursor for clients that read only text, but not working_dir, which can be long: memory sized
// the page with an allowance for the text's fixed part and the cursor only).
func resumeResult(ctx context.Context, res memory.ResumeResult) *mcp.CallToolResult {
	res.ReadFiles, res.ModifiedFiles = orEmpty(res.ReadFiles), orEmpty(res.ModifiedFiles)
	msgs := orEmpty(res.RawMessages)
	if res.RawMessages == nil {
		// Decoded messages (a caller that did not ask for raw ones).
		for _, m := range normalizeMessages(res.Messages) {
			b, err := json.Marshal(m)
			if err != nil {
				continue
			}
			msgs = append(msgs, b)
		}
	}
	summary := "no summary"
	if res.Summary != "" {
		summary = fmt.Sprintf("summary of %d characters", len(res.Summary))
	}
	res.Pinned = normalizeMessages(res.Pinned)
	pinned := ""
	if len(res.Pinned) > 0 {
		pinned = ", " + plural(len(res.Pinned), "pinned message", "pinned messages") + " (standing context, before the messages)"
	}
	text := fmt.Sprintf("Session %s: %s%s, %s, %d files read, %d modified, context ≈ %d tokens.",
		res.SessionID, summary, pinned, plural(len(msgs), "message", "messages"),
		len(res.ReadFiles), len(res.ModifiedFiles), res.ContextTokens)
	if res.NextCursor != "" {
		text += fmt.Sprintf(" More messages follow: call session_resume with session_id %q and cursor %q.", res.SessionID, res.NextCursor)
	}
	page := res.RawPage
	res.Messages, res.RawMessages, res.RawPage = nil, nil, nil
	var raw []byte
	var err error
	if page != nil {
		// The messages first (memory built them in place), then the page's other fields.
		raw, err = transport.EndRawPage(page, resumeHead{ResumeResult: res})
	} else {
		raw, err = transport.RawStructured(resumeHead{ResumeResult: res}, "messages", msgs)
	}
	if err != nil {
		return toolError(ctx, "session_resume", fmt.Errorf("encode the page: %w", err))
	}
	out := result(nil, text)
	out.RawStructuredContent = raw
	return out
}

// resumeHead is a resume page without its messages (transport.RawStructured appends them): the
// embedded result's own messages field is shadowed by one that is never written.
type resumeHead struct {
	memory.ResumeResult
	Messages *struct{} `json:"messages,omitempty"`
}

const listDescription = `List stored sessions, newest first (by last update).

Use it to find a session id before resume, fork or delete, or to see what was worked on in a project. Filter by working_dir (exact project directory) and query (case-insensitive substring of name or first prompt). Returns up to limit sessions (default 20, at most 100) and next_cursor for the next page ("" when there are no more).

Example: {"working_dir":"/home/me/proj","query":"login","limit":5}`

func listTool(svc *memory.Service, o *Options) server.ServerTool {
	in := object("", schema{
		"working_dir": str("Only sessions of this project directory."),
		"query":       str("Case-insensitive substring to match in the session name or first prompt."),
		"limit":       schema{"type": "integer", "minimum": 1, "maximum": maxListLimit, "description": "Sessions per page (default 20, larger values are capped at 100)."},
		"cursor":      str("next_cursor from the previous call."),
	})
	out := outObject("", schema{
		"sessions":    schema{"type": "array", "items": sessionOutSchema(), "description": "Newest first."},
		"next_cursor": str("Pass as cursor for the next page; empty when there are no more."),
	}, "sessions", "next_cursor")
	return server.ServerTool{
		Tool: newTool("session_list", listDescription+"\n\n"+queryLimits, in, out, hints{
			title: "List sessions", readOnly: true, destructive: false, idempotent: true, openWorld: false,
			order: transport.Order{Scope: transport.ScopeStore}}),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const name = "session_list"
			a := newArgs(ctx, name, req)
			r := memory.ListRequest{
				WorkingDir: a.str("working_dir", false, ""),
				Query:      a.str("query", false, ""),
				Limit:      min(a.integer("limit", 1), maxListLimit),
				Cursor:     a.str("cursor", false, ""),
			}
			if err := a.done(); err != nil {
				return toolError(ctx, name, err), nil
			}
			if r.Limit == 0 {
				r.Limit = 20
			}
			// Each page must fit the result cap: a smaller page keeps memory's cursor exact.
			for {
				res, err := svc.List(ctx, r)
				if err != nil {
					return toolError(ctx, name, err), nil
				}
				res.Sessions = orEmpty(res.Sessions)
				out, n, err := encodedResult(res, listText(res))
				if err != nil {
					return toolError(ctx, name, fmt.Errorf("encode the page: %w", err)), nil
				}
				if n <= o.MaxResultTokens || r.Limit <= 1 {
					return out, nil
				}
				r.Limit /= 2
			}
		},
	}
}

// maxListLimit bounds a page of session_list and session_search (each item is small, so 100
// stays far below the result cap).
const maxListLimit = 100

func listText(res memory.ListResult) string {
	if len(res.Sessions) == 0 {
		return "No sessions found."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, newest first:", plural(len(res.Sessions), "session", "sessions"))
	for _, s := range res.Sessions {
		label := s.Name
		if label == "" {
			label = s.Preview
		}
		fmt.Fprintf(&b, "\n- %s  %s  %s  %d msgs  %q", s.ID, s.UpdatedAt.UTC().Format("2006-01-02 15:04"),
			s.WorkingDir, s.MessageCount, clipLine(label, 80))
	}
	if res.NextCursor != "" {
		fmt.Fprintf(&b, "\nMore sessions: call session_list with cursor %q.", res.NextCursor)
	}
	return b.String()
}

const forkDescription = `Copy a session's conversation up to one entry into a new session, leaving the original untouched.

Use it to try another approach from an earlier point, or to continue a finished session under a new name. from_id is an entry_id (from session_resume messages or a save's leaf_id); omit it to fork at the newest message. Returns the new session_id, parent_session_id and message_count.

Example: {"session_id":"s-abc","from_id":"e17","name":"try the cache approach"}`

func forkTool(svc *memory.Service) server.ServerTool {
	in := object("", schema{
		"session_id": str("The session to fork."),
		"from_id":    str("Entry id to fork at (inclusive); default the current leaf."),
		"name":       str("Name for the new session."),
	}, "session_id")
	out := outObject("", schema{
		"session_id":        str("The new session."),
		"parent_session_id": str("The session it was forked from."),
		"message_count":     integer("Messages copied into the new session.", 0),
	}, "session_id", "parent_session_id", "message_count")
	return server.ServerTool{
		Tool: newTool("session_fork", forkDescription+"\n\n"+forkLimits, in, out, hints{
			title: "Fork a session", readOnly: false, destructive: false, idempotent: false, openWorld: false,
			order: transport.Order{Write: true, Scope: transport.ScopeSession}}),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const name = "session_fork"
			a := newArgs(ctx, name, req)
			r := memory.ForkRequest{
				SessionID: a.str("session_id", true, idHint),
				FromID:    a.str("from_id", false, ""),
				Name:      a.str("name", false, ""),
			}
			if err := a.done(); err != nil {
				return toolError(ctx, name, err), nil
			}
			res, err := svc.Fork(ctx, r)
			if err != nil {
				return toolError(ctx, name, err), nil
			}
			return result(res, fmt.Sprintf("Forked session %s into new session %s (%s).",
				res.ParentSessionID, res.SessionID, plural(res.MessageCount, "message", "messages"))), nil
		},
	}
}

const deleteDescription = `Delete a session and all its messages permanently. This cannot be undone.

Only call it when the user asks to remove a session. An unknown session_id is an error (so a second delete of the same id reports it). Returns deleted: true.

Example: {"session_id":"s-abc"}`

func deleteTool(svc *memory.Service) server.ServerTool {
	in := object("", schema{
		"session_id": str("The session to delete."),
	}, "session_id")
	out := outObject("", schema{
		"deleted": boolean("True when the session was removed."),
	}, "deleted")
	return server.ServerTool{
		Tool: newTool("session_delete", deleteDescription, in, out, hints{
			title: "Delete a session", readOnly: false, destructive: true, idempotent: true, openWorld: false,
			order: transport.Order{Write: true, Scope: transport.ScopeSession}}),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const name = "session_delete"
			a := newArgs(ctx, name, req)
			id := a.str("session_id", true, idHint)
			if err := a.done(); err != nil {
				return toolError(ctx, name, err), nil
			}
			res, err := svc.Delete(ctx, id)
			if err != nil {
				return toolError(ctx, name, err), nil
			}
			text := fmt.Sprintf("Deleted session %s.", id)
			if !res.Deleted {
				text = fmt.Sprintf("Session %s was not deleted.", id)
			}
			return result(res, text), nil
		},
	}
}
