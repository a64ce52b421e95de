package relevance

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Text returns the searchable text of the message the way storetest.Docs extracts it from a
// stored record: the text of its text and thinking blocks, the name and string arguments of
// its tool calls (in the order the arguments are written) and the text of the blocks of its
// tool results, joined with newlines. A content given as a plain string yields nothing, as
// in Docs (stored messages always use blocks). Malformed JSON yields what was read before it.
func (m Message) Text() string {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(m.JSON, &msg) != nil {
		return ""
	}
	var parts []string
	appendBlocks(&parts, msg.Content)
	return strings.Join(parts, "\n")
}

// block is the part of a content block the text comes from.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Content   json.RawMessage `json:"content"`
}

func appendBlocks(parts *[]string, content json.RawMessage) {
	var blocks []block
	if json.Unmarshal(content, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			*parts = append(*parts, b.Text)
		case "thinking":
			*parts = append(*parts, b.Thinking)
		case "tool_call":
			*parts = append(*parts, b.Name)
			*parts = appendStringArgs(*parts, b.Arguments)
		case "tool_result":
			appendBlocks(parts, b.Content)
		}
	}
}

// appendStringArgs appends the top-level string values of a JSON object in document order
// (decoding into a map would lose the order Docs keeps).
func appendStringArgs(parts []string, obj json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return parts
	}
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the key
			return parts
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return parts
		}
		var s string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
			parts = append(parts, s)
		}
	}
	return parts
}
