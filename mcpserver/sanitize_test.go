package mcpserver

import "testing"

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "hello, wörld ✓", "hello, wörld ✓"},
		{"newlines and tabs kept", "a\n\tb", "a\n\tb"},
		{"bidi override", "abc\u202Edcba\u202C", "abcdcba"},
		{"bidi isolates", "\u2066x\u2069", "x"},
		{"zero width", "pa\u200Bss\u200Dword\uFEFF", "password"},
		{"tag characters", "hi\U000E0041\U000E0042", "hi"},
		{"control characters", "a\x00b\x1bc\x7f", "abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sanitize(tc.in); got != tc.want {
				t.Errorf("sanitize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
