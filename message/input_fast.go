package message

import (
	"strings"
	"unsafe"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
)

// The common case of DecodeInputMessage in one pass without gjson. Reading a message with
// gjson walked a block's text up to five times (the field check, the decoding, each pass
// unescaping every string again) and cost 25-45 µs for a 2 KB message: a large share of a
// save's CPU. decodeInputFast reads the JSON once, checking the field names as it goes, and
// unescapes each string once into one buffer for the whole message.
//
// It accepts only what the general decoder accepts and decodes it to the same Message:
// valid JSON of the contract's shape, every key written plainly and exactly as the contract
// spells it, no key twice, blocks of the five types with only their own fields, values of
// the right types (or null), whole numbers in usage written as encoding/json writes them.
// Anything else (an error to report, field names in another case, an unknown block type,
// repeated keys) is left to the general decoder, which finds the error or decodes it.

// MaxReadDepth bounds the nesting memory's readers follow (encoding/json allows 10,000);
// deeper input is left to the general code.
const MaxReadDepth = 512

// newJSONReader returns jsonscan's strict reader over b, which must not change while it reads.
func newJSONReader(b []byte) jsonscan.Reader {
	return jsonscan.NewReader(unsafe.String(unsafe.SliceData(b), len(b)), MaxReadDepth)
}

// validJSON reports whether the reader reads raw as one JSON value: then json.Valid does too,
// and its slower scanner need not run; false says nothing (the reader declines nesting deeper
// than it follows).
func validJSON(raw []byte) bool {
	r := newJSONReader(raw)
	return r.Whole()
}

// Top-level fields, by bit.
const (
	fieldID = 1 << iota
	fieldEntryID
	fieldRole
	fieldContent
	fieldUsage
	fieldPinned
)

func messageField(k string) int {
	switch k {
	case "id":
		return fieldID
	case "entry_id":
		return fieldEntryID
	case "role":
		return fieldRole
	case "content":
		return fieldContent
	case "usage":
		return fieldUsage
	case "pinned":
		return fieldPinned
	}
	return 0
}

// inputDecoder holds the state of one decoding: the reader and the buffer the message's
// strings are cut from.
type inputDecoder struct {
	r     jsonscan.Reader
	arena []byte
}

// decodeInputFast decodes raw as DecodeInputMessage does, or reports false when raw is not
// what it reads (see above).
func decodeInputFast(raw []byte) (Message, bool) {
	d := inputDecoder{r: newJSONReader(raw), arena: make([]byte, 0, len(raw))}
	var m Message
	_, ok := d.fields(messageField, func(bit int) (ok bool) {
		switch bit {
		case fieldID:
			m.ID, ok = d.optString()
		case fieldEntryID:
			m.EntryID, ok = d.optString()
		case fieldRole:
			var role string
			role, ok = d.optString()
			m.Role = Role(role)
		case fieldContent:
			if d.r.Ahead(`""`) {
				return false // an empty string content is an error
			}
			m.Content, ok = d.content(0)
		case fieldUsage:
			m.Usage, ok = d.usage()
		case fieldPinned:
			m.Pinned, ok = d.optBool()
		}
		return ok
	})
	if !ok || !d.r.End() {
		return Message{}, false // trailing bytes too: the general decoder decides
	}
	return m, true
}

// fields reads an object whose keys name fields by bit (bitOf gives 0 for any other key),
// each at most once, reading each value with read; seen are the fields read.
func (d *inputDecoder) fields(bitOf func(string) int, read func(bit int) bool) (seen int, ok bool) {
	ok = d.r.Members(func(key string) bool {
		bit := bitOf(key)
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return read(bit)
	})
	return seen, ok
}

// text returns the value of a string token, cut from the arena: the strings of a message
// share one allocation, and none points into raw, which belongs to the caller.
func (d *inputDecoder) text(t jsonscan.String) string {
	if len(t.Raw) == 0 {
		return ""
	}
	// Should the arena grow (bytes that are not UTF-8 take three bytes each as U+FFFD), the
	// strings cut before keep the old array; nothing is ever written where a string points.
	start := len(d.arena)
	d.arena = t.AppendValue(d.arena)
	b := d.arena[start:]
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// optString reads a string or null ("").
func (d *inputDecoder) optString() (string, bool) {
	if d.r.Next() == 'n' {
		return "", d.r.Word("null")
	}
	t, ok := d.r.Str()
	if !ok {
		return "", false
	}
	return d.text(t), true
}

// optBool reads true, false or null (false).
func (d *inputDecoder) optBool() (bool, bool) {
	switch d.r.Next() {
	case 't':
		return true, d.r.Word("true")
	case 'f':
		return false, d.r.Word("false")
	}
	return false, d.r.Word("null")
}

// content reads a content value: null (nil), a string (one text block) or a list of blocks.
func (d *inputDecoder) content(depth int) ([]Block, bool) {
	switch d.r.Next() {
	case 'n':
		return nil, d.r.Word("null")
	case '"':
		t, ok := d.r.Str()
		return []Block{{Type: BlockText, Text: d.text(t)}}, ok
	}
	if depth > MaxReadDepth/2 || !d.r.Consume('[') {
		return nil, false
	}
	blocks := []Block{}
	for more := !d.r.Consume(']'); more; more = !d.r.Consume(']') {
		if len(blocks) > 0 && !d.r.Consume(',') {
			return nil, false
		}
		b, ok := d.block(depth)
		if !ok {
			return nil, false
		}
		blocks = append(blocks, b)
	}
	return blocks, true
}

// Block fields, by bit.
const (
	bfType = 1 << iota
	bfText
	bfThinking
	bfID
	bfName
	bfArguments
	bfToolCallID
	bfContent
	bfIsError
	bfMediaType
	bfData
)

var blockFieldBits = map[string]int{"type": bfType, "text": bfText, "thinking": bfThinking,
	"id": bfID, "name": bfName, "arguments": bfArguments, FieldToolCallID: bfToolCallID,
	"content": bfContent, "is_error": bfIsError, FieldMediaType: bfMediaType, "data": bfData}

// blockFieldsOf are the fields each block type allows and, in need, the one it requires, as
// bits: the general decoder's inputBlockFields and requiredInputField, so the two cannot drift.
var blockFieldsOf = func() map[string]struct{ allowed, needed int } {
	m := make(map[string]struct{ allowed, needed int }, len(inputBlockFields))
	for typ, fields := range inputBlockFields {
		f := m[typ]
		for k := range fields {
			f.allowed |= blockFieldBits[k] // a key without a bit is declined before this is read
		}
		f.needed = blockFieldBits[requiredInputField[typ]]
		m[typ] = f
	}
	return m
}()

// block reads one block object (see decodeInputBlock).
func (d *inputDecoder) block(depth int) (Block, bool) {
	var blk Block
	seen, ok := d.fields(func(k string) int { return blockFieldBits[k] }, func(bit int) (ok bool) {
		switch bit {
		case bfType:
			var t jsonscan.String
			t, ok = d.r.Str()
			blk.Type = blockName(t.Raw)
			ok = ok && !t.Esc
		case bfText:
			blk.Text, ok = d.optString()
		case bfThinking:
			blk.Thinking, ok = d.optString()
		case bfID:
			blk.ID, ok = d.optString()
		case bfName:
			blk.Name, ok = d.optString()
		case bfArguments:
			var raw string
			raw, ok = d.r.Value()
			blk.Arguments = d.bytes(raw)
		case bfToolCallID:
			blk.ToolCallID, ok = d.optString()
		case bfContent:
			blk.Content, ok = d.content(depth + 1)
		case bfIsError:
			blk.IsError, ok = d.optBool()
		case bfMediaType:
			blk.MediaType, ok = d.optString()
		case bfData:
			blk.Data, ok = d.optString()
		}
		return ok
	})
	if !ok {
		return blk, false
	}
	f, known := blockFieldsOf[blk.Type]
	if !known || seen&^f.allowed != 0 || seen&f.needed != f.needed {
		return blk, false // an unknown type or field, or a missing text: the general decoder decides
	}
	if seen&bfContent == 0 {
		blk.absent |= absentContent
	}
	if seen&bfIsError == 0 {
		blk.absent |= absentIsError
	}
	if seen&bfArguments == 0 {
		blk.absent |= absentArguments
	}
	blk.absent &= blk.optional()
	return blk, true
}

// bytes returns a copy of raw text cut from the arena, capped so that appending to it cannot
// reach the strings after it.
func (d *inputDecoder) bytes(s string) []byte {
	start := len(d.arena)
	d.arena = append(d.arena, s...)
	return d.arena[start:len(d.arena):len(d.arena)]
}

// usage reads null or a usage object; keys other than the two counts are ignored, as
// encoding/json ignores them.
func (d *inputDecoder) usage() (*Usage, bool) {
	if d.r.Next() == 'n' {
		return nil, d.r.Word("null")
	}
	u := &Usage{}
	seen := 0 // 1: input_tokens, 2: output_tokens
	ok := d.r.Members(func(key string) bool {
		switch key {
		case "input_tokens":
			ok := seen&1 == 0 && d.count(&u.InputTokens)
			seen |= 1
			return ok
		case "output_tokens":
			ok := seen&2 == 0 && d.count(&u.OutputTokens)
			seen |= 2
			return ok
		}
		if strings.EqualFold(key, "input_tokens") || strings.EqualFold(key, "output_tokens") {
			return false // encoding/json would take it for one of them
		}
		_, ok := d.r.Value()
		return ok
	})
	return u, ok
}

// count reads null (leaving n) or a whole number written as encoding/json writes one (no
// leading zeros, no sign but '-', no fraction or exponent) that fits in an int64.
func (d *inputDecoder) count(n *int) bool {
	if d.r.Next() == 'n' {
		return d.r.Word("null")
	}
	s, ok := d.r.Value() // any value: the digits below refuse all but a whole number
	if !ok {
		return false
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) > 18 {
		return false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false // a fraction or an exponent
		}
		v = v*10 + int(s[i]-'0')
	}
	if neg {
		v = -v
	}
	*n = v
	return true
}
