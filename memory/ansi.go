package memory

import "strings"

// stripANSI removes terminal escape sequences from s, as the viewer's clean (render.js) does,
// so a search snippet of a command's colored output reads "red", not "[31mred [0m" (the
// snippet would otherwise turn the ESC into a space and keep the rest). It removes a CSI
// (ESC [ parameters intermediates final byte), an OSC (ESC ] … up to BEL or ESC \, or to the
// next ESC or the end when unterminated), any other two-byte escape (ESC and a byte in @–_)
// and a lone ESC. It is a byte scan, not a regexp: a text without ESC, nearly every text,
// costs one IndexByte and no allocation.
func stripANSI(s string) string {
	i := strings.IndexByte(s, 0x1b)
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i >= 0 {
		b = append(b, s[:i]...)
		s = s[i+escLen(s[i:]):]
		i = strings.IndexByte(s, 0x1b)
	}
	return string(append(b, s...))
}

// escLen returns the length of the escape sequence at the start of s (s[0] is ESC).
func escLen(s string) int {
	if len(s) < 2 {
		return 1
	}
	switch c := s[1]; {
	case c == '[':
		j := 2
		for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f { // parameter bytes
			j++
		}
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f { // intermediate bytes
			j++
		}
		if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e { // final byte
			return j + 1
		}
		return 2 // no final byte: only "ESC [" goes, as in the viewer
	case c == ']':
		j := 2
		for j < len(s) && s[j] != 0x07 && s[j] != 0x1b {
			j++
		}
		switch {
		case j < len(s) && s[j] == 0x07:
			return j + 1
		case j+1 < len(s) && s[j+1] == '\\':
			return j + 2
		}
		return j
	case c >= 0x40 && c <= 0x5f:
		return 2
	}
	return 1
}
