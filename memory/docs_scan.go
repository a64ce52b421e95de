package memory

import (
	"bytes"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
)

// messageTextScan is messageText in one pass over the message's JSON, appending each part's
// value where it is read (messageText's gjson reads each block again for every key it asks
// for, unescapes each value into a string of its own, then joins them: most of what a
// rebuild of the search index spent building docs). It gives the very text messageText
// gives, or ok false for a message it does not read itself (content that is neither a
// string nor an array, a key written with escapes, a value of another type where a string
// is expected, a string with escapes and bytes that are not UTF-8), which messageText reads.
func messageTextScan(raw string) (string, bool) {
	r := jsonscan.NewReader(raw, 64)
	// The text is at most about as long as the JSON it is read from (escapes only shorten
	// it); the string returned is the buffer itself.
	ts := textScan{buf: make([]byte, 0, len(raw))}
	seen := false
	ok := r.Members(func(key string) bool {
		if key != "content" || seen {
			_, ok := r.Value()
			return ok
		}
		seen = true // gjson's Get takes a key's first value
		return ts.content(&r)
	}) && r.End()
	if !ok {
		return "", false
	}
	if len(ts.buf) == 0 {
		return "", true
	}
	return unsafe.String(&ts.buf[0], len(ts.buf)), true
}

// textScan collects the parts of a message's text, one line apart.
type textScan struct {
	buf []byte
}

// add appends a part unless it is blank (strings.TrimSpace's test).
func (ts *textScan) add(t jsonscan.String) bool {
	start := len(ts.buf)
	if start > 0 {
		ts.buf = append(ts.buf, '\n')
	}
	mark := len(ts.buf)
	switch {
	case !t.Esc:
		ts.buf = append(ts.buf, t.Raw...) // gjson's value of a string without escapes
	case !t.High || utf8.ValidString(t.Raw):
		ts.buf = t.AppendValue(ts.buf) // gjson's unescaping, byte for byte
	default:
		return false // gjson keeps invalid bytes that AppendValue replaces
	}
	if len(bytes.TrimSpace(ts.buf[mark:])) == 0 {
		ts.buf = ts.buf[:start]
	}
	return true
}

// content reads a content value: a string is a part, an array holds blocks.
func (ts *textScan) content(r *jsonscan.Reader) bool {
	switch r.Next() {
	case '"':
		t, ok := r.Str()
		return ok && ts.add(t)
	case '[':
	case 'n':
		_, ok := r.Value() // null: nothing, as gjson's Get of a missing key
		return ok
	default:
		return false
	}
	return r.Elements(func() bool { return ts.element(r) })
}

// element reads one element of a content array: a block when it is an object.
func (ts *textScan) element(r *jsonscan.Reader) bool {
	if r.Next() != '{' {
		_, ok := r.Value() // no type: nothing
		return ok
	}
	if !r.Enter() {
		return false
	}
	// The first value of each key that counts, read in one pass whatever their order.
	var typ, text, thinking, name jsonscan.String
	var args, inner string
	var have [6]bool
	str := func(i int, t *jsonscan.String) bool {
		if have[i] {
			_, ok := r.Value()
			return ok
		}
		have[i] = true
		if r.Next() != '"' {
			if i == 0 {
				_, ok := r.Value() // a type that is no string names no block kind
				return ok
			}
			return false
		}
		var ok bool
		*t, ok = r.Str()
		return ok
	}
	raw := func(i int, v *string) bool {
		var ok bool
		if have[i] {
			_, ok = r.Value()
		} else {
			have[i] = true
			*v, ok = r.Value()
		}
		return ok
	}
	ok := r.Members(func(key string) bool {
		switch key {
		case "type":
			return str(0, &typ)
		case "text":
			return str(1, &text)
		case "thinking":
			return str(2, &thinking)
		case "name":
			return str(3, &name)
		case "arguments":
			return raw(4, &args)
		case "content":
			return raw(5, &inner)
		}
		_, ok := r.Value()
		return ok
	})
	if !ok {
		return false
	}
	r.Leave()
	kind := typ.Raw
	if typ.Esc {
		kind = gjson.Parse(`"` + typ.Raw + `"`).Str
	}
	switch kind {
	case BlockText:
		return !have[1] || ts.add(text)
	case BlockThinking:
		return !have[2] || ts.add(thinking)
	case BlockToolCall:
		if have[3] && !ts.add(name) {
			return false
		}
		if !have[4] {
			return true
		}
		ar := jsonscan.NewReader(args, 64)
		return ts.arguments(&ar)
	case BlockToolResult:
		if !have[5] {
			return true
		}
		cr := jsonscan.NewReader(inner, 64)
		return ts.content(&cr)
	}
	return true
}

// arguments reads a tool call's arguments: every string in them is a part (argumentStrings).
func (ts *textScan) arguments(r *jsonscan.Reader) bool {
	switch r.Next() {
	case '"':
		t, ok := r.Str()
		return ok && ts.add(t)
	case '{':
		if !r.Enter() {
			return false
		}
		if !r.Members(func(string) bool { return ts.arguments(r) }) {
			return false
		}
		r.Leave()
		return true
	case '[':
		return r.Elements(func() bool { return ts.arguments(r) })
	}
	_, ok := r.Value() // numbers, booleans, null: no text
	return ok
}
