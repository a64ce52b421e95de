package mcpserver

import (
	"encoding/json"
	"fmt"

	"github.com/sessionmem/sessionmem/message"
)

// Schemas are written by hand rather than derived from Go structs: a message's content is a
// string OR a block list, struct-derived schemas mark every slice nullable and every
// non-omitempty field required, and output schemas must stay lenient because the TypeScript SDK
// validates structuredContent against them.

type schema = map[string]any

func str(desc string) schema { return schema{"type": "string", "description": desc} }

func integer(desc string, minimum int) schema {
	return schema{"type": "integer", "minimum": minimum, "description": desc}
}

func boolean(desc string) schema { return schema{"type": "boolean", "description": desc} }

func strList(desc string) schema {
	return schema{"type": "array", "items": schema{"type": "string"}, "description": desc}
}

// object is an input object: unknown properties are refused so typos surface.
func object(desc string, props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props, "additionalProperties": false}
	if desc != "" {
		s["description"] = desc
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// outObject is an output object: additional properties are allowed so a newer server never
// breaks an older client's validator.
func outObject(desc string, props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props}
	if desc != "" {
		s["description"] = desc
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema does not marshal: %v", err))
	}
	return b
}

var roles = []string{"system", "user", "assistant", "tool_result"}

var blockTypes = []string{"text", "thinking", "tool_call", "tool_result", "image"}

// blockSchema describes one content block. It is one object with a type enum rather than a
// oneOf per type: several clients' function-calling layers handle nested oneOf poorly.
func blockSchema(out bool) schema {
	nested := schema{
		"description": "The tool's output: a string, or a list of text/image blocks of the same shape.",
		"anyOf": []any{
			schema{"type": "string"},
			schema{"type": "array", "items": schema{"type": "object"}},
		},
	}
	if out {
		nested = schema{"type": "array", "items": schema{"type": "object"},
			"description": "The tool's output as text/image blocks."}
	}
	props := schema{
		"type": schema{"type": "string", "enum": blockTypes,
			"description": "Block type; decides which other fields apply."},
		"text":                  str("type text: the text."),
		"thinking":              str("type thinking: the model's reasoning text."),
		"id":                    str("type tool_call: the call id that the matching tool_result names."),
		"name":                  str("type tool_call: the tool name, e.g. \"read\" or \"Edit\"."),
		"arguments":             schema{"type": "object", "description": "type tool_call: the call's arguments as a JSON object, e.g. {\"path\":\"main.go\"}."},
		message.FieldToolCallID: str("type tool_result: the id of the tool_call this answers."),
		"content":               nested,
		"is_error":              boolean("type tool_result: true when the tool failed."),
		message.FieldMediaType:  str("type image: MIME type, e.g. image/png."),
		"data":                  str("type image: base64-encoded bytes."),
	}
	if out {
		return outObject("", props, "type")
	}
	return object("", props, "type")
}

func usageSchema(out bool) schema {
	props := schema{
		"input_tokens":  integer("Input (prompt) tokens the provider reported for this turn.", 0),
		"output_tokens": integer("Output tokens the provider reported for this turn.", 0),
	}
	desc := "Token usage the provider reported for an assistant turn; it calibrates context_tokens."
	if out {
		return outObject(desc, props)
	}
	return object(desc, props)
}

// messageInSchema is a message as clients send it.
func messageInSchema() schema {
	return object("One conversation message.", schema{
		"id": str("Your own key for this message, unique within the session. Saving a message whose id " +
			"is already stored stores nothing new, so retries are safe. Optional but recommended."),
		"role": schema{"type": "string", "enum": roles,
			"description": "Who produced the message; tool outputs use tool_result."},
		"content": schema{
			"description": "A string (shorthand for one text block) or a list of blocks, e.g. " +
				`[{"type":"text","text":"Reading it."},{"type":"tool_call","id":"c1","name":"read","arguments":{"path":"main.go"}}].`,
			"anyOf": []any{
				schema{"type": "string"},
				schema{"type": "array", "items": blockSchema(false)},
			},
		},
		"usage": usageSchema(false),
		"pinned": boolean("Standing context to keep verbatim (the task statement, the project's instructions, AGENTS.md or CLAUDE.md content): " +
			"no compaction folds it into a summary, and session_resume returns it in pinned once the kept part starts after it. " +
			"All pinned messages of a session together may hold at most 8000 tokens (JSON characters / 4)."),
	}, "role", "content")
}

// messageOutSchema is a message as tools return it: content always in block form.
func messageOutSchema() schema {
	return outObject("One stored message.", schema{
		"entry_id": str("Server-assigned id of this entry; use it as from_id or parent_id."),
		"id":       str("The client's own id, when it gave one."),
		"role":     schema{"type": "string", "enum": roles},
		"content":  schema{"type": "array", "items": blockSchema(true), "description": "Content blocks."},
		"usage":    usageSchema(true),
		"pinned":   boolean("True for a pinned message (standing context no compaction folds into a summary); absent otherwise."),
	}, "role", "content")
}

func sessionOutSchema() schema {
	return outObject("One session's metadata.", schema{
		"session_id":        str("Session id."),
		"name":              str("Session name (may be empty)."),
		"working_dir":       str("The project directory the session belongs to."),
		"model":             str("Model last used (may be empty)."),
		"provider":          str("Provider last used (may be absent)."),
		"parent_session_id": str("The session this one was forked from (may be absent)."),
		"created_at":        str("Creation time, RFC 3339."),
		"updated_at":        str("Time of the last change, RFC 3339."),
		"message_count":     integer("Messages stored on the current path.", 0),
		"compactions":       integer("How many times the session was compacted.", 0),
		"context_tokens":    integer("Estimated tokens a resume would load.", 0),
		"preview":           str("The first user prompt, one line, at most 200 bytes."),
	}, "session_id", "working_dir", "created_at", "updated_at", "message_count")
}
