package message

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
)

// Decoding messages as clients send them. A save's messages used to be decoded three times
// over (into raw items, into maps to check the field names, into Messages, each block once
// more by its own UnmarshalJSON): most of a small save's CPU. DecodeInputMessage reads a
// message in one gjson pass, checks its field names and decodes it as Message.UnmarshalJSON
// does (same fields, the same case-insensitive matching for block fields, null as absent, the
// same record of absent optional fields), so what is stored is unchanged.

// Fields the message schema allows, per object; anything else is refused rather than dropped,
// so a typo such as "txt" for "text" cannot lose content silently.
var (
	inputMessageFields = map[string]bool{"id": true, "entry_id": true, "role": true, "content": true, "usage": true, "pinned": true}
	inputBlockFields   = map[string]map[string]bool{
		BlockText:       {"type": true, "text": true},
		BlockThinking:   {"type": true, "thinking": true},
		BlockToolCall:   {"type": true, "id": true, "name": true, "arguments": true},
		BlockToolResult: {"type": true, FieldToolCallID: true, "content": true, "is_error": true},
		BlockImage:      {"type": true, FieldMediaType: true, "data": true},
	}
	requiredInputField = map[string]string{BlockText: "text", BlockThinking: "thinking"}
)

// InputError is a message a client sent that cannot be stored. Its text completes
// "messages[i]": " has unknown field …", ".content[0] (text block) lacks …", " is malformed: …".
// Hint, when set, says what to do about this error in particular.
type InputError struct{ Detail, Hint string }

func (e *InputError) Error() string { return e.Detail }

// DecodeInput decodes one message object as a client sent it (raw must be valid JSON;
// the transports checked it). Field names are checked first: an unknown field, a text or
// thinking block without its text, or an empty string content is an InputError, as is a
// value of the wrong type. Everything else (roles, ids, sizes) is checked by Save.
func DecodeInput(raw []byte) (Message, error) {
	if jsonscan.Deeper(raw, MaxDepth) {
		// Before any reader: the general one would follow it, and what is refused here is
		// never stored, so no reader of stored data meets it.
		return Message{}, &InputError{Detail: fmt.Sprintf(" nests deeper than %d levels of JSON, the limit for one message (%s)", MaxDepth, DepthRule), Hint: DepthHint}
	}
	if m, ok := decodeInputFast(raw); ok { // the common case, in one pass (input_fast.go)
		return m, nil
	}
	return decodeInputGeneral(raw)
}

// decodeInputGeneral is DecodeInputMessage for every input, with gjson: it finds the errors,
// and it is the definition decodeInputFast follows (the tests compare the two).
func decodeInputGeneral(raw []byte) (Message, error) {
	r := gjson.ParseBytes(raw)
	if !r.IsObject() {
		return Message{}, &InputError{Detail: " must be an object"}
	}
	var content gjson.Result
	var err error
	r.ForEach(func(k, v gjson.Result) bool {
		if !inputMessageFields[k.Str] {
			err = &InputError{Detail: fmt.Sprintf(" has unknown field %q (allowed: id, role, content, usage, pinned)", k.Str)}
			return false
		}
		if k.Str == "content" {
			content = v // the last one counts, as for encoding/json
		}
		return true
	})
	if err != nil {
		return Message{}, err
	}
	if content.Type == gjson.String && content.Str == "" {
		return Message{}, &InputError{Detail: ".content is an empty string"}
	}
	if err := checkInputBlocks(content, ".content"); err != nil {
		return Message{}, err
	}

	var m Message
	r.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			m.ID, err = inputString(v, "id", m.ID)
		case "entry_id":
			m.EntryID, err = inputString(v, "entry_id", m.EntryID)
		case "role":
			var s string
			s, err = inputString(v, "role", string(m.Role))
			m.Role = Role(s)
		case "content":
			m.Content, err = decodeInputContent(v)
			if err != nil {
				err = fmt.Errorf("content: %w", err)
			}
		case "usage":
			m.Usage, err = decodeInputUsage(v, m.Usage)
		case "pinned":
			m.Pinned, err = inputBool(v, "pinned", m.Pinned)
		}
		return err == nil
	})
	if err != nil {
		return Message{}, &InputError{Detail: " is malformed: " + err.Error()}
	}
	return m, nil
}

// checkInputBlocks reports the first unknown or missing field of the blocks in r (a string or
// an absent content is the service's to check).
func checkInputBlocks(r gjson.Result, path string) error {
	if !r.IsArray() {
		return nil
	}
	var err error
	r.ForEach(func(_, b gjson.Result) bool {
		if !b.IsObject() && b.Type != gjson.Null { // null decodes to a block without a type
			err = &InputError{Detail: path + " must be a string or a list of block objects"}
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	j := 0
	var keys []string // one block's keys in order: one pass over a block (its text is unescaped on each)
	r.ForEach(func(_, b gjson.Result) bool {
		typ := ""
		var content gjson.Result
		keys = keys[:0]
		b.ForEach(func(k, v gjson.Result) bool {
			keys = append(keys, k.Str)
			switch k.Str {
			case "type":
				typ = ""
				if v.Type == gjson.String {
					typ = v.Str
				}
			case "content":
				content = v
			}
			return true
		})
		if allowed := inputBlockFields[typ]; allowed != nil { // unknown or missing type: the service names it
			for _, k := range keys {
				if !allowed[k] {
					err = &InputError{Detail: fmt.Sprintf("%s[%d] (%s block) has unknown field %q", path, j, typ, k)}
					break
				}
			}
			if err == nil {
				if f := requiredInputField[typ]; f != "" && !slices.Contains(keys, f) {
					err = &InputError{Detail: fmt.Sprintf("%s[%d] (%s block) lacks %q", path, j, typ, f)}
				}
			}
			if err == nil && typ == BlockToolResult {
				err = checkInputBlocks(content, fmt.Sprintf("%s[%d].content", path, j))
			}
		}
		j++
		return err == nil
	})
	return err
}

// decodeInputContent is decodeContent over a gjson value: a string is one text block, null or
// absent nothing.
func decodeInputContent(v gjson.Result) ([]Block, error) {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return nil, nil
	case v.Type == gjson.String:
		return []Block{{Type: BlockText, Text: inputText(v)}}, nil
	case !v.IsArray():
		return nil, fmt.Errorf("must be a string or a list of blocks")
	}
	blocks := []Block{}
	var err error
	v.ForEach(func(_, b gjson.Result) bool {
		var blk Block
		if blk, err = decodeInputBlock(b); err != nil {
			return false
		}
		blocks = append(blocks, blk)
		return true
	})
	if err != nil {
		return nil, err
	}
	return blocks, nil
}

// decodeInputBlock decodes a block as Block.UnmarshalJSON does; field names match exactly or,
// failing that, ignoring case (encoding/json's rule).
func decodeInputBlock(b gjson.Result) (Block, error) {
	if b.Type == gjson.Null {
		return Block{}, nil
	}
	if !b.IsObject() {
		return Block{}, fmt.Errorf("a block must be an object")
	}
	var blk Block
	var contentRaw, isErrorRaw gjson.Result
	hasContent, hasIsError := false, false
	var err error
	b.ForEach(func(k, v gjson.Result) bool {
		switch blockField(k.Str) {
		case "type":
			blk.Type, err = inputString(v, "type", blk.Type)
		case "text":
			blk.Text, err = inputString(v, "text", blk.Text)
		case "thinking":
			blk.Thinking, err = inputString(v, "thinking", blk.Thinking)
		case "id":
			blk.ID, err = inputString(v, "id", blk.ID)
		case "name":
			blk.Name, err = inputString(v, "name", blk.Name)
		case "arguments":
			blk.Arguments = []byte(v.Raw)
		case FieldToolCallID:
			blk.ToolCallID, err = inputString(v, FieldToolCallID, blk.ToolCallID)
		case "content":
			contentRaw, hasContent = v, true
		case "is_error":
			isErrorRaw, hasIsError = v, true
		case FieldMediaType:
			blk.MediaType, err = inputString(v, FieldMediaType, blk.MediaType)
		case "data":
			blk.Data, err = inputString(v, "data", blk.Data)
		}
		return err == nil
	})
	if err != nil {
		return Block{}, err
	}
	blk.Type = blockName(blk.Type)
	content, err := decodeInputContent(contentRaw)
	if err != nil {
		return Block{}, fmt.Errorf("%s block content: %w", blk.Type, err)
	}
	blk.Content = content
	if !hasContent {
		blk.absent |= absentContent
	}
	if !hasIsError {
		blk.absent |= absentIsError
	} else if blk.IsError, err = inputBool(isErrorRaw, "is_error", false); err != nil {
		return Block{}, fmt.Errorf("%s block is_error: %w", blk.Type, err)
	}
	if blk.Arguments == nil {
		blk.absent |= absentArguments
	}
	blk.absent &= blk.optional()
	return blk, nil
}

// blockFieldNames are Block's JSON field names.
var blockFieldNames = []string{"type", "text", "thinking", "id", "name", "arguments", FieldToolCallID, "content", "is_error", FieldMediaType, "data"}

// blockField returns the Block field a key names: an exact match, else one that differs only
// in case; "" for none.
func blockField(k string) string {
	for _, f := range blockFieldNames {
		if k == f {
			return f
		}
	}
	for _, f := range blockFieldNames {
		if strings.EqualFold(k, f) {
			return f
		}
	}
	return ""
}

func decodeInputUsage(v gjson.Result, prev *Usage) (*Usage, error) {
	switch {
	case v.Type == gjson.Null:
		return nil, nil
	case !v.IsObject():
		return prev, fmt.Errorf("usage must be an object")
	}
	u := &Usage{}
	if prev != nil {
		*u = *prev // encoding/json decodes into the existing value
	}
	var err error
	v.ForEach(func(k, n gjson.Result) bool {
		switch {
		case strings.EqualFold(k.Str, "input_tokens"):
			u.InputTokens, err = inputInt(n, "usage.input_tokens", u.InputTokens)
		case strings.EqualFold(k.Str, "output_tokens"):
			u.OutputTokens, err = inputInt(n, "usage.output_tokens", u.OutputTokens)
		}
		return err == nil
	})
	return u, err
}

// inputString returns a string value; null leaves prev (encoding/json's rule).
func inputString(v gjson.Result, field, prev string) (string, error) {
	switch v.Type {
	case gjson.String:
		return inputText(v), nil
	case gjson.Null:
		return prev, nil
	}
	return prev, fmt.Errorf("%s must be a string", field)
}

func inputBool(v gjson.Result, field string, prev bool) (bool, error) {
	switch v.Type {
	case gjson.True:
		return true, nil
	case gjson.False:
		return false, nil
	case gjson.Null:
		return prev, nil
	}
	return prev, fmt.Errorf("%s must be true or false", field)
}

// inputInt returns a whole number written without fraction or exponent, as encoding/json
// requires for an int.
func inputInt(v gjson.Result, field string, prev int) (int, error) {
	switch v.Type {
	case gjson.Null:
		return prev, nil
	case gjson.Number:
		if !strings.ContainsAny(v.Raw, ".eE") {
			if n := v.Int(); fmt.Sprint(n) == strings.TrimPrefix(v.Raw, "+") || (v.Raw == "-0" && n == 0) {
				return int(n), nil
			}
		}
	}
	return prev, fmt.Errorf("%s must be a whole number", field)
}

// inputText returns a string value as a string of its own, with each byte that is not UTF-8
// replaced by U+FFFD as encoding/json does (gjson passes such bytes through).
func inputText(v gjson.Result) string {
	s := v.Str
	if utf8.ValidString(s) {
		return strings.Clone(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
