package memory

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// jsonReader reads JSON text strictly (RFC 8259, with bytes that are not UTF-8 allowed inside
// strings, as encoding/json allows them) for the save path's fast readers: the one-pass
// decoding of a client's message (input_fast.go), and the gate's and the encoder's reading of
// tool-call arguments. Each of them declines what it does not recognise and leaves it to the
// general code, so jsonReader only has to be right about what it accepts: what it reads as
// valid, encoding/json reads as valid too, with the same strings.
type jsonReader struct {
	s     string
	i     int
	depth int
	// spaced records white space skipped between tokens (what compacting would remove).
	spaced bool
	// onString, when set, is called with every string value reads (object keys included);
	// returning false stops the read as a failure.
	onString func(str jsonString) bool
}

// maxReadDepth bounds the nesting jsonReader follows (encoding/json allows 10,000); deeper
// input is left to the general code.
const maxReadDepth = 512

func newJSONReader(b []byte) jsonReader {
	return jsonReader{s: unsafe.String(unsafe.SliceData(b), len(b))}
}

// jsonString is a string token as read: raw is its text between the quotes; esc and high
// report escapes and bytes >= 0x80 in it.
type jsonString struct {
	raw       string
	esc, high bool
}

// plain reports whether the string's value is its raw text: no escapes, valid UTF-8.
func (t jsonString) plain() bool { return !t.esc && (!t.high || utf8.ValidString(t.raw)) }

func (r *jsonReader) ws() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
			r.spaced = true
		default:
			return
		}
	}
}

// next skips white space and returns the next byte (0 at the end).
func (r *jsonReader) next() byte {
	r.ws()
	if r.i < len(r.s) {
		return r.s[r.i]
	}
	return 0
}

// consume skips white space and reads c if it comes next.
func (r *jsonReader) consume(c byte) bool {
	if r.next() == c {
		r.i++
		return true
	}
	return false
}

// str reads a string token.
func (r *jsonReader) str() (jsonString, bool) {
	var t jsonString
	if r.next() != '"' {
		return t, false
	}
	s := r.s
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	start := r.i + 1
	for i := start; ; {
		// Eight bytes at a time while none is special ('"', '\\', a control character) or
		// beyond ASCII: long texts are mostly such runs.
		for i+8 <= len(b) {
			if m := special8(binary.LittleEndian.Uint64(b[i : i+8])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3 // the first special byte
				break
			}
			i += 8
		}
		if i >= len(s) {
			return t, false
		}
		switch c := s[i]; {
		case c == '"':
			t.raw = s[start:i]
			r.i = i + 1
			if r.onString != nil && !r.onString(t) {
				return t, false
			}
			return t, true
		case c == '\\':
			t.esc = true
			if i+1 < len(s) && shortEscape[s[i+1]] { // most escapes: \n, \" and the like
				i += 2
				continue
			}
			n := escapeLen(s, i)
			if n == 0 {
				return t, false
			}
			i += n
		case c < 0x20:
			return t, false
		default:
			t.high = t.high || c >= utf8.RuneSelf
			i++
		}
	}
}

// special8 has a byte's high bit set for each byte of x (eight bytes of text, the first in
// the lowest byte) that is '"', '\\', a control character or beyond ASCII, and maybe for bytes
// after such a byte, never before: the lowest bit set marks the first one.
func special8(x uint64) uint64 {
	return (below(x, 0x20) | zeroByte(x^'"'*lsb) | zeroByte(x^'\\'*lsb) | x) & msb
}

// shortEscape holds the characters that complete a two-byte escape.
var shortEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// plainRun returns the index of the first byte from s[i] on that is special in a string ('"',
// '\\', a control character) or beyond ASCII, len(s) if none. It looks at eight bytes at a
// time: long texts are mostly such runs.
func plainRun(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if m := special8(binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))); m != 0 {
			return i + bits.TrailingZeros64(m)>>3 // the first special byte
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// Word arithmetic over 8 bytes at a time (the classic bit hacks): lsb and msb have the lowest
// and the highest bit of every byte set.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// zeroByte has a byte's high bit set if x has a zero byte (exact as to whether there is one).
func zeroByte(x uint64) uint64 { return (x - lsb) &^ x & msb }

// below has a byte's high bit set if x has a byte below n (n <= 128; exact as to whether
// there is one).
func below(x uint64, n byte) uint64 { return (x - uint64(n)*lsb) &^ x & msb }

// escapeLen returns the length of the valid escape at s[i] ('\\'), 0 if there is none.
func escapeLen(s string, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	switch s[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if i+6 <= len(s) && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
			return 6
		}
	}
	return 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// value reads any value and returns where it starts.
func (r *jsonReader) value() (start int, ok bool) {
	c := r.next()
	start = r.i
	switch c {
	case '"':
		_, ok = r.str()
	case '{', '[':
		ok = r.container(c)
	case 't':
		ok = r.word("true")
	case 'f':
		ok = r.word("false")
	case 'n':
		ok = r.word("null")
	default:
		ok = r.number()
	}
	return start, ok
}

// members reads an object, calling member for each key, written without escapes, with the
// reader at the key's value; member reads the value and reports whether it could. A key
// written with escapes fails.
func (r *jsonReader) members(member func(key string) bool) bool {
	if !r.consume('{') {
		return false
	}
	if r.consume('}') {
		return true
	}
	for {
		k, ok := r.str()
		if !ok || k.esc || !r.consume(':') || !member(k.raw) {
			return false
		}
		if r.consume('}') {
			return true
		}
		if !r.consume(',') {
			return false
		}
	}
}

// whole reads the text as one value with nothing after it but white space.
func (r *jsonReader) whole() bool {
	if _, ok := r.value(); !ok {
		return false
	}
	r.ws()
	return r.i == len(r.s)
}

// validJSON reports whether the reader reads raw as one JSON value: then json.Valid does too,
// and its slower scanner need not run; false says nothing (the reader declines nesting deeper
// than it follows).
func validJSON(raw []byte) bool {
	r := newJSONReader(raw)
	return r.whole()
}

// container reads an object or an array whose first byte is open.
func (r *jsonReader) container(open byte) bool {
	r.i++
	if r.depth++; r.depth > maxReadDepth {
		return false
	}
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	if r.consume(closing) {
		r.depth--
		return true
	}
	for {
		if open == '{' {
			if _, ok := r.str(); !ok || !r.consume(':') {
				return false
			}
		}
		if _, ok := r.value(); !ok {
			return false
		}
		if r.consume(closing) {
			r.depth--
			return true
		}
		if !r.consume(',') {
			return false
		}
	}
}

func (r *jsonReader) word(w string) bool {
	if len(r.s)-r.i < len(w) || r.s[r.i:r.i+len(w)] != w {
		return false
	}
	r.i += len(w)
	return true
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *jsonReader) number() bool {
	s, i := r.s, r.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	intStart := i
	i = skipDigits(s, i)
	if i == intStart || (s[intStart] == '0' && i > intStart+1) {
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i]|0x20) == 'e' {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	r.i = i
	return true
}

func skipDigits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// appendUnquoted appends the value of a string token read by str, as encoding/json decodes
// it (and as gjson's unescaping followed by inputText does): escapes decoded, a \u surrogate
// pair joined, any other surrogate escape and every byte that is not UTF-8 replaced by U+FFFD.
func appendUnquoted(dst []byte, t jsonString) []byte {
	s := t.raw
	if t.plain() {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		j := plainRun(s, i) // no '"' or control character in a string read by str
		dst = append(dst, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		if s[i] == '\\' {
			e := s[i+1]
			if e != 'u' {
				dst = append(dst, unescapeByte[e])
				i += 2
				continue
			}
			r := hex4(s[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if r < 0xDC00 && i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if lo := hex4(s[i+2 : i+6]); 0xDC00 <= lo && lo < 0xE000 {
						r = utf16.DecodeRune(r, lo)
						i += 6
					}
				}
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return dst
}

// unescapeByte maps the character after '\\' in a two-byte escape to what it stands for.
var unescapeByte = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads four hex digits (checked by escapeLen).
func hex4(h string) rune {
	var r rune
	for i := range 4 {
		c := h[i]
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
