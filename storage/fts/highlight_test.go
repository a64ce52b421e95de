package fts

import (
	"fmt"
	"testing"
)

func TestHighlights(t *testing.T) {
	tests := []struct {
		query, text string
		want        string
	}{
		{"retry backoff", "The Retry uses exponential backoff; retry again.", "[Retry backoff retry]"},
		{`"connection reset"`, "a connection was reset; connection reset by peer", "[connection reset]"},
		{"config*", "configure the Configuration (conf)", "[configure Configuration]"},
		{"login.go", "edit internal/auth/login.go now", "[login.go]"},
		{"retry -flaky", "flaky retry", "[retry]"},
		{"absent", "nothing here", "[]"},
		{"héllo", "HÉLLO wörld", "[HÉLLO]"},
	}
	for _, tc := range tests {
		q, err := Parse(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range Highlights(tc.text, q) {
			got = append(got, tc.text[h[0]:h[1]])
		}
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("%q in %q: %s, want %s", tc.query, tc.text, s, tc.want)
		}
	}
	if Highlights("text", nil) != nil {
		t.Error("nil query highlights")
	}
}
