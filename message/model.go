package message

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Role is who produced a message.
type Role string

// Message roles of the contract.
const (
	RoleSystem     Role = "system"
	RoleUser       Role = "user"
	RoleAssistant  Role = "assistant"
	RoleToolResult Role = "tool_result"
)

// Block types of the contract.
const (
	BlockText       = "text"
	BlockThinking   = "thinking"
	BlockToolCall   = "tool_call"
	BlockToolResult = "tool_result"
	BlockImage      = "image"
)

// Message is one conversation message in the contract's shape. On input Content may be a string
// (shorthand for one text block); on output it is always the block form.
type Message struct {
	// ID is the client's own idempotency key within a session (optional).
	ID string `json:"id,omitempty" gate:"id"`
	// EntryID is the server-assigned entry id (output only).
	EntryID string  `json:"entry_id,omitempty" gate:"id"`
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
	Usage   *Usage  `json:"usage,omitempty"`
	// Pinned marks standing context (the task statement, the project's instructions) that no
	// compaction folds into a summary: session_resume returns it verbatim in pinned once a
	// compaction's kept part starts after it. Omitted when false, so messages saved without
	// it come back byte for byte.
	Pinned bool `json:"pinned,omitempty"`
}

// Usage is the token usage a client reports with an assistant turn.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// The contract's field names that more than one reader or writer spells. They are written
// here and in the struct tags of this file, nowhere else in sessionmem: code that needs one
// by name (this package's decoders and encoders, compaction's readers, memory's validation,
// mcpserver's schema) uses the constant, so renaming a field of the contract is an edit of
// this file. (Claude Code's transcripts have a media_type of their own, Anthropic's API
// field, which transcript reads under its own name: it follows that format, not this one.)
const (
	FieldToolCallID = "tool_call_id"
	FieldMediaType  = "media_type"
)

// Block is one content block. Which fields are set depends on Type:
// text: Text; thinking: Thinking; tool_call: ID, Name, Arguments; tool_result: ToolCallID,
// Content, IsError; image: MediaType, Data (base64).
type Block struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	Thinking   string          `json:"thinking,omitempty"`
	ID         string          `json:"id,omitempty" gate:"id"`
	Name       string          `json:"name,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty" gate:"id"`
	Content    []Block         `json:"content,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	MediaType  string          `json:"media_type,omitempty"`
	Data       string          `json:"data,omitempty"`

	// absent records the optional fields a decoded block did not have (a tool_result's
	// is_error or content, a tool_call's arguments), so that encoding it again writes back
	// exactly what was given instead of filling in defaults. Blocks built in Go have none
	// absent: their encoding always carries those fields.
	absent absentFields
}

// absentFields are the optional block fields a decoded block lacked.
type absentFields uint8

const (
	absentIsError absentFields = 1 << iota
	absentContent
	absentArguments
)

// UnmarshalJSON accepts content as a string or a block list.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		ID      string          `json:"id"`
		EntryID string          `json:"entry_id"`
		Role    Role            `json:"role"`
		Content json.RawMessage `json:"content"`
		Usage   *Usage          `json:"usage"`
		Pinned  bool            `json:"pinned"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	blocks, err := decodeContent(raw.Content)
	if err != nil {
		return fmt.Errorf("content: %w", err)
	}
	*m = Message{ID: raw.ID, EntryID: raw.EntryID, Role: raw.Role, Content: blocks, Usage: raw.Usage, Pinned: raw.Pinned}
	return nil
}

// UnmarshalJSON accepts a tool_result block's content as a string or a block list, and
// remembers which optional fields the block left out.
func (b *Block) UnmarshalJSON(data []byte) error {
	type plain Block
	var raw struct {
		plain
		Content json.RawMessage `json:"content"`
		IsError json.RawMessage `json:"is_error"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*b = Block(raw.plain)
	blocks, err := decodeContent(raw.Content)
	if err != nil {
		return fmt.Errorf("%s block content: %w", b.Type, err)
	}
	b.Content = blocks
	if raw.Content == nil {
		b.absent |= absentContent
	}
	if raw.IsError == nil {
		b.absent |= absentIsError
	} else if err := json.Unmarshal(raw.IsError, &b.IsError); err != nil {
		return fmt.Errorf("%s block is_error: %w", b.Type, err)
	}
	if b.Arguments == nil {
		b.absent |= absentArguments
	}
	b.absent &= b.optional()
	return nil
}

// SetContent replaces a tool result's content; its encoding then writes the content even if
// the block was decoded without any.
func (b *Block) SetContent(content []Block) {
	b.Content = content
	b.absent &^= absentContent
}

// optional returns the fields a block of b's type may leave out.
func (b *Block) optional() absentFields {
	switch b.Type {
	case BlockToolResult:
		return absentIsError | absentContent
	case BlockToolCall:
		return absentArguments
	}
	return 0
}

// decodeContent turns a string or a block list into blocks; null or absent gives nil.
func decodeContent(raw json.RawMessage) ([]Block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []Block{{Type: BlockText, Text: s}}, nil
	}
	if raw[0] != '[' {
		return nil, fmt.Errorf("must be a string or a list of blocks")
	}
	var blocks []Block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

// MarshalJSON writes exactly the fields of the block's type, so an empty text stays "text":"",
// and a tool result's is_error and content and a tool call's arguments are written unless the
// block was decoded without them.
func (b Block) MarshalJSON() ([]byte, error) {
	return b.appendJSON(nil)
}

// shape returns the value whose JSON is the block's wire form.
func (b Block) shape() any {
	switch b.Type {
	case BlockText:
		return struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text}
	case BlockThinking:
		return struct {
			Type     string `json:"type"`
			Thinking string `json:"thinking"`
		}{b.Type, b.Thinking}
	case BlockToolCall:
		args := b.Arguments
		if len(args) == 0 && b.absent&absentArguments == 0 {
			args = json.RawMessage("{}")
		}
		return struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments,omitempty"`
		}{b.Type, b.ID, b.Name, args}
	case BlockToolResult:
		out := struct {
			Type       string   `json:"type"`
			ToolCallID string   `json:"tool_call_id"`
			Content    *[]Block `json:"content,omitempty"`
			IsError    *bool    `json:"is_error,omitempty"`
		}{Type: b.Type, ToolCallID: b.ToolCallID}
		if b.absent&absentContent == 0 || len(b.Content) > 0 {
			content := b.Content
			if content == nil {
				content = []Block{}
			}
			out.Content = &content
		}
		if b.absent&absentIsError == 0 || b.IsError {
			out.IsError = &b.IsError
		}
		return out
	case BlockImage:
		return struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		}{b.Type, b.MediaType, b.Data}
	}
	type plain Block
	return plain(b)
}
