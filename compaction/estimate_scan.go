package compaction

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// Counting a message's characters in one pass. Every saved message and every record read to
// build a session's state is estimated, and reading the message with gjson (a lookup per
// block and field, each string unescaped into a new one just to count its runes) cost about
// 25 µs for a 2 KB message. charScan walks the JSON once, counting the runes of the strings
// that count without building them, and gives exactly messageChars's figures: it follows what
// gjson reads from valid JSON (the first of repeated keys, the unescaping of \u escapes and
// surrogate pairs, raw bytes passed through), and it gives up (ok false) on anything else,
// which EstimateMessage then hands to messageChars: JSON that is not valid, keys written with
// escapes, blocks that are not objects, fields of unexpected types, deep nesting.

// maxScanDepth bounds the nesting charScan follows; deeper input goes to messageChars.
const maxScanDepth = 256

// Byte classes inside a JSON string.
const (
	strPlain   = iota // printable ASCII other than '"' and '\\'
	strQuote          // '"'
	strEscape         // '\\'
	strControl        // below 0x20: not valid JSON
	strHigh           // 0x80 and above: part of a multi-byte (or invalid) sequence
)

var strClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c < 0x20:
			t[c] = strControl
		case c == '"':
			t[c] = strQuote
		case c == '\\':
			t[c] = strEscape
		case c >= 0x80:
			t[c] = strHigh
		}
	}
	return t
}()

// charScan reads a message's JSON from s[i]. A method that fails leaves ok false and the
// scan's position undefined.
type charScan struct {
	s     string
	b     []byte // s, for loading 8 bytes at a time
	i     int
	depth int
	// lit counts the characters of what has been read, white space outside strings left out
	// and strings as written (escapes, quotes): a value's share is compactJSONLen of it.
	lit int
}

// scanMessageChars is messageChars(gjson.Get(msg, "content")) for msg that charScan can read;
// ok is false for anything else.
func scanMessageChars(msg string) (chars, images int, ok bool) {
	p := charScan{s: msg, b: unsafe.Slice(unsafe.StringData(msg), len(msg))}
	p.ws()
	if !p.consume('{') {
		return 0, 0, false
	}
	// Keys up to the first "content" (gjson's pick); what follows it does not matter.
	p.ws()
	if p.consume('}') {
		return 0, 0, true
	}
	for {
		key, ok := p.key()
		if !ok {
			return 0, 0, false
		}
		if key == "content" {
			return p.content()
		}
		if !p.skip() {
			return 0, 0, false
		}
		p.ws()
		if p.consume('}') {
			return 0, 0, true
		}
		if !p.consume(',') {
			return 0, 0, false
		}
	}
}

// content counts a content value: a string is one text, a list holds blocks, anything else
// counts nothing.
func (p *charScan) content() (chars, images int, ok bool) {
	p.ws()
	switch p.peek() {
	case '"':
		n, _, ok := p.str()
		return n, 0, ok
	case '[':
		return p.blocks()
	}
	return 0, 0, p.skip()
}

// blocks counts a list of block objects as messageChars does.
func (p *charScan) blocks() (chars, images int, ok bool) {
	p.i++ // '['
	if p.depth++; p.depth > maxScanDepth {
		return 0, 0, false
	}
	defer func() { p.depth-- }()
	p.ws()
	if p.consume(']') {
		return 0, 0, true
	}
	for {
		c, im, ok := p.block()
		if !ok {
			return 0, 0, false
		}
		chars += c
		images += im
		p.ws()
		if p.consume(']') {
			return chars, images, true
		}
		if !p.consume(',') {
			return 0, 0, false
		}
	}
}

// Fields of a block that count, by bit.
const (
	seenType = 1 << iota
	seenText
	seenThinking
	seenName
	seenArguments
	seenContent
)

// block counts one block. Each counted field is read at its first occurrence, as gjson's Get
// does, and counted once the type is known.
func (p *charScan) block() (chars, images int, ok bool) {
	p.ws()
	if !p.consume('{') {
		return 0, 0, false
	}
	var seen int
	var typ string
	var text, thinking, name, argChars, contentChars, contentImages int
	p.ws()
	for more := !p.consume('}'); more; {
		key, ok := p.key()
		if !ok {
			return 0, 0, false
		}
		var bit int
		switch key {
		case "type":
			bit = seenType
		case "text":
			bit = seenText
		case "thinking":
			bit = seenThinking
		case "name":
			bit = seenName
		case "arguments":
			bit = seenArguments
		case "content":
			bit = seenContent
		}
		if bit == 0 || seen&bit != 0 {
			bit = 0 // not counted: gjson reads the first of repeated keys
		}
		seen |= bit
		p.ws()
		switch bit {
		case 0:
			ok = p.skip()
		case seenType:
			start := p.i + 1
			if _, plain, ok := p.str(); !ok || !plain {
				return 0, 0, false
			}
			typ = p.s[start : p.i-1]
		case seenText:
			text, _, ok = p.str()
		case seenThinking:
			thinking, _, ok = p.str()
		case seenName:
			name, _, ok = p.str()
		case seenArguments:
			lit := p.lit
			ok = p.skip()
			argChars = p.lit - lit
		case seenContent:
			contentChars, contentImages, ok = p.content()
		}
		if !ok {
			return 0, 0, false
		}
		p.ws()
		if more = !p.consume('}'); more && !p.consume(',') {
			return 0, 0, false
		}
	}
	switch typ {
	case "text":
		return text, 0, true
	case "thinking":
		return thinking, 0, true
	case "tool_call":
		if seen&seenArguments == 0 {
			argChars = 2 // "{}"
		}
		return name + argChars, 0, true
	case "tool_result":
		return contentChars, contentImages, true
	case "image":
		return 0, 1, true
	}
	return 0, 0, true
}

// key reads an object key and the colon after it; a key written with escapes fails.
func (p *charScan) key() (string, bool) {
	p.ws()
	start := p.i + 1
	if _, plain, ok := p.str(); !ok || !plain {
		return "", false
	}
	key := p.s[start : p.i-1]
	p.ws()
	return key, p.consume(':')
}

// str reads a string at p.i and returns the runes of its value as gjson unescapes it: raw
// bytes as they are (an invalid byte counts as one rune, as in utf8.RuneCountInString), each
// escape one rune, except that a \u high surrogate followed by a \u low surrogate makes one.
// plain reports a string without escapes. A string that is not valid JSON fails.
func (p *charScan) str() (runes int, plain, ok bool) {
	s, b := p.s, p.b
	if p.i >= len(s) || s[p.i] != '"' {
		return 0, false, false
	}
	i := p.i + 1
	start, high := i, false // the current run of raw bytes, and whether it has any >= 0x80
	written := 2            // the string's characters as written, quotes included
	plain = true
	for i < len(s) {
		// Eight bytes at a time while they are all strPlain (a byte-at-a-time loop was most
		// of the scan): no byte below 0x20, no '"', no '\\', no high bit.
		if i+8 <= len(s) {
			x := binary.LittleEndian.Uint64(b[i:])
			m := (below(x, 0x20) | zeroByte(x^'"'*lsb) | zeroByte(x^'\\'*lsb) | x) & msb
			if m == 0 {
				i += 8
				continue
			}
			// The lowest flag marks the first byte that is not strPlain (a borrow can flag
			// bytes after it, never before).
			i += bits.TrailingZeros64(m) >> 3
		}
		switch strClass[s[i]] {
		case strPlain:
			i++
		case strHigh:
			high = true
			i++
		case strQuote:
			n := runCount(s[start:i], high)
			p.i = i + 1
			p.lit += written + n
			return runes + n, plain, true
		case strEscape:
			n := runCount(s[start:i], high)
			runes += n
			written += n
			plain, high = false, false
			e := 2
			if i+1 >= len(s) || !shortEscape[s[i+1]] { // most escapes are \n, \" and the like
				if e = escapeLen(s, i); e == 0 {
					return 0, false, false
				}
				if e == 6 && isHighSurrogate(s[i+2:i+6]) && escapeLen(s, i+6) == 6 && isLowSurrogate(s[i+8:i+12]) {
					e = 12
				}
			}
			runes++
			written += e
			i += e
			start = i
		default:
			return 0, false, false
		}
	}
	return 0, false, false
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

// runCount is the number of runes in a run of raw string bytes.
func runCount(s string, high bool) int {
	if !high {
		return len(s)
	}
	return utf8.RuneCountInString(s)
}

// shortEscape holds the characters that complete a two-byte escape.
var shortEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// escapeLen returns the length of the valid escape at s[i] ('\\'), 0 if there is none.
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

// skip reads any valid JSON value.
func (p *charScan) skip() bool {
	p.ws()
	if p.i >= len(p.s) {
		return false
	}
	switch c := p.s[p.i]; c {
	case '"':
		_, _, ok := p.str()
		return ok
	case '{', '[':
		return p.skipContainer(c)
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	}
	return p.number()
}

// skipContainer reads an object or an array.
func (p *charScan) skipContainer(open byte) bool {
	p.i++
	p.lit++
	if p.depth++; p.depth > maxScanDepth {
		return false
	}
	defer func() { p.depth-- }()
	close := byte(']')
	if open == '{' {
		close = '}'
	}
	p.ws()
	if p.consume(close) {
		return true
	}
	for {
		if open == '{' {
			p.ws()
			if _, _, ok := p.str(); !ok {
				return false
			}
			p.ws()
			if !p.consume(':') {
				return false
			}
		}
		if !p.skip() {
			return false
		}
		p.ws()
		if p.consume(close) {
			return true
		}
		if !p.consume(',') {
			return false
		}
	}
}

func (p *charScan) literal(lit string) bool {
	if len(p.s)-p.i < len(lit) || p.s[p.i:p.i+len(lit)] != lit {
		return false
	}
	p.i += len(lit)
	p.lit += len(lit)
	return true
}

// number reads a number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *charScan) number() bool {
	s, i := p.s, p.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		if j := digits(s, i+1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if j := digits(s, i); j > i {
			i = j
		} else {
			return false
		}
	}
	p.lit += i - p.i
	p.i = i
	return true
}

func digits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

func (p *charScan) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *charScan) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *charScan) consume(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		p.lit++
		return true
	}
	return false
}
