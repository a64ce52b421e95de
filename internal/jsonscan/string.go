package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// String is a string token as read: Raw is its text between the quotes; Esc and High report
// escapes and bytes >= 0x80 in it. Its methods rely on Str's checks: make one only with Str.
//
// It is kept to these three words: a fourth (counting escapes for StrRunes) made every string
// read cost a few percent more, on the save path that never asks for the count; StrRunes
// counts in the Reader instead.
type String struct {
	Raw       string
	Esc, High bool
}

// Plain reports whether the string's value is its raw text: no escapes, valid UTF-8.
func (t String) Plain() bool { return !t.Esc && (!t.High || utf8.ValidString(t.Raw)) }

// StrRunes reads a string token as Str does and returns also the number of characters of
// its value as encoding/json and gjson decode it: each escape one, a \u high surrogate
// followed by a \u low surrogate one together, and each byte that is not UTF-8 one (as
// utf8.RuneCountInString counts it).
func (r *Reader) StrRunes() (String, int, bool) {
	r.extra = 0
	t, ok := r.Str()
	n := len(t.Raw)
	if t.High {
		n = utf8.RuneCountInString(t.Raw)
	}
	return t, n - r.extra, ok
}

// Str reads a string token. A string that is not valid JSON (a control character, a bad
// escape, no closing quote) fails.
func (r *Reader) Str() (String, bool) {
	var t String
	if r.Next() != '"' {
		return t, false
	}
	s := r.s
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	start := r.i + 1
	for i := start; ; {
		// Eight bytes at a time while none is special ('"', '\\', a control character) or
		// beyond ASCII: long texts are mostly such runs, and a byte-at-a-time loop was most
		// of the reading.
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
			t.Raw = s[start:i]
			r.i = i + 1
			if t.High && r.countWide {
				r.addWide(t.Raw)
			}
			if r.OnString != nil && !r.OnString(t) {
				return t, false
			}
			return t, true
		case c == '\\':
			t.Esc = true
			if i+1 < len(s) && shortEscape[s[i+1]] { // most escapes: \n, \" and the like
				i += 2
				r.extra++
				continue
			}
			n := escapeLen(s, i)
			if n == 0 {
				return t, false
			}
			if isHighSurrogate(s[i+2:i+6]) && escapeLen(s, i+6) == 6 && isLowSurrogate(s[i+8:i+12]) {
				n = 12 // a pair: one character
			}
			r.extra += n - 1
			i += n
		case c < 0x20:
			return t, false
		default:
			t.High = t.High || c >= utf8.RuneSelf
			i++
		}
	}
}

// addWide counts, for CompactRunes, the bytes of raw beyond the first of each multi-byte
// character. It stays out of line: inlined, its loop crowded Str's registers.
//
//go:noinline
func (r *Reader) addWide(raw string) { r.wide += len(raw) - utf8.RuneCountInString(raw) }

// AppendValue appends the string's value as encoding/json decodes it (and as gjson's
// unescaping followed by a replacement of invalid UTF-8 does): escapes decoded, a \u surrogate
// pair joined, any other surrogate escape and every byte that is not UTF-8 replaced by U+FFFD.
func (t String) AppendValue(dst []byte) []byte {
	s := t.Raw
	if t.Plain() {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		j := PlainRun(s, i) // no '"' or control character in a string read by Str
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

// PlainRun returns the index of the first byte from s[i] on that is special in a JSON string
// ('"', '\\', a control character) or beyond ASCII, len(s) if none: what lies before it is
// copied as it is, reading or writing. It looks at eight bytes at a time.
func PlainRun(s string, i int) int {
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

// special8 has a byte's high bit set for each byte of x (eight bytes of text, the first in the
// lowest byte) that is '"', '\\', a control character or beyond ASCII, and maybe for bytes
// after such a byte, never before (a borrow runs upwards): the lowest bit set marks the first.
func special8(x uint64) uint64 {
	return (below(x, 0x20) | zeroByte(x^'"'*lsb) | zeroByte(x^'\\'*lsb) | x) & msb
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

// shortEscape holds the characters that complete a two-byte escape.
var shortEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// unescapeByte maps the character after '\\' in a two-byte escape to what it stands for.
var unescapeByte = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escapeLen returns the length of the valid escape at s[i], 0 if there is none.
func escapeLen(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\\' {
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

// isHighSurrogate and isLowSurrogate read four hex digits (checked by escapeLen).
func isHighSurrogate(h string) bool { r := hex4(h); return 0xD800 <= r && r < 0xDC00 }
func isLowSurrogate(h string) bool  { r := hex4(h); return 0xDC00 <= r && r < 0xE000 }

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
