package message

import (
	"encoding/binary"
	"unicode/utf8"
)

// ASCII JSON. A resume page is megabytes of stored messages, most of them ASCII with a few
// non-ASCII characters (box drawing, arrows, accents) in every page. A JavaScript client, the
// most common kind, decodes a line of UTF-8 into a string before JSON.parse reads it: one
// non-ASCII character anywhere makes the whole line a two-byte string (twice the memory), and
// both the decoding and the parse take the slow path for all of it (about 40 % more client CPU
// per page, measured with the TypeScript SDK: docs/BENCHMARKS.md, issue 25). The same
// characters written as \uXXXX escapes cost a few bytes more per character and leave the line
// ASCII, which the client reads on its fast path. The JSON value is the same.

// AppendASCII appends src, a JSON text, to dst with every non-ASCII character escaped as
// \uXXXX (a surrogate pair above U+FFFF). Outside strings JSON is ASCII, so only string
// content changes, and it decodes to the same text. Bytes that are not valid UTF-8 (never in
// what sessionmem stores) become \ufffd, as encoding/json writes them.
func AppendASCII(dst, src []byte) []byte {
	for len(src) > 0 {
		n := asciiPrefix(src)
		dst = append(dst, src[:n]...)
		src = src[n:]
		for len(src) > 0 && src[0] >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(src)
			src = src[size:]
			if r >= 0x10000 {
				r -= 0x10000
				dst = appendEscape(dst, 0xd800+(r>>10))
				r = 0xdc00 + r&0x3ff
			}
			dst = appendEscape(dst, r)
		}
	}
	return dst
}

// IsASCII reports whether b holds only ASCII bytes (AppendASCII would copy it as it is).
func IsASCII(b []byte) bool { return asciiPrefix(b) == len(b) }

const hexDigits = "0123456789abcdef"

func appendEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// asciiPrefix returns the length of b's leading run of ASCII bytes, eight at a time.
func asciiPrefix(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// wireWidth is what each ASCII byte takes in the widest encoding WireChars allows for: <, >
// and & six characters (encoding/json escapes them when it writes raw JSON through
// json.Marshal, as mcp-go does on HTTP), everything else one.
var wireWidth = func() (t [utf8.RuneSelf]uint8) {
	for i := range t {
		t[i] = 1
	}
	t['<'], t['>'], t['&'] = 6, 6, 6
	return t
}()

// WireChars is the length in characters of src, a JSON text, as a transport may send it:
// written by AppendASCII (a non-ASCII character as one escape, six characters, or a surrogate
// pair, twelve) and with <, > and & escaped (six characters each). It is at least the length
// of src's value encoded by encoding/json, by AppendASCII, or by both, so a page measured with
// it stays within its budget whichever of them writes it.
func WireChars(src []byte) int {
	n := 0
	for i := 0; i < len(src); {
		if i+8 <= len(src) {
			// Eight plain ASCII bytes (most of a message) count eight.
			w := binary.LittleEndian.Uint64(src[i:])
			if w&0x8080808080808080 == 0 && !hasByte(w, '<') && !hasByte(w, '>') && !hasByte(w, '&') {
				n += 8
				i += 8
				continue
			}
		}
		if c := src[i]; c < utf8.RuneSelf {
			n += int(wireWidth[c])
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		i += size
		if r >= 0x10000 {
			n += 12
		} else {
			n += 6
		}
	}
	return n
}

// hasByte reports whether any of the eight bytes of w is c.
func hasByte(w uint64, c byte) bool {
	v := w ^ (0x0101010101010101 * uint64(c))
	return (v-0x0101010101010101)&^v&0x8080808080808080 != 0
}
