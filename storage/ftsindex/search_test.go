package ftsindex

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// contractIndex holds the entries the contract's examples talk about, in sessions a and b.
func contractIndex(t *testing.T) *Index {
	ix := openTest(t, "")
	feed(t, ix, sess("a"),
		doc("a", 1, "user", "zebrafish and a quokka walk into a bar"),
		doc("a", 2, "assistant", "cfg, err := parseConfig(path) // internal/auth/login.go", "/w/a/internal/auth/login.go"),
		doc("a", 3, "tool_result", "open /w/a/internal/auth/login.go: permission denied"),
		doc("a", 4, "assistant", "The parser handles configuration files.", "/w/a/README.md"),
	)
	sum := doc("b", 2, "", "Summary: we fixed the login flow in auth/login.go and renamed parseConfig.")
	sum.Kind, sum.EntryID = fts.KindSummary, "b-compaction"
	feed(t, ix, sess("b"),
		doc("b", 1, "user", "Please look at login.go.bak and the parse config step", "/w/b/login.go.bak"),
		sum,
	)
	return ix
}

func TestSearchQueryForms(t *testing.T) {
	ix := contractIndex(t)
	tests := []struct {
		query string
		want  []string // entry ids, any order
	}{
		{"zebrafish quokka", []string{"a-e1"}},
		{"quokka zebrafish", []string{"a-e1"}},
		{"QUOKKA ZebraFish", []string{"a-e1"}},
		{`"zebrafish and a quokka"`, []string{"a-e1"}},
		{`"quokka and a zebrafish"`, nil},
		{"zebra*", []string{"a-e1"}},
		{"zebra", nil},
		{"parseConfig", []string{"a-e2", "b-compaction"}},
		{"parseConfig(", []string{"a-e2", "b-compaction"}},
		{"parseconfig", []string{"a-e2", "b-compaction"}},
		{"parse*", []string{"a-e2", "a-e4", "b-e1", "b-compaction"}},
		{"config", []string{"b-e1"}}, // identifiers are whole: parseConfig is not "config"
		{"login.go", []string{"a-e2", "a-e3", "b-e1", "b-compaction"}},
		{"auth/login.go", []string{"a-e2", "a-e3", "b-compaction"}},
		{"internal/auth/login.go", []string{"a-e2", "a-e3"}},
		{"/w/a/internal/auth/login.go", []string{"a-e3"}},
		{"login.go -bak", []string{"a-e2", "a-e3", "b-compaction"}},
		{`login -"permission denied"`, []string{"a-e2", "b-e1", "b-compaction"}},
		{"login -perm*", []string{"a-e2", "b-e1", "b-compaction"}},
		{"login -auth -bak", nil},
		{"nothinglikethis", nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got := search(t, ix, Query{Match: mustParse(t, tt.query), Limit: 100})
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("%q found %v, want %v", tt.query, got, want)
			}
		})
	}
}

func TestSearchHitFields(t *testing.T) {
	ix := contractIndex(t)
	res, err := ix.Search(t.Context(), Query{Match: mustParse(t, "renamed")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 {
		t.Fatalf("hits %+v", res.Hits)
	}
	h := res.Hits[0]
	want := Hit{SessionID: "b", SessionName: "name of b", WorkingDir: "/w/b", Seq: 2, EntryID: "b-compaction",
		Kind: fts.KindSummary, Role: "", Time: t0.Add(2 * time.Minute), Score: h.Score}
	if !h.Time.Equal(want.Time) {
		t.Fatalf("time %v, want %v", h.Time, want.Time)
	}
	h.Time = want.Time
	if h != want || h.Score <= 0 || res.NextCursor != "" {
		t.Fatalf("hit %+v (next %q), want %+v", h, res.NextCursor, want)
	}
}

func TestSearchRanking(t *testing.T) {
	ix := openTest(t, "")
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 4)
	// Unrelated messages between them: no context from neighbours (TestSearchContext).
	feed(t, ix, sess("r"),
		doc("r", 1, "user", filler+"alpha beta"), // one rare word
		doc("r", 2, "user", "unrelated"),
		doc("r", 3, "user", filler+"alpha alpha alpha beta"), // more occurrences of alpha
		doc("r", 4, "user", "unrelated"),
		doc("r", 5, "user", filler+"gamma beta"), // beta alone
		doc("r", 6, "user", "unrelated"),
		doc("r", 7, "user", filler+"alpha beta"),               // same as 1, newer
		doc("r", 8, "user", filler+"beta beta beta beta beta"), // beta is common: many beta < one alpha
		doc("r", 9, "user", "unrelated"),
	)
	// "alpha" is rarer than "beta": docs with alpha rank above docs with only beta; more
	// alphas rank higher; equal scores go newest first.
	got := search(t, ix, Query{Match: mustParse(t, "alpha")})
	if want := []string{"r-e3", "r-e7", "r-e1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("alpha: %v, want %v", got, want)
	}
	res, err := ix.Search(t.Context(), Query{Match: mustParse(t, "beta")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Hits[0].EntryID != "r-e8" {
		t.Fatalf("beta: best is %s, want r-e8 (most occurrences)", res.Hits[0].EntryID)
	}
	for i := 1; i < len(res.Hits); i++ {
		if res.Hits[i].Score > res.Hits[i-1].Score {
			t.Fatalf("scores not descending: %+v", res.Hits)
		}
	}
	// Rarer words weigh more: with "alpha gamma"-free docs, a query for a word present in
	// one doc scores that doc above any doc's score for a word present in five.
	rare := search(t, ix, Query{Match: mustParse(t, "gamma")})
	if len(rare) != 1 {
		t.Fatalf("gamma: %v", rare)
	}
	rr, _ := ix.Search(t.Context(), Query{Match: mustParse(t, "gamma")})
	if rr.Hits[0].Score <= res.Hits[len(res.Hits)-1].Score {
		t.Fatalf("rare word scored %v, common word's weakest %v", rr.Hits[0].Score, res.Hits[len(res.Hits)-1].Score)
	}
}

// TestSearchContext: a message is ranked with some weight for its neighbours' scores, so a
// reply to the question's topic ranks above the same words said out of context; words are
// ranked, not all required, and an entry with more of them ranks higher.
func TestSearchContext(t *testing.T) {
	ix := openTest(t, "")
	feed(t, ix, sess("ctx"),
		doc("ctx", 1, "user", "when is the release date for the mobile app"),
		doc("ctx", 2, "assistant", "we ship on the third of march"),
		doc("ctx", 3, "user", "thanks"),
	)
	feed(t, ix, sess("alone"),
		doc("alone", 1, "user", "lunch menu"),
		doc("alone", 2, "assistant", "we ship on the third of march"),
		doc("alone", 3, "user", "lunch menu"),
	)
	got := search(t, ix, Query{Match: mustParse(t, "when do we ship the mobile release")})
	if want := []string{"ctx-e1", "ctx-e2", "alone-e2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestSearchRecencyBreaksTies(t *testing.T) {
	ix := openTest(t, "")
	// Same text in three sessions: equal scores; newest first, whatever the indexing order.
	for i, id := range []string{"mid", "old", "new"} {
		d := doc(id, 1, "user", "identical text about kiwis")
		d.Time = t0.Add(time.Duration([]int{2, 1, 3}[i]) * time.Hour)
		feed(t, ix, sess(id), d)
	}
	if got, want := search(t, ix, Query{Match: mustParse(t, "kiwis")}), []string{"new-e1", "mid-e1", "old-e1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestSearchFilters(t *testing.T) {
	ix := openTest(t, "")
	feed(t, ix, Session{ID: "p1", Created: t0, WorkingDir: "/home/me/proj"},
		doc("p1", 1, "user", "fix the widget", "/home/me/proj/internal/auth/login.go"),
		doc("p1", 2, "assistant", "widget fixed", "/home/me/proj/internal/auth/login.go", "/etc/hosts"),
		doc("p1", 3, "tool_result", "widget output"),
	)
	feed(t, ix, Session{ID: "p2", Created: t0, WorkingDir: "/home/me/other"},
		doc("p2", 1, "user", "another widget", "/home/me/other/internal/auth/login.go"),
		doc("p2", 4, "assistant", "widget in other", "/home/me/proj/internal/auth/login.go"),
	)
	w := mustParse(t, "widget")
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	tests := []struct {
		name string
		q    Query
		want []string
	}{
		{"no filter", Query{Match: w}, []string{"p1-e1", "p1-e2", "p1-e3", "p2-e1", "p2-e4"}},
		{"working_dir", Query{Match: w, WorkingDir: "/home/me/proj"}, []string{"p1-e1", "p1-e2", "p1-e3"}},
		{"working_dir unknown", Query{Match: w, WorkingDir: "/nowhere"}, nil},
		{"working_dir with trailing slash", Query{Match: w, WorkingDir: "/home/me/proj/"}, []string{"p1-e1", "p1-e2", "p1-e3"}},
		{"session_id", Query{Match: w, SessionID: "p2"}, []string{"p2-e1", "p2-e4"}},
		{"role", Query{Match: w, Role: "assistant"}, []string{"p1-e2", "p2-e4"}},
		{"kind summary", Query{Match: w, Kind: fts.KindSummary}, nil},
		{"since", Query{Match: w, Since: at(2)}, []string{"p1-e2", "p1-e3", "p2-e4"}},
		{"until", Query{Match: w, Until: at(2)}, []string{"p1-e1", "p1-e2", "p2-e1"}},
		{"since and until", Query{Match: w, Since: at(2), Until: at(3)}, []string{"p1-e2", "p1-e3"}},
		{"file absolute", Query{Match: w, File: "/home/me/proj/internal/auth/login.go"}, []string{"p1-e1", "p1-e2", "p2-e4"}},
		{"file absolute unclean", Query{Match: w, File: "/home/me/proj/internal/../internal/auth//login.go"}, []string{"p1-e1", "p1-e2", "p2-e4"}},
		{"file relative: each session's own tree", Query{Match: w, File: "internal/auth/login.go"}, []string{"p1-e1", "p1-e2", "p2-e1"}},
		{"file relative with ./", Query{Match: w, File: "./internal/auth/login.go"}, []string{"p1-e1", "p1-e2", "p2-e1"}},
		{"file relative going up", Query{Match: w, File: "../proj/internal/auth/login.go"}, []string{"p1-e1", "p1-e2", "p2-e4"}},
		{"file relative within working_dir", Query{Match: w, File: "internal/auth/login.go", WorkingDir: "/home/me/other"}, []string{"p2-e1"}},
		{"file relative within session", Query{Match: w, File: "internal/auth/login.go", SessionID: "p1"}, []string{"p1-e1", "p1-e2"}},
		{"file outside working dir", Query{Match: w, File: "/etc/hosts"}, []string{"p1-e2"}},
		{"file unknown", Query{Match: w, File: "nope.go"}, nil},
		{"file only", Query{File: "/home/me/proj/internal/auth/login.go"}, []string{"p2-e4", "p1-e2", "p1-e1"}},
		{"file only relative", Query{File: "internal/auth/login.go"}, []string{"p1-e2", "p2-e1", "p1-e1"}}, // time ties: last indexed first
		{"everything", Query{Match: w, WorkingDir: "/home/me/proj", SessionID: "p1", Role: "assistant", File: "/etc/hosts", Since: at(1), Until: at(9)}, []string{"p1-e2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := search(t, ix, tt.q)
			if tt.q.Match != nil { // ranked: compare as sets
				slices.Sort(got)
			}
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSearchPaging(t *testing.T) {
	ix := openTest(t, "")
	var docs []fts.Doc
	for i := 1; i <= 25; i++ {
		docs = append(docs, doc("pg", uint64(i), "user", "paging word "+strings.Repeat("pad ", i)))
	}
	feed(t, ix, sess("pg"), docs...)
	q := Query{Match: mustParse(t, "paging"), Limit: 10}
	var seen []string
	for page := 0; ; page++ {
		res, err := ix.Search(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			seen = append(seen, h.EntryID)
		}
		if page == 0 {
			// Docs indexed between pages do not shift the pages already planned.
			feed(t, ix, sess("pg"), doc("pg", 26, "user", "paging word"))
		}
		if res.NextCursor == "" {
			break
		}
		q.Cursor = res.NextCursor
	}
	if len(seen) != 25 {
		t.Fatalf("saw %d hits over the pages, want 25: %v", len(seen), seen)
	}
	uniq := slices.Clone(seen)
	slices.Sort(uniq)
	if len(slices.Compact(uniq)) != 25 {
		t.Fatalf("duplicates across pages: %v", seen)
	}
	// A new first page sees the new doc.
	if got := search(t, ix, Query{Match: mustParse(t, "paging"), Limit: 100}); len(got) != 26 {
		t.Fatalf("new search found %d, want 26", len(got))
	}
	// Exactly a full last page: no cursor after it.
	res, _ := ix.Search(t.Context(), Query{Match: mustParse(t, "paging"), Limit: 13})
	res, _ = ix.Search(t.Context(), Query{Match: mustParse(t, "paging"), Limit: 13, Cursor: res.NextCursor})
	if len(res.Hits) != 13 || res.NextCursor != "" {
		t.Fatalf("last page: %d hits, cursor %q", len(res.Hits), res.NextCursor)
	}
}

func TestSearchBadInput(t *testing.T) {
	ix := contractIndex(t)
	first, err := ix.Search(t.Context(), Query{Match: mustParse(t, "login"), Limit: 1})
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %v %+v", err, first)
	}
	tests := []struct {
		name string
		q    Query
		want string
	}{
		{"nothing to search", Query{}, "give a query or a file"},
		{"limit too big", Query{Match: mustParse(t, "x"), Limit: 101}, "limit 101"},
		{"limit negative", Query{Match: mustParse(t, "x"), Limit: -1}, "limit -1"},
		{"since after until", Query{Match: mustParse(t, "x"), Since: t0.Add(time.Hour), Until: t0}, "is after until"},
		{"garbage cursor", Query{Match: mustParse(t, "login"), Cursor: "garbage!"}, "not one this search returned"},
		{"cursor of another query", Query{Match: mustParse(t, "parse*"), Cursor: first.NextCursor}, "another query"},
		{"cursor with another filter", Query{Match: mustParse(t, "login"), Role: "user", Cursor: first.NextCursor}, "another query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ix.Search(t.Context(), tt.q)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want ErrInvalid saying %q", err, tt.want)
			}
		})
	}
	// The limit may change between pages.
	if _, err := ix.Search(t.Context(), Query{Match: mustParse(t, "login"), Limit: 5, Cursor: first.NextCursor}); err != nil {
		t.Fatal(err)
	}
	// After a Reset the old cursor is refused.
	if err := ix.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(t.Context(), Query{Match: mustParse(t, "login"), Limit: 1, Cursor: first.NextCursor}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("cursor after reset: %v", err)
	}
}

// TestSearchOracle compares the index with fts.Query.Matches (the reference meaning) on
// random documents and queries.
func TestSearchOracle(t *testing.T) {
	ix := openTest(t, "")
	vocab := []string{"alpha", "beta", "gamma", "delta", "parseConfig", "parse_config", "login.go", "auth/login.go",
		"internal/auth/login.go", "über", "東京", "x", "foo-bar", "alphabet", "alphanumeric", "betamax", "42", "v1.2"}
	seps := []string{" ", "\n", ", ", "(", ") ", ": ", "/", "."}
	rng := rand.New(rand.NewPCG(5, 6))
	texts := map[string]string{}
	for s := 0; s < 6; s++ {
		id := fmt.Sprintf("o%d", s)
		var docs []fts.Doc
		for i := 1; i <= 25; i++ {
			var b strings.Builder
			for range 1 + rng.IntN(25) {
				b.WriteString(vocab[rng.IntN(len(vocab))])
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			d := doc(id, uint64(i), "user", b.String())
			texts[d.EntryID] = d.Text
			docs = append(docs, d)
		}
		feed(t, ix, sess(id), docs...)
	}
	forms := []func() string{
		func() string { return vocab[rng.IntN(len(vocab))] },
		func() string { return `"` + vocab[rng.IntN(len(vocab))] + " " + vocab[rng.IntN(len(vocab))] + `"` },
		func() string { return vocab[rng.IntN(3)][:3] + "*" },
		func() string { return "-" + vocab[rng.IntN(len(vocab))] },
	}
	for i := 0; i < 200; i++ {
		var parts []string
		for range 1 + rng.IntN(3) {
			parts = append(parts, forms[rng.IntN(len(forms))]())
		}
		qs := strings.Join(parts, " ")
		q, err := fts.Parse(qs)
		if err != nil {
			continue // only exclusions
		}
		var want []string
		for id, text := range texts {
			if q.Matches(text) {
				want = append(want, id)
			}
		}
		var got []string
		cur := ""
		for {
			res, err := ix.Search(t.Context(), Query{Match: q, Limit: 100, Cursor: cur, Text: textOf})
			if err != nil {
				t.Fatalf("%q: %v", qs, err)
			}
			for _, h := range res.Hits {
				got = append(got, h.EntryID)
			}
			if cur = res.NextCursor; cur == "" {
				break
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: index found %d %v, reference %d %v", qs, len(got), got, len(want), want)
		}
	}
}

var _ = context.Background

// TestEveryMatchRanked: however many entries match, the best come first, not the newest.
func TestEveryMatchRanked(t *testing.T) {
	ix := openTest(t, "")
	var docs []fts.Doc
	for i := 1; i <= 3000; i++ {
		text := "common word and some filler text"
		if i <= 3 {
			text = "common common common common" // the best matches, but the oldest
		}
		docs = append(docs, doc("rw", uint64(i), "user", text))
	}
	feed(t, ix, sess("rw"), docs...)
	res, err := ix.Search(t.Context(), Query{Match: mustParse(t, "common"), Limit: 3})
	if err != nil || res.Windowed || len(res.Hits) != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	for _, h := range res.Hits {
		if h.Seq > 3 {
			t.Fatalf("best hits %+v", res.Hits)
		}
	}
	if n := len(searchAll(t, ix, Query{Match: mustParse(t, "common")})); n != 3000 {
		t.Fatalf("%d hits in all pages, want 3000", n)
	}
}
