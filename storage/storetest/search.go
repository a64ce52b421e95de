package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// The search subtests run for stores that implement storage.Searcher, opened with Docs as
// their DocsFunc. A record appended by any handle must be found by every other within
// searchFresh (storage.Searcher's promise); a backend that indexes in the same transaction
// finds it at once. Under the race detector the bound is raceSlowdown times longer: a run of
// -race on a 2-core machine at load 8-12 once missed the one-second bound (a 100 ms batching
// delay, then a transaction of SQLite instrumented by the detector).
const searchFresh = time.Second * raceSlowdown

// searchRebuild bounds how long search waits for an index that is being rebuilt.
const searchRebuild = 10 * time.Second

// searchTests are the Searcher subtests, run by testSearch.
var searchTests = []struct {
	name string
	fn   func(t *testing.T, b Backend)
}{
	{"QueryForms", testSearchForms},
	{"Ranking", testSearchRanking},
	{"Summaries", testSearchSummaries},
	{"Filters", testSearchFilters},
	{"Paging", testSearchPaging},
	{"BadInput", testSearchBadInput},
	{"Delete", testSearchDelete},
	{"SecondHandle", testSearchSecondHandle},
	{"Rename", testSearchRename},
	{"Relevance", testSearchRelevance},
}

// testSearch runs the search subtests when the backend's stores implement storage.Searcher.
func testSearch(t *testing.T, b Backend) {
	s := b.Open(t, b.New(t))
	_, ok := s.(storage.Searcher)
	s.Close()
	if !ok {
		t.Skip("the store does not implement storage.Searcher")
	}
	for _, tc := range searchTests {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := b.Skip["Search/"+tc.name]; ok {
				t.Skip("known defect: " + why)
			}
			tc.fn(t, b)
		})
	}
}

// msg is a message record in memory's format, as Docs reads it.
type msg struct {
	id, role, text string
	at             time.Time
	files          []string // read through a tool call
}

func (m msg) json() string {
	content := []map[string]any{{"type": "text", "text": m.text}}
	for _, f := range m.files {
		content = append(content, map[string]any{"type": "tool_call", "id": "c-" + m.id, "name": "read", "arguments": map[string]any{"path": f}})
	}
	b, _ := json.Marshal(map[string]any{"type": "message", "id": m.id, "ts": m.at.Format(time.RFC3339Nano),
		"message": map[string]any{"role": m.role, "content": content}})
	return string(b)
}

func summary(id, text string, at time.Time, files ...string) string {
	b, _ := json.Marshal(map[string]any{"type": "compaction", "id": id, "ts": at.Format(time.RFC3339Nano),
		"compaction": map[string]any{"summary": text, "first_kept_id": "x", "read_files": files, "modified_files": []string{}}})
	return string(b)
}

// saveMsgs appends msgs as one batch.
func saveMsgs(t *testing.T, s storage.Store, id string, msgs ...msg) {
	t.Helper()
	objs := make([]string, len(msgs))
	for i, m := range msgs {
		objs[i] = m.json()
	}
	appendJSON(t, s, id, storage.Meta{Name: "n-" + id}, objs...)
}

// search runs q (parsed from query, "" for none) and fails the test on error.
//
// An index being rebuilt (after a redaction rewrite, say) may answer ErrSearchUnavailable for
// a while, as storage.Searcher allows: search waits up to searchRebuild for it.
func search(t *testing.T, s storage.Store, query string, q storage.SearchQuery) storage.SearchResult {
	t.Helper()
	res, err := trySearch(s, query, q)
	for deadline := time.Now().Add(searchRebuild); errors.Is(err, storage.ErrSearchUnavailable) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		res, err = trySearch(s, query, q)
	}
	if err != nil {
		t.Fatalf("search %q: %v", query, err)
	}
	return res
}

func trySearch(s storage.Store, query string, q storage.SearchQuery) (storage.SearchResult, error) {
	if query != "" {
		m, err := fts.Parse(query)
		if err != nil {
			return storage.SearchResult{}, err
		}
		q.Match = m
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	return s.(storage.Searcher).Search(context.Background(), q)
}

// hitIDs returns the hits as "session/entry" in order.
func hitIDs(res storage.SearchResult) []string {
	out := []string{}
	for _, h := range res.Hits {
		out = append(out, h.SessionID+"/"+h.EntryID)
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// testSearchForms checks every query form against fts.Query.Matches, the reference meaning,
// on texts made to exercise them.
func testSearchForms(t *testing.T, b Backend) {
	s, _ := open(t, b)
	texts := []string{
		"zebrafish quokka live in the lab",
		"quokka zebrafish, reversed order",
		"only a zebrafish here",
		"the exact phrase appears here",
		"phrase exact, words swapped",
		"call parseConfig(path) to load it",
		"parse_config and ParseConfigFile differ",
		"edited internal/auth/login.go:42 today",
		"see /home/me/other/login.go and auth.go",
		"timeout while connecting; conn reset by peer",
		"timeout only",
		"Über straße naïve 東京都",
		"foo-bar baz",
		"alphabet soup and alpha particles",
	}
	create(t, s, "f", "/w", t0)
	var msgs []msg
	for i, text := range texts {
		msgs = append(msgs, msg{id: fmt.Sprintf("e%02d", i), role: "user", text: text, at: t0.Add(time.Duration(i) * time.Minute)})
	}
	saveMsgs(t, s, "f", msgs...)
	for _, query := range []string{
		"zebrafish quokka", "quokka zebrafish", "+quokka zebrafish", "zebrafish +quokka", `"exact phrase"`, `"phrase exact"`,
		"the exact phrase", "what live in the lab", "in the", "only here -zebrafish", `quokka "exact phrase"`, "pars*", "parseconfig",
		"ParseConfig", "parse_config", "auth/login.go", "login.go", "internal", "timeout -conn", `timeout -"conn reset"`,
		"über", "東京", "京都", "foo-bar", "alpha*", "alpha", "zebrafish -quokka", "nomatchword",
	} {
		q, err := fts.Parse(query)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{}
		for i, text := range texts {
			if q.Matches(text) {
				want = append(want, fmt.Sprintf("f/e%02d", i))
			}
		}
		got := sorted(hitIDs(search(t, s, query, storage.SearchQuery{})))
		if !slices.Equal(got, want) {
			t.Errorf("query %q: found %v, want %v", query, got, want)
		}
	}
	// Spot checks of what the contract promises, in case the oracle and the texts drift.
	for query, want := range map[string]string{
		"quokka zebrafish": "f/e00 f/e01 f/e02", "+quokka zebrafish": "f/e00 f/e01", `"exact phrase"`: "f/e03", "auth/login.go": "f/e07",
		"pars*": "f/e05 f/e06", "timeout -conn": "f/e10",
	} {
		if got := strings.Join(sorted(hitIDs(search(t, s, query, storage.SearchQuery{}))), " "); got != want {
			t.Errorf("query %q: found %s, want %s", query, got, want)
		}
	}
}

// testSearchRanking: more occurrences first, a short entry before a long one that mentions
// the word as often, and among equals the newer first; hits carry a decreasing score.
func testSearchRanking(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "r", "/w", t0)
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 8)
	saveMsgs(t, s, "r",
		msg{id: "once", role: "user", text: "needle " + filler, at: t0},
		msg{id: "thrice", role: "user", text: "needle needle needle " + filler, at: t0},
		msg{id: "long", role: "user", text: "needle " + strings.Repeat(filler, 30), at: t0.Add(2 * time.Hour)},
		msg{id: "old", role: "user", text: "haystack needle " + filler, at: t0.Add(time.Minute)},
		msg{id: "new", role: "user", text: "haystack needle " + filler, at: t0.Add(time.Hour)},
	)
	res := search(t, s, "needle", storage.SearchQuery{})
	got := hitIDs(res)
	pos := func(id string) int { return slices.Index(got, "r/"+id) }
	if len(got) != 5 {
		t.Fatalf("found %v", got)
	}
	if pos("thrice") > pos("once") {
		t.Errorf("three occurrences ranked below one: %v", got)
	}
	if pos("long") < pos("once") {
		t.Errorf("a long entry ranked above a short one with as many occurrences: %v", got)
	}
	for i := 1; i < len(res.Hits); i++ {
		if res.Hits[i].Score > res.Hits[i-1].Score {
			t.Errorf("scores not decreasing: %v", res.Hits)
		}
	}
	res = search(t, s, "+haystack +needle", storage.SearchQuery{})
	if got := strings.Join(hitIDs(res), " "); got != "r/new r/old" {
		t.Errorf("equal entries: %s, want the newer first", got)
	}
	if h := res.Hits[0]; h.Seq != 5 || h.Kind != fts.KindMessage || h.Role != "user" || !h.Time.Equal(t0.Add(time.Hour)) || h.WorkingDir != "/w" {
		t.Errorf("hit = %+v", h)
	}
}

// testSearchSummaries: a compaction's summary is found, as kind summary.
func testSearchSummaries(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "c", "/w", t0)
	saveMsgs(t, s, "c", msg{id: "m1", role: "assistant", text: "we chose the flamingo design", at: t0})
	appendJSON(t, s, "c", storage.Meta{}, summary("k1", "Summary: the flamingo design was chosen over heron", t0.Add(time.Hour), "/w/design.md"))
	res := search(t, s, "flamingo", storage.SearchQuery{})
	if got := strings.Join(sorted(hitIDs(res)), " "); got != "c/k1 c/m1" {
		t.Fatalf("found %s", got)
	}
	res = search(t, s, "flamingo", storage.SearchQuery{Kind: fts.KindSummary})
	if len(res.Hits) != 1 || res.Hits[0].EntryID != "k1" || res.Hits[0].Kind != fts.KindSummary || res.Hits[0].Seq != 2 {
		t.Fatalf("kind summary: %+v", res.Hits)
	}
	if got := hitIDs(search(t, s, "heron", storage.SearchQuery{Kind: fts.KindMessage})); len(got) != 0 {
		t.Fatalf("kind message found the summary: %v", got)
	}
	if got := hitIDs(search(t, s, "", storage.SearchQuery{File: "/w/design.md"})); strings.Join(got, " ") != "c/k1" {
		t.Fatalf("summary's files: %v", got)
	}
}

// testSearchFilters checks each filter alone and combined.
func testSearchFilters(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/proj/a", t0)
	create(t, s, "b", "/proj/b/", t0)
	saveMsgs(t, s, "a",
		msg{id: "a1", role: "user", text: "kiwi one", at: t0, files: []string{"internal/auth/login.go"}},
		msg{id: "a2", role: "assistant", text: "kiwi two", at: t0.Add(time.Hour), files: []string{"/etc/hosts"}},
	)
	saveMsgs(t, s, "b",
		msg{id: "b1", role: "user", text: "kiwi three", at: t0.Add(2 * time.Hour), files: []string{"/proj/b/internal/auth/login.go"}},
		msg{id: "b2", role: "assistant", text: "kiwi four", at: t0.Add(3 * time.Hour)},
	)
	for _, tc := range []struct {
		name, query string
		q           storage.SearchQuery
		want        string
	}{
		{"session", "kiwi", storage.SearchQuery{SessionID: "a"}, "a/a1 a/a2"},
		{"working dir", "kiwi", storage.SearchQuery{WorkingDir: "/proj/b"}, "b/b1 b/b2"},
		{"working dir trailing slash", "kiwi", storage.SearchQuery{WorkingDir: "/proj/a/"}, "a/a1 a/a2"},
		{"role", "kiwi", storage.SearchQuery{Role: "assistant"}, "a/a2 b/b2"},
		{"kind", "kiwi", storage.SearchQuery{Kind: fts.KindMessage}, "a/a1 a/a2 b/b1 b/b2"},
		{"since inclusive", "kiwi", storage.SearchQuery{Since: t0.Add(2 * time.Hour)}, "b/b1 b/b2"},
		{"until inclusive", "kiwi", storage.SearchQuery{Until: t0.Add(time.Hour)}, "a/a1 a/a2"},
		{"since and until", "kiwi", storage.SearchQuery{Since: t0.Add(time.Hour), Until: t0.Add(2 * time.Hour)}, "a/a2 b/b1"},
		{"file absolute", "kiwi", storage.SearchQuery{File: "/proj/a/internal/auth/login.go"}, "a/a1"},
		{"file absolute unclean", "kiwi", storage.SearchQuery{File: "/proj/a/internal/../internal/auth/login.go"}, "a/a1"},
		{"file relative to each working dir", "kiwi", storage.SearchQuery{File: "internal/auth/login.go"}, "a/a1 b/b1"},
		{"file relative within a session", "kiwi", storage.SearchQuery{File: "internal/auth/login.go", SessionID: "b"}, "b/b1"},
		{"file relative within a dir", "kiwi", storage.SearchQuery{File: "internal/auth/login.go", WorkingDir: "/proj/a"}, "a/a1"},
		{"file only, newest first", "", storage.SearchQuery{File: "internal/auth/login.go"}, "b/b1 a/a1"},
		{"file nowhere", "", storage.SearchQuery{File: "nope.go"}, ""},
		{"all combined", "kiwi", storage.SearchQuery{SessionID: "a", WorkingDir: "/proj/a", Role: "user", Kind: fts.KindMessage,
			Since: t0, Until: t0, File: "/proj/a/internal/auth/login.go"}, "a/a1"},
		{"unknown session", "kiwi", storage.SearchQuery{SessionID: "zz"}, ""},
	} {
		got := hitIDs(search(t, s, tc.query, tc.q))
		if tc.query != "" {
			got = sorted(got)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: found %v, want %s", tc.name, got, tc.want)
		}
	}
}

// testSearchPaging: pages of a query hold every hit once, in the order of one big page, even
// when entries are saved between pages.
func testSearchPaging(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "p", "/w", t0)
	var msgs []msg
	for i := 0; i < 45; i++ {
		// Three hits per time, occurrences varying: ties on score and on time both happen.
		msgs = append(msgs, msg{id: fmt.Sprintf("e%02d", i), role: "user", at: t0.Add(time.Duration(i/3) * time.Minute),
			text: strings.Repeat("otter ", 1+i%4) + strings.Repeat("pad ", i%5)})
	}
	saveMsgs(t, s, "p", msgs...)
	whole := hitIDs(search(t, s, "otter", storage.SearchQuery{}))
	if len(whole) != 45 {
		t.Fatalf("one page holds %d hits", len(whole))
	}
	for _, limit := range []int{1, 7, 45} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 50 {
				t.Fatal("paging does not end")
			}
			res := search(t, s, "otter", storage.SearchQuery{Limit: limit, Cursor: cursor})
			if len(res.Hits) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(res.Hits))
			}
			got = append(got, hitIDs(res)...)
			if pages == 0 {
				// Saved after the first page: later pages neither repeat nor lose what the
				// first page's ranking put after it.
				saveMsgs(t, s, "p", msg{id: fmt.Sprintf("late%d", limit), role: "user", text: "otter otter otter otter otter", at: t0.Add(time.Hour)})
			}
			if res.NextCursor == "" {
				break
			}
			cursor = res.NextCursor
		}
		got = slices.DeleteFunc(got, func(s string) bool { return strings.HasPrefix(s, "p/late") })
		if !slices.Equal(got, whole) {
			t.Fatalf("limit %d: pages give\n%v\nwant\n%v", limit, got, whole)
		}
		whole = hitIDs(search(t, s, "otter", storage.SearchQuery{}))
		whole = slices.DeleteFunc(whole, func(s string) bool { return strings.HasPrefix(s, "p/late") })
	}
	// File-only paging, newest first.
	res := search(t, s, "", storage.SearchQuery{File: "/nowhere", Limit: 5})
	if len(res.Hits) != 0 || res.NextCursor != "" {
		t.Fatalf("empty file search: %+v", res)
	}
}

// testSearchBadInput: bad cursors, limits and ranges are errors wrapping fts.ErrBadQuery.
func testSearchBadInput(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "x", "/w", t0)
	var msgs []msg
	for i := 0; i < 5; i++ {
		msgs = append(msgs, msg{id: fmt.Sprintf("e%d", i), role: "user", text: "lemur lemur", at: t0})
	}
	saveMsgs(t, s, "x", msgs...)
	first := search(t, s, "lemur", storage.SearchQuery{Limit: 2})
	if first.NextCursor == "" {
		t.Fatal("no cursor after a partial page")
	}
	for name, q := range map[string]storage.SearchQuery{
		"garbage cursor":          {Cursor: "not-a-cursor"},
		"cursor of another query": {Cursor: first.NextCursor, Role: "assistant"},
		"limit too large":         {Limit: 101},
		"negative limit":          {Limit: -1},
		"since after until":       {Since: t0.Add(time.Hour), Until: t0},
	} {
		m, _ := fts.Parse("lemur")
		q.Match = m
		if _, err := s.(storage.Searcher).Search(context.Background(), q); !errors.Is(err, fts.ErrBadQuery) {
			t.Errorf("%s: %v, want an error wrapping fts.ErrBadQuery", name, err)
		}
	}
	if _, err := s.(storage.Searcher).Search(context.Background(), storage.SearchQuery{}); !errors.Is(err, fts.ErrBadQuery) {
		t.Errorf("neither query nor file: %v", err)
	}
	if _, err := trySearch(s, "other", storage.SearchQuery{Cursor: first.NextCursor}); !errors.Is(err, fts.ErrBadQuery) {
		t.Errorf("cursor with other words: %v", err)
	}
	m, _ := fts.Parse("lemur")
	res, err := s.(storage.Searcher).Search(context.Background(), storage.SearchQuery{Match: m})
	if err != nil || len(res.Hits) != 5 {
		t.Errorf("limit 0 (default 10): %d hits, %v", len(res.Hits), err)
	}
	res, err = s.(storage.Searcher).Search(context.Background(), storage.SearchQuery{Match: m, Limit: 100})
	if err != nil || len(res.Hits) != 5 || res.NextCursor != "" {
		t.Errorf("limit 100: %d hits, cursor %q, %v", len(res.Hits), res.NextCursor, err)
	}
}

// testSearchDelete: a deleted session is never found again, not even after an id is reused.
func testSearchDelete(t *testing.T, b Backend) {
	s, loc := open(t, b)
	create(t, s, "d", "/w", t0)
	create(t, s, "keep", "/w", t0)
	saveMsgs(t, s, "d", msg{id: "d1", role: "user", text: "capybara secret plan", at: t0})
	saveMsgs(t, s, "keep", msg{id: "k1", role: "user", text: "capybara kept", at: t0})
	if got := sorted(hitIDs(search(t, s, "capybara", storage.SearchQuery{}))); strings.Join(got, " ") != "d/d1 keep/k1" {
		t.Fatalf("before delete: %v", got)
	}
	if err := s.Delete(context.Background(), "d"); err != nil {
		t.Fatal(err)
	}
	other := b.Open(t, loc)
	defer other.Close()
	for _, st := range []storage.Store{s, other} {
		if got := hitIDs(search(t, st, "capybara", storage.SearchQuery{})); strings.Join(got, " ") != "keep/k1" {
			t.Fatalf("after delete: %v", got)
		}
	}
	create(t, s, "d", "/w", t0)
	saveMsgs(t, s, "d", msg{id: "n1", role: "user", text: "capybara again", at: t0})
	if got := sorted(hitIDs(search(t, s, "capybara", storage.SearchQuery{}))); strings.Join(got, " ") != "d/n1 keep/k1" {
		t.Fatalf("after the id was reused: %v", got)
	}
	if got := hitIDs(search(t, s, "secret", storage.SearchQuery{})); len(got) != 0 {
		t.Fatalf("the deleted session's text is found: %v", got)
	}
}

// testSearchSecondHandle: what one handle saves, another finds within searchFresh.
func testSearchSecondHandle(t *testing.T, b Backend) {
	s, loc := open(t, b)
	other := b.Open(t, loc)
	defer other.Close()
	create(t, s, "h", "/w", t0)
	for i := 0; i < 5; i++ {
		word := fmt.Sprintf("wombat%d", i)
		saveMsgs(t, s, "h", msg{id: fmt.Sprintf("e%d", i), role: "user", text: word, at: t0})
		deadline := time.Now().Add(searchFresh)
		for {
			if res := search(t, other, word, storage.SearchQuery{}); len(res.Hits) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not found by a second handle within %s of its save", word, searchFresh)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// testSearchRename: hits carry the session's current name.
func testSearchRename(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "n", "/w", t0)
	saveMsgs(t, s, "n", msg{id: "e1", role: "user", text: "pangolin", at: t0})
	appendJSON(t, s, "n", storage.Meta{Name: "renamed"})
	deadline := time.Now().Add(searchFresh)
	for {
		res := search(t, s, "pangolin", storage.SearchQuery{})
		if len(res.Hits) == 1 && res.Hits[0].SessionName == "renamed" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a rename: %+v", res.Hits)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
