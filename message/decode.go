package message

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// DecodeStored decodes a message as memory stores it (Append's output, from a validated
// message): one gjson pass over each object, every key visited once. The strings of the
// result never point into r.
func DecodeStored(r gjson.Result) Message {
	var m Message
	r.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			m.ID = str(v)
		case "role":
			m.Role = RoleName(v.Str)
		case "content":
			m.Content = decodeBlocks(v)
		case "usage":
			u := &Usage{}
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "input_tokens":
					u.InputTokens = int(v.Int())
				case "output_tokens":
					u.OutputTokens = int(v.Int())
				}
				return true
			})
			m.Usage = u
		case "pinned":
			m.Pinned = v.Bool()
		}
		return true
	})
	return m
}

func decodeBlocks(r gjson.Result) []Block {
	if !r.IsArray() {
		if r.Type == gjson.String {
			return []Block{{Type: BlockText, Text: str(r)}}
		}
		return nil
	}
	var out []Block
	r.ForEach(func(_, b gjson.Result) bool {
		blk := Block{absent: absentIsError | absentContent | absentArguments}
		b.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "type":
				blk.Type = blockName(v.Str)
			case "text":
				blk.Text = str(v)
			case "thinking":
				blk.Thinking = str(v)
			case "id":
				blk.ID = str(v)
			case "name":
				blk.Name = str(v)
			case "arguments":
				blk.Arguments = json.RawMessage(v.Raw)
				blk.absent &^= absentArguments
			case FieldToolCallID:
				blk.ToolCallID = str(v)
			case "is_error":
				blk.IsError = v.Bool()
				blk.absent &^= absentIsError
			case "content":
				blk.Content = decodeBlocks(v)
				blk.absent &^= absentContent
			case FieldMediaType:
				blk.MediaType = str(v)
			case "data":
				blk.Data = str(v)
			}
			return true
		})
		blk.absent &= blk.optional()
		out = append(out, blk)
		return true
	})
	return out
}

// blockName returns the package's constant for a stored block type.
func blockName(s string) string {
	for _, t := range []string{BlockText, BlockToolCall, BlockToolResult, BlockThinking, BlockImage} {
		if s == t {
			return t
		}
	}
	return strings.Clone(s)
}

// RoleName returns the package's constant for a stored role, so that decoded messages share
// its string instead of each holding a copy.
func RoleName(s string) Role {
	for _, r := range []Role{RoleUser, RoleAssistant, RoleToolResult, RoleSystem} {
		if s == string(r) {
			return r
		}
	}
	return Role(strings.Clone(s))
}

// str returns a gjson string result as a string of its own (gjson returns escaped strings
// unescaped in fresh memory, and others as slices of the input).
func str(r gjson.Result) string {
	if r.Type != gjson.String {
		return r.String()
	}
	return strings.Clone(r.Str)
}
