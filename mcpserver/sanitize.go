package mcpserver

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// sanitize removes invisible and bidirectional control characters from text that goes back to
// a model as the short text block. Such characters can hide instructions from the person
// reviewing a transcript (Trojan Source style); the structured content stays verbatim because
// it is data the client stores, not prose the model reads.
func sanitize(s string) string {
	if !hasInvisible(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, s)
}

// hasInvisible reports whether s holds a character invisible reports, as
// strings.IndexFunc(s, invisible) >= 0 does, but tests ASCII (almost all of a short text)
// byte by byte instead of decoding each rune and looking it up in Unicode's tables: every
// answer's text passes through here.
func hasInvisible(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f { // ASCII's controls; it has no Cf
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if invisible(r) {
			return true
		}
		i += n
	}
	return false
}

func invisible(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return true // bidi embeddings, overrides, isolates and marks
	case r >= 0x200B && r <= 0x200D, r == 0x2060, r == 0xFEFF, r == 0x00AD, r == 0x180E:
		return true // zero-width characters, soft hyphen
	case r >= 0xE0000 && r <= 0xE007F:
		return true // tag characters
	case r >= 0xFE00 && r <= 0xFE0F:
		return true // variation selectors
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
