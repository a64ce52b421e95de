package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

func testList(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	for i, c := range []struct{ id, wd, name, preview string }{
		{"a", "/w1", "Alpha", "fix the LOGIN bug"},
		{"b", "/w2/", "beta", "write docs"},
		{"c", "/w1/", "", "Login page"},
		{"d", "/w2", "delta", ""},
	} {
		create(t, s, c.id, c.wd, t0)
		appendJSON(t, s, c.id, storage.Meta{Name: c.name, Preview: c.preview, Updated: t0.Add(time.Duration(i) * time.Minute)}, `{"x":1}`)
	}
	// Same Updated as c: ties go by id.
	appendJSON(t, s, "a", storage.Meta{Name: "Alpha", Preview: "fix the LOGIN bug", Updated: t0.Add(2 * time.Minute)}, `{"x":2}`)
	ids := func(q storage.ListQuery) string {
		l, err := s.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range l {
			out = append(out, m.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		q    storage.ListQuery
		want string
	}{
		{storage.ListQuery{}, "d,a,c,b"},
		{storage.ListQuery{WorkingDir: "/w1"}, "a,c"},
		{storage.ListQuery{WorkingDir: "/w2/"}, "d,b"},
		{storage.ListQuery{WorkingDir: "/w3"}, ""},
		{storage.ListQuery{Text: "login"}, "a,c"},
		{storage.ListQuery{Text: "ALPHA"}, "a"},
		{storage.ListQuery{Text: "login", WorkingDir: "/w2"}, ""},
		{storage.ListQuery{Limit: 2}, "d,a"},
		{storage.ListQuery{After: &storage.ListPosition{Updated: t0.Add(2 * time.Minute), ID: "a"}}, "c,b"},
		{storage.ListQuery{After: &storage.ListPosition{Updated: t0.Add(2 * time.Minute), ID: "c"}, Limit: 5}, "b"},
		{storage.ListQuery{After: &storage.ListPosition{Updated: t0.Add(3 * time.Minute), ID: "d"}, WorkingDir: "/w1"}, "a,c"},
	} {
		if got := ids(tc.q); got != tc.want {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func testListPaging(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	const n = 57
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s%03d", i)
		create(t, s, id, "/w", t0)
		// Several sessions share each Updated, so pages must break ties by id.
		appendJSON(t, s, id, storage.Meta{Updated: t0.Add(time.Duration(i/3) * time.Second)}, `{"x":1}`)
	}
	seen := map[string]bool{}
	var after *storage.ListPosition
	for page := 0; ; page++ {
		l, err := s.List(ctx, storage.ListQuery{After: after, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range l {
			if seen[m.ID] {
				t.Fatalf("page %d repeats %s", page, m.ID)
			}
			seen[m.ID] = true
		}
		if len(l) < 10 {
			break
		}
		last := l[len(l)-1]
		after = &storage.ListPosition{Updated: last.Updated, ID: last.ID}
	}
	if len(seen) != n {
		t.Fatalf("paged through %d sessions, want %d", len(seen), n)
	}
}

// testListFolding: the text filter folds case as Go's strings.ToLower does (non-ASCII too),
// and working directories compare without trailing separators of either kind.
func testListFolding(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	for i, c := range []struct{ id, wd, name, preview string }{
		{"a", `C:\work\`, "École ÜBER", ""},
		{"b", `C:\work`, "", "straße ΣΊΣΥΦΟΣ"},
		{"c", "/w//", "100% done_", "a_b"},
	} {
		create(t, s, c.id, c.wd, t0)
		appendJSON(t, s, c.id, storage.Meta{Name: c.name, Preview: c.preview, Updated: t0.Add(time.Duration(i) * time.Minute)}, `{"x":1}`)
	}
	ids := func(q storage.ListQuery) string {
		l, err := s.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range l {
			out = append(out, m.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		q    storage.ListQuery
		want string
	}{
		{storage.ListQuery{Text: "école"}, "a"},
		{storage.ListQuery{Text: "über"}, "a"},
		{storage.ListQuery{Text: "STRASSE"}, ""},
		{storage.ListQuery{Text: "STRAßE"}, "b"},
		{storage.ListQuery{Text: "σίσυφοσ"}, "b"},
		{storage.ListQuery{Text: "%"}, "c"},
		{storage.ListQuery{Text: "_"}, "c"},
		{storage.ListQuery{Text: "e_"}, "c"},
		{storage.ListQuery{WorkingDir: `C:\work`}, "b,a"},
		{storage.ListQuery{WorkingDir: `C:\work\\`}, "b,a"},
		{storage.ListQuery{WorkingDir: "/w"}, "c"},
		{storage.ListQuery{WorkingDir: "/w/"}, "c"},
	} {
		want := ""
		// The reference: storage.Selects over every session.
		all, _ := s.List(ctx, storage.ListQuery{})
		var ref []string
		for _, m := range all {
			if tc.q.Selects(&m) {
				ref = append(ref, m.ID)
			}
		}
		want = strings.Join(ref, ",")
		if want != tc.want {
			t.Fatalf("test table disagrees with storage.Selects for %+v: %q vs %q", tc.q, want, tc.want)
		}
		if got := ids(tc.q); got != tc.want {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}
