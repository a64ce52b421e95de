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
// stemmed when it is a plain English word, see Stemmed) and the byte range of its source in
// text. term is only valid during the call.
func scanTerms(text string, emit func(term []byte, start, end int)) {
	var low, stem []byte
	scan(text, func(start, end int) {
		var ok bool
		if low, ok = appendLower(low[:0], text[start:end]); !ok {
			return
		}
		if Stemmed(text, start, end) {
			stem = AppendStem(stem[:0], low)
			emit(stem, start, end)
			return
		}
		emit(low, start, end)
	})
}

// Stemmed reports whether the word text[start:end] (one term's source, as the tokenizer
// found it) is indexed by its stem: a plain English word. That is a word of ASCII letters with
// no capital after its first letter (parseConfig, HTTP and URLs are identifiers, kept whole
// and exact), not joined by punctuation to another word: the parts of paths, URLs, dotted
// names, kebab-case and calls (internal/auth/tests.go, foo.bar, fn(tests)) stay exact, so that
// they match whole and by segment as they are written. An apostrophe does not join (user's,
// don't), nor do quotes, commas and sentence punctuation.
func Stemmed(text string, start, end int) bool {
	if end-start < 3 {
		return false
	}
	for i := start; i < end; i++ {
		c := text[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') || i > start && c <= 'Z' {
			return false
		}
	}
	if start >= 2 && joiner[text[start-1]] && wordBefore(text[:start-1]) {
		return false
	}
	if end+1 < len(text) && joiner[text[end]] && isWordStart(text[end+1:]) {
		return false
	}
	return true
}

// joiner marks the punctuation that joins two words into one name (a path, a URL, a dotted
// or kebab-case name, a call) when it stands between them without white space.
var joiner = func() (t [256]bool) {
	for _, c := range []byte("/\\.-:@#$%&*+=~|<>^()[]{}") {
		t[c] = true
	}
	return t
}()

// wordBefore reports whether s ends with a word character.
func wordBefore(s string) bool { return endsWithWord(s) }

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
