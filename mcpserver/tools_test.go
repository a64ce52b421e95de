package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
)

const dir = "/home/dev/proj"

func TestSaveAndResume(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	msgs := []any{
		userMsg("u1", "Why does login fail?"),
		obj{"id": "a1", "role": "assistant", "content": []any{
			obj{"type": "text", "text": "Let me look."},
			obj{"type": "tool_call", "id": "c1", "name": "read", "arguments": obj{"path": "auth.go"}},
		}, "usage": obj{"input_tokens": 1200, "output_tokens": 40}},
		obj{"id": "t1", "role": "tool_result", "content": []any{
			obj{"type": "tool_result", "tool_call_id": "c1", "content": "package auth"},
		}},
	}
	var saved memory.SaveResult
	f.ok("session_save", obj{"working_dir": dir, "name": "login bug", "messages": msgs}, &saved)
	if saved.SessionID == "" || saved.LeafID == "" {
		t.Fatalf("save: empty ids in %+v", saved)
	}
	if got, want := saved.Saved, 3; got != want {
		t.Errorf("saved = %d, want %d", got, want)
	}
	if got, want := saved.MessageCount, 3; got != want {
		t.Errorf("message_count = %d, want %d", got, want)
	}

	t.Run("replay with the same ids stores nothing", func(t *testing.T) {
		f := f.at(t)
		var again memory.SaveResult
		res := f.ok("session_save", obj{"session_id": saved.SessionID, "messages": msgs}, &again)
		if got, want := again.Saved, 0; got != want {
			t.Errorf("saved = %d, want %d", got, want)
		}
		if got, want := again.MessageCount, 3; got != want {
			t.Errorf("message_count = %d, want %d", got, want)
		}
		if !strings.Contains(text(res), "already stored") {
			t.Errorf("text %q does not mention skipped messages", text(res))
		}
	})

	t.Run("working_dir of an existing session is kept and the answer says so", func(t *testing.T) {
		f := f.at(t)
		var out memory.SaveResult
		wdir := "/home/dev/other" // not dir: the resumes below want dir's newest session
		f.ok("session_save", obj{"working_dir": wdir, "messages": []any{userMsg("w0", "start")}}, &out)
		id := out.SessionID
		res := f.ok("session_save", obj{"session_id": id, "working_dir": "/somewhere/else",
			"messages": []any{userMsg("w1", "from another checkout")}}, &out)
		if out.WorkingDir != wdir || !strings.Contains(text(res), "working_dir was not applied: the session stays in "+wdir) {
			t.Errorf("working_dir %q, text %q", out.WorkingDir, text(res))
		}
		res = f.ok("session_save", obj{"session_id": id, "working_dir": wdir + "/",
			"messages": []any{userMsg("w2", "same place")}}, &out)
		if out.WorkingDir != wdir || strings.Contains(text(res), "not applied") {
			t.Errorf("same dir: working_dir %q, text %q", out.WorkingDir, text(res))
		}
	})

	t.Run("should_compact with a small window", func(t *testing.T) {
		f := f.at(t)
		var out memory.SaveResult
		res := f.ok("session_save", obj{"session_id": saved.SessionID, "context_window": 100,
			"messages": []any{userMsg("u2", strings.Repeat("long text ", 200))}}, &out)
		if !out.ShouldCompact {
			t.Errorf("should_compact = false with context_tokens %d and window 100", out.ContextTokens)
		}
		if !strings.Contains(text(res), "session_compact") {
			t.Errorf("text %q does not tell the agent to compact", text(res))
		}
	})

	for _, tc := range []struct {
		name string
		args obj
	}{
		{"by id", obj{"session_id": saved.SessionID}},
		{"newest of working_dir", obj{"working_dir": dir}},
	} {
		t.Run("resume "+tc.name, func(t *testing.T) {
			f := f.at(t)
			var r memory.ResumeResult
			f.ok("session_resume", tc.args, &r)
			if got, want := r.SessionID, saved.SessionID; got != want {
				t.Errorf("session_id = %q, want %q", got, want)
			}
			if got, want := len(r.Messages), 4; got != want {
				t.Fatalf("messages = %d, want %d", got, want)
			}
			first := r.Messages[0]
			if first.EntryID == "" || first.ID != "u1" || first.Role != memory.RoleUser {
				t.Errorf("first message = %+v, want entry_id set, id u1, role user", first)
			}
			if got := first.Content; len(got) != 1 || got[0].Type != "text" || got[0].Text != "Why does login fail?" {
				t.Errorf("string content not returned in block form: %+v", got)
			}
			if got, want := r.NextCursor, ""; got != want {
				t.Errorf("next_cursor = %q, want empty", got)
			}
		})
	}
}

func TestResumePagingStaysUnderMaxTokens(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	id := f.newSession(dir, "big", 40, strings.Repeat("lorem ipsum ", 60))
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page > 50 {
			t.Fatal("paging does not end")
		}
		args := obj{"session_id": id, "max_tokens": 1000}
		if cursor != "" {
			args["cursor"] = cursor
		}
		var r memory.ResumeResult
		res := f.ok("session_resume", args, &r)
		b, _ := json.Marshal(res.StructuredContent)
		if got := (len(b) + 3) / 4; got > 1000 {
			t.Fatalf("page %d: %d tokens, over max_tokens 1000", page, got)
		}
		for _, m := range r.Messages {
			if seen[m.EntryID] {
				t.Fatalf("entry %s returned twice", m.EntryID)
			}
			seen[m.EntryID] = true
		}
		if r.NextCursor == "" {
			break
		}
		if !strings.Contains(text(res), r.NextCursor) {
			t.Errorf("text does not give the next cursor: %q", text(res))
		}
		cursor = r.NextCursor
	}
	if got, want := len(seen), 80; got != want {
		t.Errorf("paged through %d messages, want %d", got, want)
	}
}

func TestListForkDeleteSearch(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	a := f.newSession(dir, "alpha work", 1, "about the retry backoff")
	b := f.newSession("/other/proj", "beta work", 2, "about caching")

	t.Run("list newest first", func(t *testing.T) {
		f := f.at(t)
		var l memory.ListResult
		res := f.ok("session_list", obj{}, &l)
		if got, want := ids(l.Sessions), []string{b, a}; !equal(got, want) {
			t.Fatalf("sessions = %v, want %v", got, want)
		}
		if l.Sessions[1].Preview == "" || l.Sessions[1].WorkingDir != dir {
			t.Errorf("session metadata incomplete: %+v", l.Sessions[1])
		}
		if !strings.Contains(text(res), a) || !strings.Contains(text(res), "alpha work") {
			t.Errorf("text %q does not list session %s", text(res), a)
		}
	})
	t.Run("list filters", func(t *testing.T) {
		f := f.at(t)
		var l memory.ListResult
		f.ok("session_list", obj{"working_dir": dir}, &l)
		if got, want := ids(l.Sessions), []string{a}; !equal(got, want) {
			t.Errorf("working_dir filter: %v, want %v", got, want)
		}
		f.ok("session_list", obj{"query": "BETA"}, &l)
		if got, want := ids(l.Sessions), []string{b}; !equal(got, want) {
			t.Errorf("query filter: %v, want %v", got, want)
		}
	})
	t.Run("list pages with cursor", func(t *testing.T) {
		f := f.at(t)
		var p1, p2 memory.ListResult
		f.ok("session_list", obj{"limit": 1}, &p1)
		if p1.NextCursor == "" {
			t.Fatal("no next_cursor with limit 1 and 2 sessions")
		}
		f.ok("session_list", obj{"limit": 1, "cursor": p1.NextCursor}, &p2)
		if got, want := append(ids(p1.Sessions), ids(p2.Sessions)...), []string{b, a}; !equal(got, want) {
			t.Errorf("pages = %v, want %v", got, want)
		}
	})
	t.Run("empty list says so", func(t *testing.T) {
		f := f.at(t)
		res := f.ok("session_list", obj{"query": "no such thing"}, nil)
		if got, want := text(res), "No sessions found."; got != want {
			t.Errorf("text = %q, want %q", got, want)
		}
	})

	t.Run("search", func(t *testing.T) {
		f := f.at(t)
		var s memory.SearchResult
		res := f.ok("session_search", obj{"query": "Retry Backoff"}, &s)
		if len(s.Matches) == 0 || s.Matches[0].SessionID != a || s.Matches[0].EntryID == "" {
			t.Fatalf("matches = %+v, want a hit in %s", s.Matches, a)
		}
		if !strings.Contains(text(res), a) {
			t.Errorf("text %q does not name the session", text(res))
		}
		f.ok("session_search", obj{"query": "retry backoff", "working_dir": "/other/proj"}, &s)
		if len(s.Matches) != 0 {
			t.Errorf("working_dir filter: got %+v", s.Matches)
		}
	})

	t.Run("fork at leaf and at an entry", func(t *testing.T) {
		f := f.at(t)
		var fk memory.ForkResult
		f.ok("session_fork", obj{"session_id": b, "name": "beta again"}, &fk)
		if fk.SessionID == "" || fk.SessionID == b || fk.ParentSessionID != b || fk.MessageCount != 4 {
			t.Errorf("fork = %+v, want a new session with 4 messages from %s", fk, b)
		}
		var r memory.ResumeResult
		f.ok("session_resume", obj{"session_id": b}, &r)
		f.ok("session_fork", obj{"session_id": b, "from_id": r.Messages[1].EntryID}, &fk)
		if got, want := fk.MessageCount, 2; got != want {
			t.Errorf("fork at second entry copied %d messages, want %d", got, want)
		}
	})

	t.Run("delete", func(t *testing.T) {
		f := f.at(t)
		var d memory.DeleteResult
		f.ok("session_delete", obj{"session_id": a}, &d)
		if !d.Deleted {
			t.Error("deleted = false")
		}
		f.fails("session_resume", obj{"session_id": a}, "session_resume:", a, "session_list")
		f.fails("session_delete", obj{"session_id": a}, "session_delete:", a)
	})
}

func TestCompactAgentFlow(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	id := f.newSession(dir, "long", 30, strings.Repeat("detail ", 100))

	var need memory.CompactResult
	res := f.ok("session_compact", obj{"session_id": id, "summarizer": "agent", "keep_recent_tokens": 1000}, &need)
	if got, want := need.Status, memory.StatusNeedsSummary; got != want {
		t.Fatalf("status = %q, want %q", got, want)
	}
	if need.CompactionID == "" || need.Prompt == "" || need.Conversation == "" {
		t.Fatalf("needs_summary incomplete: %+v", need)
	}
	if !strings.Contains(text(res), need.CompactionID) {
		t.Errorf("text %q does not give the compaction_id", text(res))
	}

	var done memory.CompactResult
	f.ok("session_compact", obj{"session_id": id, "compaction_id": need.CompactionID, "summary": "## Goal\nShip it."}, &done)
	if got, want := done.Status, memory.StatusCompacted; got != want {
		t.Fatalf("status = %q, want %q", got, want)
	}
	if done.Summarizer != "agent" || done.FirstKeptID == "" || done.TokensAfter >= done.TokensBefore {
		t.Errorf("compacted = %+v", done)
	}
	var r memory.ResumeResult
	f.ok("session_resume", obj{"session_id": id}, &r)
	if !strings.Contains(r.Summary, "Ship it.") {
		t.Errorf("resume summary = %q", r.Summary)
	}

	t.Run("stale compaction_id", func(t *testing.T) {
		f := f.at(t)
		f.ok("session_compact", obj{"session_id": id, "summarizer": "agent", "keep_recent_tokens": 1000}, &need)
		f.ok("session_save", obj{"session_id": id, "messages": []any{userMsg("late", "one more")}}, nil)
		f.fails("session_compact", obj{"session_id": id, "compaction_id": need.CompactionID, "summary": "x"},
			"stale", "session_compact again")
	})
	t.Run("extractive", func(t *testing.T) {
		f := f.at(t)
		f.ok("session_save", obj{"session_id": id, "messages": []any{userMsg("more", strings.Repeat("x ", 3000))}}, nil)
		var ex memory.CompactResult
		f.ok("session_compact", obj{"session_id": id, "summarizer": "extractive", "keep_recent_tokens": 1000}, &ex)
		if ex.Status != memory.StatusCompacted || ex.Summarizer != "extractive" {
			t.Errorf("extractive = %+v", ex)
		}
	})
	t.Run("nothing to compact", func(t *testing.T) {
		f := f.at(t)
		small := f.newSession(dir, "small", 1, "hi")
		var n memory.CompactResult
		res := f.ok("session_compact", obj{"session_id": small}, &n)
		if n.Status != memory.StatusNothingToCompact {
			t.Errorf("status = %q", n.Status)
		}
		if !strings.Contains(text(res), "Nothing to compact") {
			t.Errorf("text = %q", text(res))
		}
	})
	t.Run("sampling without a sampling client", func(t *testing.T) {
		f := f.at(t)
		fresh := f.newSession(dir, "fresh", 30, strings.Repeat("detail ", 100))
		f.fails("session_compact", obj{"session_id": fresh, "summarizer": "sampling", "keep_recent_tokens": 1000}, "sampling", "agent")
	})
	t.Run("llm not configured", func(t *testing.T) {
		f := f.at(t)
		fresh := f.newSession(dir, "fresh", 30, strings.Repeat("detail ", 100))
		f.fails("session_compact", obj{"session_id": fresh, "summarizer": "llm", "keep_recent_tokens": 1000}, "SESSIONMEM_LLM_URL")
	})
}

func TestContractErrors(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	id := f.newSession(dir, "s", 1, "hello")
	big := strings.Repeat("x", memory.MaxMessageBytes+1)
	for _, tc := range []struct {
		name string
		tool string
		args any
		want []string
	}{
		{"unknown session resume", "session_resume", obj{"session_id": "nope-123"}, []string{`no session "nope-123"`, "session_list"}},
		{"unknown session save", "session_save", obj{"session_id": "nope-123", "messages": []any{userMsg("", "x")}}, []string{`no session "nope-123"`}},
		{"unknown session compact", "session_compact", obj{"session_id": "nope-123"}, []string{`no session "nope-123"`}},
		{"unknown session fork", "session_fork", obj{"session_id": "nope-123"}, []string{`no session "nope-123"`}},
		{"unknown session delete", "session_delete", obj{"session_id": "nope-123"}, []string{`no session "nope-123"`}},
		{"invalid id", "session_resume", obj{"session_id": "has space"}, []string{"not a valid id", "A-Z"}},
		{"path traversal id", "session_delete", obj{"session_id": "../x"}, []string{`"../x" is not a valid id`}},
		{"path traversal fork", "session_fork", obj{"session_id": ".."}, []string{"not a valid id"}},
		{"malformed message role", "session_save", obj{"working_dir": dir, "messages": []any{obj{"role": "robot", "content": "x"}}}, []string{"messages[0]", "robot", "user"}},
		{"malformed message content", "session_save", obj{"working_dir": dir, "messages": []any{obj{"role": "user", "content": 42}}}, []string{"messages[0] is malformed", "role"}},
		{"message not an object", "session_save", obj{"working_dir": dir, "messages": []any{"hello"}}, []string{"messages[0] must be an object"}},
		{"messages not an array", "session_save", obj{"working_dir": dir, "messages": "hello"}, []string{`"messages" must be an array`}},
		{"missing messages", "session_save", obj{"working_dir": dir}, []string{`missing required argument "messages"`}},
		{"empty batch", "session_save", obj{"working_dir": dir, "messages": []any{}}, []string{`"messages" is empty`, "at least one"}},
		{"create without working_dir", "session_save", obj{"messages": []any{userMsg("", "x")}}, []string{"working_dir is required"}},
		{"relative working_dir", "session_save", obj{"working_dir": "proj", "messages": []any{userMsg("", "x")}}, []string{"not an absolute path"}},
		{"oversize payload", "session_save", obj{"session_id": id, "messages": []any{userMsg("", big)}}, []string{"messages[0] is", "bytes", "shorten"}},
		{"stale compaction_id", "session_compact", obj{"session_id": id, "compaction_id": "c1.bogus", "summary": "x"}, []string{"compaction_id"}},
		{"summary without compaction_id", "session_compact", obj{"session_id": id, "summary": "x"}, []string{"without compaction_id"}},
		{"bad resume cursor", "session_resume", obj{"session_id": id, "cursor": "garbage"}, []string{"cursor", "omit cursor"}},
		{"bad list cursor", "session_list", obj{"cursor": "garbage"}, []string{"cursor", "omit cursor"}},
		{"missing session_id", "session_fork", obj{}, []string{`missing required argument "session_id"`, "session_list"}},
		{"empty session_id", "session_delete", obj{"session_id": " "}, []string{`"session_id" must not be empty`}},
		{"wrong type", "session_list", obj{"limit": "ten"}, []string{`"limit" must be a whole number, got a string`}},
		{"fractional number", "session_list", obj{"limit": 2.5}, []string{`"limit" must be a whole number, got a fraction (2.5)`}},
		{"huge number", "session_list", obj{"limit": 1e30}, []string{`"limit" is out of range (1e+30)`, "a whole number up to"}},
		{"huge integer", "session_resume", obj{"session_id": "s", "max_tokens": json.RawMessage("99999999999999999999")}, []string{`"max_tokens" is out of range (99999999999999999999)`}},
		{"below minimum", "session_resume", obj{"session_id": id, "max_tokens": 10}, []string{`"max_tokens" must be at least 1000`}},
		{"unknown argument", "session_resume", obj{"sessionId": id}, []string{`unknown argument(s) "sessionId"`, "session_id"}},
		{"bad enum", "session_compact", obj{"session_id": id, "summarizer": "gpt"}, []string{`"summarizer" must be one of`}},
		{"bad bool", "session_resume", obj{"session_id": id, "prune": "yes"}, []string{`"prune" must be true or false`}},
		{"empty search", "session_search", obj{"query": ""}, []string{"query and file are both empty"}},
		{"arguments not an object", "session_list", []any{1}, []string{"arguments must be a JSON object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := f.at(t)
			got := f.fails(tc.tool, tc.args, tc.want...)
			if !strings.HasPrefix(got, tc.tool+": ") {
				t.Errorf("error %q does not start with the tool name", got)
			}
		})
	}
	// A rejected call writes nothing.
	var l memory.ListResult
	f.ok("session_list", obj{}, &l)
	if got, want := len(l.Sessions), 1; got != want {
		t.Errorf("after rejected calls: %d sessions, want %d", got, want)
	}
}

func TestResultCaps(t *testing.T) {
	const capTokens = 1500
	f := newFixture(t, fixtureOpts{server: Options{MaxResultTokens: capTokens}})
	var want []string
	for i := range 30 {
		want = append([]string{f.newSession(dir, fmt.Sprintf("session %02d %s", i, strings.Repeat("n", 150)), 1, "needle "+strings.Repeat("w", 300))}, want...)
	}
	t.Run("list pages shrink to fit", func(t *testing.T) {
		f := f.at(t)
		var got []string
		cursor := ""
		for range 40 {
			args := obj{"limit": 100}
			if cursor != "" {
				args["cursor"] = cursor
			}
			var l memory.ListResult
			res := f.ok("session_list", args, &l)
			if n := tokens(res); n > capTokens {
				t.Fatalf("list result %d tokens, cap %d", n, capTokens)
			}
			got = append(got, ids(l.Sessions)...)
			if cursor = l.NextCursor; cursor == "" {
				break
			}
		}
		if !equal(got, want) {
			t.Errorf("paged sessions = %v, want %v", got, want)
		}
	})
	t.Run("search is trimmed", func(t *testing.T) {
		f := f.at(t)
		var s memory.SearchResult
		res := f.ok("session_search", obj{"query": "needle", "limit": 100}, &s)
		if n := tokens(res); n > capTokens {
			t.Fatalf("search result %d tokens, cap %d", n, capTokens)
		}
		if len(s.Matches) == 0 || s.NextCursor == "" || !strings.Contains(text(res), "More matches") {
			t.Errorf("%d matches, text %q: want a smaller page and a cursor", len(s.Matches), text(res))
		}
	})
	t.Run("needs_summary conversation is trimmed", func(t *testing.T) {
		f := f.at(t)
		id := f.newSession(dir, "long", 30, strings.Repeat("detail ", 100))
		var c memory.CompactResult
		res := f.ok("session_compact", obj{"session_id": id, "summarizer": "agent", "keep_recent_tokens": 1000}, &c)
		if n := tokens(res); n > capTokens {
			t.Fatalf("compact result %d tokens, cap %d", n, capTokens)
		}
		if !strings.HasPrefix(c.Conversation, "[… ") {
			t.Errorf("conversation not marked as trimmed: %.80q", c.Conversation)
		}
	})
}

func TestDefaultCapHoldsForLargeStores(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for i := range 100 {
		f.newSession(dir, strings.Repeat("N", memory.MaxNameBytes-4)+fmt.Sprintf("%04d", i), 1, strings.Repeat("p", 400))
	}
	res := f.ok("session_list", obj{"limit": 100}, nil)
	if n := tokens(res); n > DefaultMaxResultTokens {
		t.Fatalf("list of 100 long-named sessions: %d tokens, cap %d", n, DefaultMaxResultTokens)
	}
}

func TestSanitizedText(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	name := "evil\u202Ename\u200B"
	id := f.newSession(dir, name, 1, "x")
	var l memory.ListResult
	res := f.ok("session_list", obj{}, &l)
	if strings.ContainsAny(text(res), "\u202E\u200B") {
		t.Errorf("text keeps invisible characters: %q", text(res))
	}
	if got := l.Sessions[0].Name; got != name || l.Sessions[0].ID != id {
		t.Errorf("structured name = %q, want verbatim %q", got, name)
	}
}

func ids(ss []memory.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
