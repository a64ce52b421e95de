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
	scanTerms(text, func(term []byte, start, end int) {
		out = append(out, Token{Term: string(term), Start: start, End: end})
	})
	return out
}

// Terms returns the terms of text in order, without offsets.
func Terms(text string) []string {
	out := []string{}
	scanTerms(text, func(term []byte, _, _ int) { out = append(out, string(term)) })
	return out
}

// AppendTerms appends the terms of text to dst, each followed by one space, and returns the
// extended buffer and the number of terms. It allocates nothing beyond growing dst.
func AppendTerms(dst []byte, text string) ([]byte, int) {
	n := 0
	scanTerms(text, func(term []byte, _, _ int) {
		dst = append(dst, term...)
		dst = append(dst, ' ')
		n++
	})
	return dst, n
}

// scanTerms calls emit with each term of text in order: its index form (lower-cased, and
// stemmed when it is a word of ASCII letters, see Stemmable) and the byte range of its source
// in text. term is only valid during the call.
func scanTerms(text string, emit func(term []byte, start, end int)) {
	var low, stem []byte
	scan(text, func(start, end int) {
		var ok bool
		if low, ok = appendLower(low[:0], text[start:end]); !ok {
			return
		}
		if Stemmable(low) {
			stem = AppendStem(stem[:0], low)
			emit(stem, start, end)
			return
		}
		emit(low, start, end)
	})
}

// ScanWords calls emit with the byte range of each word of text in order: the source of
// one term each, or of none when AppendTerm refuses it (too long). ScanWords and AppendTerm
// are the two halves of AppendTerms, for an indexer that remembers each distinct word's
// term instead of lower-casing and stemming every occurrence again: a word's term depends
// on the word alone.
func ScanWords(text string, emit func(start, end int)) { scan(text, emit) }

// AppendTerm appends the term of word (one of ScanWords' ranges) to dst: lower-cased, and
// stemmed when Stemmable. ok is false, and dst unchanged, when the word yields no term
// (longer than MaxTermBytes once lower-cased).
func AppendTerm(dst []byte, word string) ([]byte, bool) {
	start := len(dst)
	dst, ok := appendLower(dst, word)
	if !ok {
		return dst[:start], false
	}
	if Stemmable(dst[start:]) {
		dst = dst[:start+porterStem(dst[start:])] // AppendStem, in place
	}
	return dst, true
}

// Stemmable reports whether a lower-cased term is indexed by its English stem (AppendStem):
// a word of three or more ASCII letters. The decision depends on the word alone, never on
// its case or its neighbours, so a query word and the text it should find always get the
// same term: REDACTED finds "redacted", tests finds src/tests/. Terms with digits or '_'
// (max_tokens, v2), and non-ASCII words, are kept as they are.
func Stemmable(term []byte) bool {
	if len(term) < 3 {
		return false
	}
	for _, c := range term {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
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
