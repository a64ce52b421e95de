package fts

import (
	"unicode"
	"unicode/utf8"
)

// MaxTermBytes is the longest term indexed, in bytes after lower-casing. Longer runs of word
// characters are base64, minified code or giant identifiers nobody types; a SHA-512 in hex
// (128 characters) still fits.
const MaxTermBytes = 128

// Token is one term of a text and where it came from.
type Token struct {
	// Term is the lower-cased term.
	Term string
	// Start and End are the byte offsets of the term's source in the text.
	Start, End int
}

// Tokenize returns the terms of text in order; a term's position is its index.
func Tokenize(text string) []Token {
	var out []Token
	var buf []byte
	scan(text, func(start, end int) {
		var ok bool
		if buf, ok = appendLower(buf[:0], text[start:end]); ok {
			out = append(out, Token{Term: string(buf), Start: start, End: end})
		}
	})
	return out
}

// Terms returns the terms of text in order, without offsets.
func Terms(text string) []string {
	toks := Tokenize(text)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.Term
	}
	return out
}

// AppendTerms appends the terms of text to dst, each followed by one space, and returns the
// extended buffer and the number of terms. It allocates nothing beyond growing dst, which
// makes it the form an index feeds to its engine (FTS5 receives exactly these terms).
func AppendTerms(dst []byte, text string) ([]byte, int) {
	n := 0
	scan(text, func(start, end int) {
		mark := len(dst)
		var ok bool
		if dst, ok = appendLower(dst, text[start:end]); ok {
			dst = append(dst, ' ')
			n++
		} else {
			dst = dst[:mark]
		}
	})
	return dst, n
}

// appendLower appends the lower-cased s to dst; ok is false (and dst may hold a partial term
// the caller must drop) when the result would exceed MaxTermBytes.
func appendLower(dst []byte, s string) ([]byte, bool) {
	start := len(dst)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
			i += size
		}
		if len(dst)-start > MaxTermBytes {
			return dst[:start], false
		}
	}
	return dst, true
}

// asciiWord marks the ASCII bytes that belong to terms.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := 0; c < utf8.RuneSelf; c++ {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
	}
	return t
}()

// runeClass tells how a non-ASCII rune tokenizes.
func runeClass(r rune) class {
	switch {
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
		return single
	case unicode.IsLetter(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r):
		return word
	}
	return separator
}

type class uint8

const (
	separator class = iota
	word
	single // a term by itself (scripts without word separators)
)

// scan calls emit with the byte range of each term of text, in order.
func scan(text string, emit func(start, end int)) {
	start := -1
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if asciiWord[c] {
				if start < 0 {
					start = i
				}
			} else if start >= 0 {
				emit(start, i)
				start = -1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch runeClass(r) {
		case word:
			if start < 0 {
				start = i
			}
		case single:
			if start >= 0 {
				emit(start, i)
				start = -1
			}
			emit(i, i+size)
		default:
			if start >= 0 {
				emit(start, i)
				start = -1
			}
		}
		i += size
	}
	if start >= 0 {
		emit(start, len(text))
	}
}

// isWordStart reports whether the text at i begins a term (used by the query parser to tell
// an exclusion "-word" from a dash).
func isWordStart(s string) bool {
	if s == "" {
		return false
	}
	if s[0] < utf8.RuneSelf {
		return asciiWord[s[0]]
	}
	r, _ := utf8.DecodeRuneInString(s)
	return runeClass(r) != separator
}
