package jsonscan

// Reader reads JSON text from a position on. Each method skips the white space before what it
// reads; one that fails leaves the position undefined, and the caller gives up on the text.
type Reader struct {
	s        string
	i        int
	depth    int
	maxDepth int
	// spaces counts the white space skipped between tokens: what compacting would remove.
	spaces int
	// While countWide is set (in CompactRunes), wide counts the bytes of the strings read
	// beyond the first byte of each multi-byte character.
	countWide bool
	wide      int
	// extra counts, for StrRunes, how many more bytes the escapes of the strings read take
	// than the characters they stand for.
	extra int
	// OnString, when set, is called with every string the reader reads, object keys included;
	// returning false fails the read (memory's gate checks each string with it as it goes).
	OnString func(t String) bool
}

// NewReader returns a reader at the start of s that follows containers nested up to maxDepth
// deep and fails on deeper ones, which its caller leaves to general code.
func NewReader(s string, maxDepth int) Reader {
	return Reader{s: s, maxDepth: maxDepth}
}

// Spaces returns how many bytes of white space between tokens the reader has skipped so far;
// a value's compact length is its length less the white space skipped while reading it.
func (r *Reader) Spaces() int { return r.spaces }

func (r *Reader) ws() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
			r.spaces++
		default:
			return
		}
	}
}

// Next skips white space and returns the next byte (0 at the end).
func (r *Reader) Next() byte {
	r.ws()
	if r.i < len(r.s) {
		return r.s[r.i]
	}
	return 0
}

// Consume skips white space and reads c if it comes next.
func (r *Reader) Consume(c byte) bool {
	if r.Next() == c {
		r.i++
		return true
	}
	return false
}

// Ahead skips white space and reports whether the text goes on with prefix, reading nothing.
func (r *Reader) Ahead(prefix string) bool {
	r.ws()
	return len(r.s)-r.i >= len(prefix) && r.s[r.i:r.i+len(prefix)] == prefix
}

// End skips white space and reports whether the text is all read.
func (r *Reader) End() bool {
	r.ws()
	return r.i == len(r.s)
}

// Enter counts one more level of nesting for a container its caller reads itself and reports
// false past the reader's limit; Leave, once the container is read, counts it off.
func (r *Reader) Enter() bool {
	r.depth++
	return r.depth <= r.maxDepth
}

// Leave ends a level of nesting begun with Enter.
func (r *Reader) Leave() { r.depth-- }

// Key reads an object key and the colon after it. A key written with escapes fails: callers
// compare keys as written, and leave such rare text to general code.
func (r *Reader) Key() (string, bool) {
	k, ok := r.Str()
	if !ok || k.Esc || !r.Consume(':') {
		return "", false
	}
	return k.Raw, true
}

// Members reads an object, calling member for each key (see Key) with the reader at the key's
// value; member reads the value and reports whether it could.
func (r *Reader) Members(member func(key string) bool) bool {
	if !r.Consume('{') {
		return false
	}
	if r.Consume('}') {
		return true
	}
	for {
		k, ok := r.Str() // Key, written out: a call per key showed in decoding a message
		if !ok || k.Esc || !r.Consume(':') || !member(k.Raw) {
			return false
		}
		if r.Consume('}') {
			return true
		}
		if !r.Consume(',') {
			return false
		}
	}
}

// Elements reads an array one level deeper (Enter, Leave), calling elem with the reader at
// each element; elem reads it and reports whether it could.
func (r *Reader) Elements(elem func() bool) bool {
	if !r.Enter() || !r.Consume('[') {
		return false
	}
	if !r.Consume(']') {
		for {
			if !elem() {
				return false
			}
			if r.Consume(']') {
				break
			}
			if !r.Consume(',') {
				return false
			}
		}
	}
	r.Leave()
	return true
}

// Value reads any value and returns its text as written.
func (r *Reader) Value() (string, bool) {
	r.ws()
	start := r.i
	ok := r.value()
	return r.s[start:r.i], ok
}

// CompactRunes reads any value and returns the number of characters it takes written
// compactly, without the white space outside its strings (what JSON.stringify writes for it),
// a byte that is not UTF-8 counting as one.
func (r *Reader) CompactRunes() (int, bool) {
	r.ws()
	start, spaces := r.i, r.spaces
	r.countWide, r.wide = true, 0
	ok := r.value()
	r.countWide = false
	return r.i - start - (r.spaces - spaces) - r.wide, ok
}

// Whole reads the text as one value with nothing after it but white space.
func (r *Reader) Whole() bool {
	return r.value() && r.End()
}

func (r *Reader) value() bool {
	switch c := r.Next(); c {
	case '"':
		_, ok := r.Str()
		return ok
	case '{', '[':
		return r.container(c)
	case 't':
		return r.word("true")
	case 'f':
		return r.word("false")
	case 'n':
		return r.word("null")
	}
	return r.number()
}

// container reads an object or an array whose first byte, open, is next.
func (r *Reader) container(open byte) bool {
	r.i++
	if !r.Enter() {
		return false
	}
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	if r.Consume(closing) {
		r.Leave()
		return true
	}
	for {
		if open == '{' {
			if _, ok := r.Str(); !ok || !r.Consume(':') {
				return false
			}
		}
		if !r.value() {
			return false
		}
		if r.Consume(closing) {
			r.Leave()
			return true
		}
		if !r.Consume(',') {
			return false
		}
	}
}

// Word reads the literal w (true, false or null).
func (r *Reader) Word(w string) bool {
	r.ws()
	return r.word(w)
}

func (r *Reader) word(w string) bool {
	if len(r.s)-r.i < len(w) || r.s[r.i:r.i+len(w)] != w {
		return false
	}
	r.i += len(w)
	return true
}

// number reads a number in JSON's grammar, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?,
// and stops where it ends: a leading zero ends the integer part ("01" reads "0"), and what
// follows is for the caller to refuse.
func (r *Reader) number() bool {
	s, i := r.s, r.i
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
		j := digits(s, i+1)
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
		j := digits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	r.i = i
	return true
}

func digits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}
