package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// TestSearchTool runs every query form of session_search v2 through the in-process client,
// over a store with the full-text index.
func TestSearchTool(t *testing.T) {
	f := newFixture(t, fixtureOpts{index: true})
	const dir = "/home/me/proj"
	var sv memory.SaveResult
	f.ok("session_save", obj{"working_dir": dir, "name": "auth fix", "messages": []any{
		obj{"id": "u1", "role": "user", "content": "the zebrafish quokka problem in parseConfig(x)"},
		obj{"id": "a1", "role": "assistant", "content": []any{obj{"type": "text", "text": "Reading it."},
			obj{"type": "tool_call", "id": "c1", "name": "read", "arguments": obj{"path": "internal/auth/login.go"}}}},
		obj{"id": "t1", "role": "tool_result", "content": []any{obj{"type": "tool_result", "tool_call_id": "c1", "content": "package auth // quokka"}}},
	}}, &sv)
	f.ok("session_save", obj{"working_dir": "/other", "messages": []any{
		obj{"id": "u1", "role": "user", "content": "quokka quokka quokka elsewhere"},
	}}, nil)
	search := func(args obj) memory.SearchResult {
		t.Helper()
		var s memory.SearchResult
		f.ok("session_search", args, &s)
		return s
	}
	// Fresh within a second.
	deadline := time.Now().Add(2 * time.Second)
	for len(search(obj{"query": "quokka"}).Matches) != 3 {
		if time.Now().After(deadline) {
			t.Fatal("saved messages not found within 2 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, tc := range []struct {
		args obj
		want int
	}{
		{obj{"query": "quokka zebrafish"}, 3}, // v3: ranked, not all required
		{obj{"query": "+quokka +zebrafish"}, 1},
		{obj{"query": "where did we see the zebrafish?"}, 1},
		{obj{"query": `"zebrafish quokka"`}, 1},
		{obj{"query": `"quokka zebrafish"`}, 0},
		{obj{"query": "zebra*"}, 1},
		{obj{"query": "quokka -zebrafish"}, 2},
		{obj{"query": "parseConfig"}, 1},
		{obj{"query": "auth/login.go"}, 1},
		{obj{"query": "quokka", "working_dir": dir}, 2},
		{obj{"query": "quokka", "session_id": sv.SessionID}, 2},
		{obj{"query": "quokka", "role": "tool_result"}, 1},
		{obj{"file": "internal/auth/login.go"}, 1},
		{obj{"file": dir + "/internal/auth/login.go", "query": "read"}, 1},
		{obj{"query": "quokka", "since": "2999-01-01T00:00:00Z"}, 0},
		{obj{"query": "quokka", "until": "2999-01-01T00:00:00Z"}, 3},
		{obj{"query": "quokka", "limit": 3}, 3},
	} {
		s := search(tc.args)
		if len(s.Matches) != tc.want {
			t.Errorf("%v: %d matches, want %d: %+v", tc.args, len(s.Matches), tc.want, s.Matches)
		}
		for _, m := range s.Matches {
			if m.Kind != "message" || m.EntryID == "" || m.Snippet == "" || m.Time.IsZero() {
				t.Errorf("%v: match %+v", tc.args, m)
			}
		}
	}
	best := search(obj{"query": "quokka"}).Matches[0]
	if !strings.Contains(best.Snippet, "quokka quokka quokka") {
		t.Errorf("ranking: best is %+v", best)
	}
	if m := search(obj{"query": "zebrafish"}).Matches[0]; m.SessionName != "auth fix" || m.Role != "user" {
		t.Errorf("match %+v", m)
	}
	// Paging.
	p1 := search(obj{"query": "quokka", "limit": 2})
	p2 := search(obj{"query": "quokka", "limit": 2, "cursor": p1.NextCursor})
	if len(p1.Matches) != 2 || p1.NextCursor == "" || len(p2.Matches) != 1 || p2.NextCursor != "" {
		t.Errorf("paging: %+v then %+v", p1, p2)
	}
	// v1 calls keep working.
	if s := search(obj{"query": "Quokka", "working_dir": "/other", "limit": 20}); len(s.Matches) != 1 {
		t.Errorf("v1 call: %+v", s)
	}
	// Delete: never found again.
	f.ok("session_delete", obj{"session_id": sv.SessionID}, nil)
	if s := search(obj{"query": "zebrafish"}); len(s.Matches) != 0 {
		t.Errorf("deleted session found: %+v", s)
	}
}

func TestSearchToolBadInput(t *testing.T) {
	f := newFixture(t, fixtureOpts{index: true})
	for _, tc := range []struct {
		args obj
		want []string
	}{
		{obj{}, []string{"query and file are both empty"}},
		{obj{"query": `"open`}, []string{"query:", "quote"}},
		{obj{"query": "-alone"}, []string{"query:"}},
		{obj{"query": "ab*"}, []string{"query:"}},
		{obj{"query": "x", "limit": 0}, []string{`"limit" must be at least 1`}},
		{obj{"query": "x", "limit": 101}, []string{`"limit" must be at most 100`}},
		{obj{"query": "x", "limit": "ten"}, []string{`"limit" must be a whole number`}},
		{obj{"query": "x", "role": "robot"}, []string{`"role" must be one of`}},
		{obj{"query": "x", "since": "yesterday"}, []string{"since", "RFC 3339"}},
		{obj{"query": "x", "until": "2026-02-30T00:00:00Z"}, []string{"until", "RFC 3339"}},
		{obj{"query": "x", "since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, []string{"since", "after until"}},
		{obj{"query": "x", "working_dir": "rel"}, []string{"working_dir", "absolute"}},
		{obj{"query": "x", "session_id": "a/b"}, []string{"session_id"}},
		{obj{"query": "x", "cursor": "garbage"}, []string{"cursor"}},
		{obj{"query": "x", "sort": "new"}, []string{`unknown argument(s) "sort"`}},
	} {
		got := f.fails("session_search", tc.args, tc.want...)
		if !strings.HasPrefix(got, "session_search: ") {
			t.Errorf("%v: %q", tc.args, got)
		}
	}
}

// TestSearchToolSnippetANSI: a snippet of colored output has no pieces of the escape codes,
// in the structured result nor in the text (memory cuts it without them).
func TestSearchToolSnippetANSI(t *testing.T) {
	f := newFixture(t, fixtureOpts{index: true})
	f.ok("session_save", obj{"working_dir": "/home/me/proj", "messages": []any{
		obj{"id": "u1", "role": "user", "content": "\x1b[31mred\x1b[0m alert"},
	}}, nil)
	var s memory.SearchResult
	deadline := time.Now().Add(2 * time.Second)
	for {
		res := f.ok("session_search", obj{"query": "alert"}, &s)
		if len(s.Matches) == 1 {
			if s.Matches[0].Snippet != "red alert" || !strings.HasSuffix(text(res), ": red alert") {
				t.Fatalf("snippet %q, text %q", s.Matches[0].Snippet, text(res))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("saved message not found within 2 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
