package message

import (
	"bytes"
	"encoding/json"
)

// Nesting limits of one message.
const (
	// MaxDepth bounds the JSON nesting of one message as sent and as stored, counting
	// the message object as level 1 (its content list is 2, a block 3, a tool call's
	// arguments object 4, so arguments may nest MaxArgumentsDepth levels). Every reader of
	// stored data must read what the door lets in, and 512 leaves them room: memory's and
	// compaction's one-pass readers (jsonscan) follow 512 levels counted from the arguments
	// (deeper text goes to gjson, which recurses without a limit); encoding/json, which
	// decodes requests, imports and exports and re-checks every raw value it writes, stops at
	// 10,000 levels counted over the whole document, of which an envelope (a JSON-RPC
	// request or answer, an export line) takes fewer than ten; and a client's decoder may be
	// stricter still (Python's json recurses, and stops at its recursion limit, 1,000 by
	// default). Before the limit, a save 10,000 levels deep was stored and then could not be
	// exported.
	MaxDepth = 512
	// MaxArgumentsDepth is how deep a tool call's arguments may nest, the arguments object
	// being level 1: what MaxDepth leaves them.
	MaxArgumentsDepth = MaxDepth - 3
)

// DepthRule and DepthHint word the nesting limit in errors.
const (
	DepthRule = "the message object is level 1, a tool call's arguments object level 4"
	DepthHint = "flatten the deepest data, e.g. send a deeply nested value as a JSON string inside the arguments, and retry; nothing was saved"
)

// IsJSONObject reports whether raw is one valid JSON object (what unmarshalling it into a map
// accepts), without building the map.
func IsJSONObject(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && (validJSON(raw) || json.Valid(raw))
}
