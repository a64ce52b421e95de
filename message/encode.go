package message

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
)

// Encoding message entries without reflection. Every save encodes its messages, and
// encoding/json spends about 50 µs on a ~2 KB message (each block's MarshalJSON runs a
// second encoder, and its output is scanned again to compact it): a twentieth of a save.
// The functions here write the same bytes as encoding/json without HTML escaping of the same
// value (a test compares them on random input); anything they do not cover goes through
// encoding/json.

// Append appends m's JSON as Message's struct tags write it, without HTML escaping.
func Append(out []byte, m *Message) ([]byte, error) {
	out = append(out, '{')
	if m.ID != "" {
		out = append(out, `"id":`...)
		out = AppendString(out, m.ID)
		out = append(out, ',')
	}
	if m.EntryID != "" {
		out = append(out, `"entry_id":`...)
		out = AppendString(out, m.EntryID)
		out = append(out, ',')
	}
	out = append(out, `"role":`...)
	out = AppendString(out, string(m.Role))
	out = append(out, `,"content":`...)
	if m.Content == nil {
		out = append(out, "null"...)
	} else {
		var err error
		if out, err = appendBlocks(out, m.Content); err != nil {
			return nil, err
		}
	}
	if m.Usage != nil {
		out = append(out, `,"usage":{"input_tokens":`...)
		out = strconv.AppendInt(out, int64(m.Usage.InputTokens), 10)
		out = append(out, `,"output_tokens":`...)
		out = strconv.AppendInt(out, int64(m.Usage.OutputTokens), 10)
		out = append(out, '}')
	}
	if m.Pinned {
		out = append(out, `,"pinned":true`...)
	}
	return append(out, '}'), nil
}

func appendBlocks(out []byte, blocks []Block) ([]byte, error) {
	out = append(out, '[')
	for i := range blocks {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = blocks[i].appendJSON(out); err != nil {
			return nil, err
		}
	}
	return append(out, ']'), nil
}

// appendJSON appends the block's wire form (see shape).
func (b *Block) appendJSON(out []byte) ([]byte, error) {
	switch b.Type {
	case BlockText, BlockThinking, BlockToolCall, BlockToolResult, BlockImage:
	default: // not a valid block; validation keeps it from being stored
		enc, err := MarshalNoEscape(b.shape())
		if err != nil {
			return nil, err
		}
		return append(out, enc...), nil
	}
	out = append(out, `{"type":`...)
	out = AppendString(out, b.Type)
	switch b.Type {
	case BlockText:
		out = append(out, `,"text":`...)
		out = AppendString(out, b.Text)
	case BlockThinking:
		out = append(out, `,"thinking":`...)
		out = AppendString(out, b.Thinking)
	case BlockToolCall:
		out = append(out, `,"id":`...)
		out = AppendString(out, b.ID)
		out = append(out, `,"name":`...)
		out = AppendString(out, b.Name)
		switch {
		case len(b.Arguments) > 0:
			out = append(out, `,"arguments":`...)
			var err error
			if out, err = appendCompactJSON(out, b.Arguments); err != nil {
				return nil, err
			}
		case b.absent&absentArguments == 0:
			out = append(out, `,"arguments":{}`...)
		}
	case BlockToolResult:
		out = append(out, `,"`+FieldToolCallID+`":`...)
		out = AppendString(out, b.ToolCallID)
		if b.absent&absentContent == 0 || len(b.Content) > 0 {
			out = append(out, `,"content":`...)
			var err error
			if out, err = appendBlocks(out, b.Content); err != nil {
				return nil, err
			}
		}
		if b.absent&absentIsError == 0 || b.IsError {
			out = append(out, `,"is_error":`...)
			out = strconv.AppendBool(out, b.IsError)
		}
	case BlockImage:
		out = append(out, `,"`+FieldMediaType+`":`...)
		out = AppendString(out, b.MediaType)
		out = append(out, `,"data":`...)
		out = AppendString(out, b.Data)
	}
	return append(out, '}'), nil
}

// appendCompactJSON appends raw without its insignificant white space, as json.Compact does,
// and fails where json.Compact fails. Arguments are read once with jsonscan's reader (the
// scanner json.Compact runs was a third of encoding a message) and, being mostly compact
// already, copied as they are; what the reader declines goes to json.Compact.
func appendCompactJSON(out, raw []byte) ([]byte, error) {
	if r := newJSONReader(raw); r.Whole() {
		if r.Spaces() == 0 {
			return append(out, raw...), nil
		}
		return appendUnspaced(out, raw), nil
	}
	buf := bytes.NewBuffer(out)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendUnspaced appends valid JSON without the white space outside its strings.
func appendUnspaced(out, raw []byte) []byte {
	inStr, esc := false, false
	for _, c := range raw {
		switch {
		case inStr:
			inStr = esc || c != '"'
			esc = !esc && c == '\\'
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c == '"':
			inStr = true
		}
		out = append(out, c)
	}
	return out
}

// AppendString appends s as a JSON string the way encoding/json does with HTML escaping
// off: quote, backslash and control characters escaped (\b \f \n \r \t by their short forms,
// the others as \u00XX), invalid UTF-8 replaced by \ufffd, and U+2028 and U+2029 escaped
// (JavaScript treats them as line ends).
func AppendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = jsonscan.PlainRun(s, i); i == len(s) { // printable ASCII but '"' and '\\' is copied as is
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			out = append(out, s[start:i]...)
			switch c {
			case '"', '\\':
				out = append(out, '\\', c)
			case '\b':
				out = append(out, '\\', 'b')
			case '\f':
				out = append(out, '\\', 'f')
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			default:
				out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, s[start:i]...)
			out = append(out, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			out = append(out, s[start:i]...)
			out = append(out, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// MarshalNoEscape encodes v without HTML escaping, so stored text keeps <, > and & as written
// (searchable, readable with zstdcat). Output encoders escape again as they see fit.
func MarshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
