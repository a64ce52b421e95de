package mcpserver

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// TestEncodedResult: the raw structured content is the same JSON value json.Marshal gives,
// written as ASCII, and the token estimate is never below tokens() of the result it replaces
// (the cap check stays on the safe side: escapes only add characters).
func TestEncodedResult(t *testing.T) {
	at := time.Date(2026, 11, 28, 4, 44, 0, 123, time.UTC)
	cases := []struct {
		name string
		v    any
		text string
	}{
		{"empty list", memory.ListResult{Sessions: []memory.Session{}}, "No sessions found."},
		{"ascii", memory.ListResult{Sessions: []memory.Session{{ID: "s1", Name: "fix parser", WorkingDir: "/w", CreatedAt: at, UpdatedAt: at, MessageCount: 2}}, NextCursor: "l1.x"}, "1 session"},
		{"non-ascii and html", memory.ListResult{Sessions: []memory.Session{{ID: "s2", Name: "naïve <b>&</b> — 日本語 🎉", Preview: "résumé ≈ \"quoted\"\n\ttab", CreatedAt: at, UpdatedAt: at}}}, "1 session: naïve ≈ 🎉"},
		{"search", memory.SearchResult{Matches: []memory.SearchMatch{{SessionID: "s3", Snippet: "the «error» → fixed"}}}, `"error"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, n, err := encodedResult(c.v, c.text)
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range out.RawStructuredContent {
				if b >= 0x80 || b == '\n' {
					t.Fatalf("byte %d of the structured content is %#x: not one line of ASCII", i, b)
				}
			}
			want, _ := json.Marshal(c.v)
			var got, exp any
			if err := json.Unmarshal(out.RawStructuredContent, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &exp); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, exp) {
				t.Fatalf("structured content %s, want the value of %s", out.RawStructuredContent, want)
			}
			if old := tokens(result(c.v, c.text)); n < old {
				t.Fatalf("estimate %d tokens, below the %d of the whole answer as json.Marshal writes it", n, old)
			}
		})
	}
}
