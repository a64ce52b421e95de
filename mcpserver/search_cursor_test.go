package mcpserver

import (
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
)

// A cursor session_search refuses is named once, with one hint: the answer read
// "bad search query: invalid search: the cursor belongs to another query …; search again
// without cursor; search again without cursor (or with …)", the store's wrapping and hint
// followed by the tool's.
func TestSearchBadCursorErrorText(t *testing.T) {
	f := newFixture(t, fixtureOpts{index: true})
	f.newSession("/home/me/proj", "s", 6, "lemur")
	var first memory.SearchResult
	f.ok("session_search", obj{"query": "lemur", "limit": 2}, &first)
	if first.NextCursor == "" {
		t.Fatal("no next_cursor after a partial page")
	}
	for _, tc := range []struct {
		name string
		args obj
		want string
	}{
		{"other query", obj{"query": "question", "limit": 2, "cursor": first.NextCursor}, "the cursor belongs to another query"},
		{"other filter", obj{"query": "lemur", "role": "user", "limit": 2, "cursor": first.NextCursor}, "the cursor belongs to another query"},
		{"garbage", obj{"query": "lemur", "cursor": "not-a-cursor"}, `cursor "not-a-cursor" is not one this search returned`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.at(t).fails("session_search", tc.args, tc.want, "search again without cursor")
			if !strings.HasPrefix(got, "session_search: "+tc.want) {
				t.Errorf("error %q does not start with session_search: %s", got, tc.want)
			}
			for _, w := range []string{"bad search query", "invalid search"} {
				if strings.Contains(got, w) {
					t.Errorf("error %q carries the store's wrapping %q", got, w)
				}
			}
			if n := strings.Count(got, "search again without cursor"); n != 1 {
				t.Errorf("error %q gives the hint %d times, want once", got, n)
			}
		})
	}
}
