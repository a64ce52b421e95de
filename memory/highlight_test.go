package memory

import (
	"fmt"
	"testing"
)

func TestHighlights(t *testing.T) {
	tests := []struct{ query, text, want string }{
		{"retry backoff", "…the client now waits with backoff and retry", "[backoff retry]"},
		{"parseConfig", "call parseConfig(x) here", "[parseConfig]"},
		{`"unbalanced`, "unbalanced quote", "[]"},
		{"", "anything", "[]"},
	}
	for _, tc := range tests {
		var got []string
		for _, h := range Highlights(tc.query, tc.text) {
			got = append(got, tc.text[h[0]:h[1]])
		}
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("Highlights(%q, %q) = %s, want %s", tc.query, tc.text, s, tc.want)
		}
	}
}
