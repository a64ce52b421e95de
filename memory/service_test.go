package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/local"
)

const wd = "/home/dev/project"

// newTestService opens a store in a fresh temp dir with a fixed clock that ticks a second per
// call, so ordering by updated_at is deterministic.
func newTestService(t *testing.T, opts Options) *Service {
	t.Helper()
	store, err := local.Open(t.TempDir(), local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if opts.Now == nil {
		clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		opts.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	}
	return New(store, opts)
}

func user(id, text string) Message {
	return Message{ID: id, Role: RoleUser, Content: []Block{{Type: BlockText, Text: text}}}
}

func assistantCall(id, callID, tool string, args string) Message {
	return Message{ID: id, Role: RoleAssistant, Content: []Block{
		{Type: BlockText, Text: "Let me use " + tool + "."},
		{Type: BlockToolCall, ID: callID, Name: tool, Arguments: json.RawMessage(args)},
	}}
}

func toolResult(id, callID, out string) Message {
	return Message{ID: id, Role: RoleToolResult, Content: []Block{
		{Type: BlockToolResult, ToolCallID: callID, Content: []Block{{Type: BlockText, Text: out}}},
	}}
}

func assistant(id, text string) Message {
	return Message{ID: id, Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: text}}}
}

// turn returns one realistic agent turn of 4 messages touching file.
func turn(i int, file string, outChars int) []Message {
	p := fmt.Sprintf("t%d", i)
	return []Message{
		user(p+"u", fmt.Sprintf("Step %d: please fix the bug in %s, it must keep the API stable.", i, file)),
		assistantCall(p+"a", p+"c", "read", fmt.Sprintf(`{"path":%q}`, file)),
		toolResult(p+"r", p+"c", strings.Repeat(fmt.Sprintf("line of %s ", file), outChars/12+1)),
		assistantCall(p+"e", p+"d", "edit", fmt.Sprintf(`{"path":%q,"edits":[{"oldText":"a","newText":"b"}]}`, file)),
		toolResult(p+"s", p+"d", "ok"),
		assistant(p+"z", fmt.Sprintf("I decided to change %s because the old code was wrong. Done with step %d.", file, i)),
	}
}

func mustSave(t *testing.T, s *Service, req SaveRequest) SaveResult {
	t.Helper()
	res, err := s.Save(t.Context(), req)
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	return res
}

func TestSaveCreatesAndAppends(t *testing.T) {
	s := newTestService(t, Options{})
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Name: "fix bug", Model: "m1", Messages: []Message{user("1", "hello\nworld")}})
	if res.SessionID == "" || res.Saved != 1 || res.MessageCount != 1 || res.LeafID == "" {
		t.Fatalf("unexpected result %+v", res)
	}
	res2 := mustSave(t, s, SaveRequest{SessionID: res.SessionID, Messages: []Message{assistant("2", "hi"), user("3", "next")}})
	if got, want := res2.Saved, 2; got != want {
		t.Errorf("saved = %d, want %d", got, want)
	}
	if got, want := res2.MessageCount, 3; got != want {
		t.Errorf("message_count = %d, want %d", got, want)
	}
	sess, err := s.Get(t.Context(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Name != "fix bug" || sess.Model != "m1" || sess.Preview != "hello world" || sess.MessageCount != 3 {
		t.Errorf("session = %+v", sess)
	}
}

// A working_dir given with session_id does not move the session; the answer names the
// session's own and says whether the one given was another (the same directory written
// differently is not another).
func TestSaveWorkingDirOfExistingSession(t *testing.T) {
	s := newTestService(t, Options{})
	id := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", "hello")}}).SessionID
	for i, tc := range []struct {
		dir   string
		other bool
	}{
		{"", false},
		{wd, false},
		{wd + "/", false},
		{wd + "/./", false},
		{"/elsewhere/project", true},
		{wd + "/sub", true},
	} {
		res := mustSave(t, s, SaveRequest{SessionID: id, WorkingDir: tc.dir, Messages: []Message{user(fmt.Sprint("m", i), "more")}})
		if res.WorkingDir != wd || res.OtherWorkingDir != tc.other {
			t.Errorf("working_dir %q: answer %q, other %v; want %q, %v", tc.dir, res.WorkingDir, res.OtherWorkingDir, wd, tc.other)
		}
	}
	if sess, _ := s.Get(t.Context(), id); sess.WorkingDir != wd {
		t.Errorf("session moved to %q", sess.WorkingDir)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`C:\Users\me\proj`, `c:/users/me/proj/`, true},
		{`C:\Users\me\proj`, `C:\Users\me\other`, false},
		{"/a/b", "/a/B", false},
	} {
		if got := sameDir(tc.a, tc.b); got != tc.same {
			t.Errorf("sameDir(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func TestSaveReplayIsIdempotent(t *testing.T) {
	s := newTestService(t, Options{})
	batch := []Message{user("a", "one"), assistant("b", "two")}
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: batch})
	again := mustSave(t, s, SaveRequest{SessionID: res.SessionID, Messages: batch})
	if again.Saved != 0 || again.MessageCount != 2 || again.LeafID != res.LeafID {
		t.Fatalf("replay stored something: %+v", again)
	}
	dup := mustSave(t, s, SaveRequest{SessionID: res.SessionID, Messages: []Message{user("c", "x"), user("c", "x"), assistant("", "no id")}})
	if dup.Saved != 2 || dup.MessageCount != 4 {
		t.Fatalf("duplicate ids in one batch: %+v", dup)
	}
	// The same id with other content in one batch would lose the second: refused, nothing
	// written.
	_, err := s.Save(t.Context(), SaveRequest{SessionID: res.SessionID, Messages: []Message{user("d", "first"), user("e", "other"), user("d", "second")}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `messages[2] has the id "d" of messages[0]`) {
		t.Fatalf("same id, other content: %v", err)
	}
	if got, _ := s.Get(t.Context(), res.SessionID); got.MessageCount != 4 {
		t.Fatalf("the refused save wrote: %d messages", got.MessageCount)
	}
}

func TestSaveRejectsBadInputAndWritesNothing(t *testing.T) {
	s := newTestService(t, Options{})
	base := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", "hi")}})
	big := strings.Repeat("x", MaxMessageBytes+10)
	cases := []struct {
		name string
		req  SaveRequest
		want error
		msg  string
	}{
		{"empty batch", SaveRequest{SessionID: base.SessionID}, ErrInvalid, "messages is empty"},
		{"unknown role", SaveRequest{SessionID: base.SessionID, Messages: []Message{{Role: "robot", Content: []Block{{Type: "text", Text: "x"}}}}}, ErrInvalid, "unknown role"},
		{"missing role", SaveRequest{SessionID: base.SessionID, Messages: []Message{{Content: []Block{{Type: "text", Text: "x"}}}}}, ErrInvalid, "role is missing"},
		{"empty content", SaveRequest{SessionID: base.SessionID, Messages: []Message{{Role: RoleUser}}}, ErrInvalid, "content is empty"},
		{"bad block", SaveRequest{SessionID: base.SessionID, Messages: []Message{{Role: RoleUser, Content: []Block{{Type: "video"}}}}}, ErrInvalid, "unknown block type"},
		{"tool call without id", SaveRequest{SessionID: base.SessionID, Messages: []Message{{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, Name: "read"}}}}}, ErrInvalid, "lacks id or name"},
		{"tool call args not object", SaveRequest{SessionID: base.SessionID, Messages: []Message{{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: "c", Name: "read", Arguments: json.RawMessage(`[1]`)}}}}}, ErrInvalid, "not a JSON object"},
		{"tool result without call id", SaveRequest{SessionID: base.SessionID, Messages: []Message{{Role: RoleToolResult, Content: []Block{{Type: BlockToolResult}}}}}, ErrInvalid, "tool_call_id"},
		{"oversize message", SaveRequest{SessionID: base.SessionID, Messages: []Message{user("big", big)}}, ErrInvalid, "bytes"},
		{"bad message id", SaveRequest{SessionID: base.SessionID, Messages: []Message{user("a b", "x")}}, ErrInvalid, "not a valid message id"},
		{"path traversal id", SaveRequest{SessionID: "../etc", Messages: []Message{user("1", "x")}}, ErrInvalid, "not a valid id"},
		{"dot id", SaveRequest{SessionID: "..", Messages: []Message{user("1", "x")}}, ErrInvalid, "not a valid id"},
		{"unknown session", SaveRequest{SessionID: "nope", Messages: []Message{user("1", "x")}}, ErrNotFound, "no session"},
		{"create without working_dir", SaveRequest{Messages: []Message{user("1", "x")}}, ErrInvalid, "working_dir is required"},
		{"relative working_dir", SaveRequest{WorkingDir: "project", Messages: []Message{user("1", "x")}}, ErrInvalid, "not an absolute path"},
		{"unknown parent", SaveRequest{SessionID: base.SessionID, ParentID: "zzzz", Messages: []Message{user("9", "x")}}, ErrNotFound, "not an entry"},
		{"negative window", SaveRequest{SessionID: base.SessionID, ContextWindow: -1, Messages: []Message{user("9", "x")}}, ErrInvalid, "negative"},
		{"usage on user", SaveRequest{SessionID: base.SessionID, Messages: []Message{{Role: RoleUser, Content: []Block{{Type: "text", Text: "x"}}, Usage: &Usage{InputTokens: 1}}}}, ErrInvalid, "usage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Save(t.Context(), tc.req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Hint == "" {
				t.Errorf("error %q carries no hint", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
		})
	}
	list, err := s.List(t.Context(), ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].MessageCount != 1 {
		t.Fatalf("a rejected call wrote something: %+v", list.Sessions)
	}
}

func TestListOrderFilterAndPaging(t *testing.T) {
	s := newTestService(t, Options{})
	var ids []string
	for i := range 7 {
		dir := wd
		if i%2 == 1 {
			dir = "/other"
		}
		r := mustSave(t, s, SaveRequest{WorkingDir: dir, Name: fmt.Sprintf("session %d", i), Messages: []Message{user("1", fmt.Sprintf("prompt number %d", i))}})
		ids = append(ids, r.SessionID)
	}
	all, err := s.List(t.Context(), ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Sessions) != 7 || all.Sessions[0].ID != ids[6] || all.NextCursor != "" {
		t.Fatalf("list = %d sessions, first %s", len(all.Sessions), all.Sessions[0].ID)
	}
	var got []string
	cursor := ""
	for {
		page, err := s.List(t.Context(), ListRequest{WorkingDir: wd, Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page.Sessions {
			got = append(got, x.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	want := []string{ids[6], ids[4], ids[2], ids[0]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("paged = %v, want %v", got, want)
	}
	q, err := s.List(t.Context(), ListRequest{Query: "NUMBER 3"})
	if err != nil || len(q.Sessions) != 1 || q.Sessions[0].ID != ids[3] {
		t.Errorf("query: %v %+v", err, q)
	}
	for _, bad := range []ListRequest{{Cursor: "garbage"}, {Limit: -1}, {Limit: 1000}, {WorkingDir: "rel"}} {
		if _, err := s.List(t.Context(), bad); !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrStale) {
			t.Errorf("List(%+v) err = %v", bad, err)
		}
	}
}

func TestResumePagesWithinMaxTokens(t *testing.T) {
	s := newTestService(t, Options{})
	var msgs []Message
	for i := range 10 {
		msgs = append(msgs, turn(i, fmt.Sprintf("pkg/f%d.go", i), 3000)...)
	}
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: msgs})
	var got []Message
	cursor := ""
	pages := 0
	for {
		page, err := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID, MaxTokens: 2000, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		b, _ := json.Marshal(page)
		if chars := len([]rune(string(b))); chars > 2000*4 {
			t.Fatalf("page %d is %d chars, over max_tokens", pages, chars)
		}
		got = append(got, page.Messages...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if pages < 3 {
		t.Errorf("only %d pages", pages)
	}
	if len(got) != len(msgs) {
		t.Fatalf("resumed %d messages, want %d", len(got), len(msgs))
	}
	for i := range msgs {
		if got[i].ID != msgs[i].ID || got[i].EntryID == "" {
			t.Fatalf("message %d = %s/%s, want id %s", i, got[i].ID, got[i].EntryID, msgs[i].ID)
		}
	}
	// Newest session of a working dir, and errors.
	if r, err := s.Resume(t.Context(), ResumeRequest{WorkingDir: wd, MaxTokens: 1000}); err != nil || r.SessionID != res.SessionID {
		t.Errorf("resume by working_dir: %v %s", err, r.SessionID)
	}
	for _, bad := range []ResumeRequest{{}, {SessionID: "missing"}, {SessionID: res.SessionID, Cursor: "r1.eyJzIjoieCJ9"}, {SessionID: res.SessionID, MaxTokens: 5}, {WorkingDir: "/nowhere"}} {
		if _, err := s.Resume(t.Context(), bad); err == nil {
			t.Errorf("Resume(%+v) succeeded", bad)
		}
	}
}

func TestResumeHugeMessageIsCut(t *testing.T) {
	s := newTestService(t, Options{})
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", strings.Repeat("é", 50000)), user("2", strings.Repeat("small ", 600))}})
	page, err := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID, MaxTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(page)
	if n := len([]rune(string(b))); n > 4000 {
		t.Fatalf("page is %d chars", n)
	}
	if len(page.Messages) != 1 || !strings.Contains(page.Messages[0].Content[0].Text, "characters not shown") || page.NextCursor == "" {
		t.Fatalf("huge message not cut with a note: %+v", page.NextCursor)
	}
}

func TestBranching(t *testing.T) {
	s := newTestService(t, Options{})
	r1 := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", "a"), assistant("2", "b")}})
	first := r1.LeafID
	r2 := mustSave(t, s, SaveRequest{SessionID: r1.SessionID, Messages: []Message{user("3", "c")}})
	// Go back to the first reply and continue differently.
	p, _ := s.Resume(t.Context(), ResumeRequest{SessionID: r1.SessionID})
	if len(p.Messages) != 3 || r2.LeafID == first {
		t.Fatalf("before branch: %d messages", len(p.Messages))
	}
	r3 := mustSave(t, s, SaveRequest{SessionID: r1.SessionID, ParentID: first, Messages: []Message{user("4", "d")}})
	p, _ = s.Resume(t.Context(), ResumeRequest{SessionID: r1.SessionID})
	var ids []string
	for _, m := range p.Messages {
		ids = append(ids, m.ID)
	}
	if fmt.Sprint(ids) != "[1 2 4]" || r3.LeafID != p.Messages[2].EntryID {
		t.Fatalf("after branch: %v", ids)
	}
}

func TestForkAndDelete(t *testing.T) {
	s := newTestService(t, Options{})
	r := mustSave(t, s, SaveRequest{WorkingDir: wd, Name: "orig", Messages: []Message{user("1", "a"), assistant("2", "b"), user("3", "c")}})
	p, _ := s.Resume(t.Context(), ResumeRequest{SessionID: r.SessionID})
	f, err := s.Fork(t.Context(), ForkRequest{SessionID: r.SessionID, FromID: p.Messages[1].EntryID})
	if err != nil {
		t.Fatal(err)
	}
	if f.ParentSessionID != r.SessionID || f.MessageCount != 2 || f.SessionID == r.SessionID {
		t.Fatalf("fork = %+v", f)
	}
	fs, _ := s.Get(t.Context(), f.SessionID)
	if fs.ParentSessionID != r.SessionID || fs.Name != "orig (fork)" {
		t.Errorf("fork session = %+v", fs)
	}
	fp, _ := s.Resume(t.Context(), ResumeRequest{SessionID: f.SessionID})
	if len(fp.Messages) != 2 || fp.Messages[1].EntryID != p.Messages[1].EntryID {
		t.Errorf("fork messages = %+v", fp.Messages)
	}
	if _, err := s.Fork(t.Context(), ForkRequest{SessionID: r.SessionID, FromID: "nothere"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("fork from unknown entry: %v", err)
	}
	if d, err := s.Delete(t.Context(), r.SessionID); err != nil || !d.Deleted {
		t.Fatalf("delete: %v", err)
	}
	if _, err := s.Delete(t.Context(), r.SessionID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := s.Resume(t.Context(), ResumeRequest{SessionID: r.SessionID}); !errors.Is(err, ErrNotFound) {
		t.Errorf("resume deleted: %v", err)
	}
	if _, err := s.Save(t.Context(), SaveRequest{SessionID: r.SessionID, Messages: []Message{user("x", "y")}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("save to deleted: %v", err)
	}
	if _, err := s.Delete(t.Context(), "../../etc/passwd"); !errors.Is(err, ErrInvalid) {
		t.Errorf("delete traversal: %v", err)
	}
}

func TestSearch(t *testing.T) {
	s := newTestService(t, Options{})
	a := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", "The flaky TestParseConfig fails on CI"), assistant("2", "ok")}})
	mustSave(t, s, SaveRequest{WorkingDir: "/other", Messages: []Message{user("1", "nothing here about testparseconfig?")}})
	res, err := s.Search(t.Context(), SearchRequest{Query: "testparseconfig"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 2 {
		t.Fatalf("matches = %+v", res.Matches)
	}
	res, err = s.Search(t.Context(), SearchRequest{Query: "TestParseConfig", WorkingDir: wd})
	if err != nil || len(res.Matches) != 1 || res.Matches[0].SessionID != a.SessionID || res.Matches[0].Role != RoleUser ||
		!strings.Contains(res.Matches[0].Snippet, "TestParseConfig") || res.Matches[0].EntryID == "" {
		t.Fatalf("filtered search: %v %+v", err, res)
	}
	if _, err := s.Search(t.Context(), SearchRequest{Query: "  "}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty query: %v", err)
	}
}

func TestRedactHookReachesEveryText(t *testing.T) {
	secret := "sk-live-SECRET123"
	s := newTestService(t, Options{Redact: func(x string) string { return strings.ReplaceAll(x, secret, "[REDACTED]") }})
	r := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{
		user("1", "my key is "+secret),
		assistantCall("2", "c", "bash", fmt.Sprintf(`{"command":"export KEY=%s"}`, secret)),
		toolResult("3", "c", "KEY="+secret),
	}})
	tr, err := s.Transcript(t.Context(), r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(tr)
	if strings.Contains(string(b), secret) {
		t.Fatalf("secret survived: %s", b)
	}
	if !strings.Contains(string(b), "[REDACTED]") {
		t.Fatalf("no redaction marker: %s", b)
	}
}

func TestImportIsIdempotent(t *testing.T) {
	s := newTestService(t, Options{})
	items := []ImportItem{
		{Message: ptr(user("u1", "build it"))},
		{Message: ptr(assistantCall("a1", "c1", "Write", `{"file_path":"/home/dev/project/main.go","content":"x"}`))},
		{Message: ptr(toolResult("r1", "c1", "written"))},
		{Summary: "We built main.go."},
		{Message: ptr(user("u2", "now test it"))},
	}
	req := ImportRequest{SessionID: "cc-abc", WorkingDir: wd, Name: "imported", Model: "claude", Items: items}
	r, err := s.Import(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Created || r.Added != 5 {
		t.Fatalf("first import = %+v", r)
	}
	r, err = s.Import(t.Context(), req)
	if err != nil || r.Created || r.Added != 0 {
		t.Fatalf("second import = %+v, %v", r, err)
	}
	req.Items = append(req.Items, ImportItem{Message: ptr(assistant("a2", "tests pass"))})
	r, err = s.Import(t.Context(), req)
	if err != nil || r.Added != 1 {
		t.Fatalf("grown import = %+v, %v", r, err)
	}
	p, err := s.Resume(t.Context(), ResumeRequest{SessionID: "cc-abc"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Summary, "We built main.go.") || len(p.Messages) != 2 || fmt.Sprint(p.ModifiedFiles) != "[main.go]" {
		t.Fatalf("resume after import: summary %q, %d messages, modified %v", p.Summary, len(p.Messages), p.ModifiedFiles)
	}
	// A later incremental import with a new summary keeps the files of earlier imports.
	req.Items = append(req.Items,
		ImportItem{Message: ptr(assistantCall("a3", "c3", "Read", `{"file_path":"/home/dev/project/go.mod"}`))},
		ImportItem{Message: ptr(toolResult("r3", "c3", "module x"))},
		ImportItem{Summary: "We tested it."})
	if r, err = s.Import(t.Context(), req); err != nil || r.Added != 3 {
		t.Fatalf("third import = %+v, %v", r, err)
	}
	p, _ = s.Resume(t.Context(), ResumeRequest{SessionID: "cc-abc"})
	if fmt.Sprint(p.ModifiedFiles) != "[main.go]" || fmt.Sprint(p.ReadFiles) != "[go.mod]" {
		t.Fatalf("cumulative import lists: read %v modified %v", p.ReadFiles, p.ModifiedFiles)
	}
}

func ptr[T any](v T) *T { return &v }

func TestConcurrentSavesInOneProcess(t *testing.T) {
	s := newTestService(t, Options{Now: time.Now})
	r := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("0", "start")}})
	ctx := context.Background()
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 10 {
				_, err := s.Save(ctx, SaveRequest{SessionID: r.SessionID, Messages: []Message{user(fmt.Sprintf("g%d-%d", g, i), "x")}})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	sess, _ := s.Get(ctx, r.SessionID)
	if sess.MessageCount != 81 {
		t.Fatalf("message_count = %d, want 81", sess.MessageCount)
	}
}

func TestSearchSnippetCaseChangingLetters(t *testing.T) {
	// The snippet of a long text with case-changing letters shows the match.
	s := newTestService(t, Options{})
	mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", strings.Repeat("İstanbul ", 200)+"the NEEDLE is here")}})
	res, err := s.Search(t.Context(), SearchRequest{Query: "needle"})
	if err != nil || len(res.Matches) != 1 || !strings.Contains(res.Matches[0].Snippet, "NEEDLE") {
		t.Fatalf("search: %v %+v", err, res.Matches)
	}
}

// A session deleted and imported again by another process, with the same id, times and
// number of records, is not mistaken for the one this process cached.
func TestCacheNoticesRecreatedSession(t *testing.T) {
	a := newTestService(t, Options{})
	b := New(a.store, Options{})
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	req := ImportRequest{SessionID: "cc-same", WorkingDir: wd, Created: created, Items: []ImportItem{
		{Message: ptr(user("u1", "first")), Time: created}, {Message: ptr(assistant("a1", "reply")), Time: created}}}
	if _, err := a.Import(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	mustSave(t, a, SaveRequest{SessionID: "cc-same", Messages: []Message{user("x", "cached")}}) // a caches the state
	if _, err := b.Delete(t.Context(), "cc-same"); err != nil {
		t.Fatal(err)
	}
	req.Items = append(req.Items, ImportItem{Message: ptr(user("y", "other")), Time: created})
	if _, err := b.Import(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := mustSave(t, a, SaveRequest{SessionID: "cc-same", Messages: []Message{user("z", "after")}})
	if r.MessageCount != 4 {
		t.Fatalf("message_count = %d, want 4", r.MessageCount)
	}
	p, err := a.Resume(t.Context(), ResumeRequest{SessionID: "cc-same"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range p.Messages {
		ids = append(ids, m.ID)
	}
	if fmt.Sprint(ids) != "[u1 a1 y z]" {
		t.Fatalf("path = %v", ids)
	}
}

// TestWarmBuildsRecentStates checks that Warm prepares the most recently updated sessions'
// states (what a server start does in the background) and leaves older ones alone.
func TestWarmBuildsRecentStates(t *testing.T) {
	s := newTestService(t, Options{})
	ctx := t.Context()
	var ids []string
	for i := range 3 {
		res, err := s.Save(ctx, SaveRequest{WorkingDir: wd, Messages: turn(i, "main.go", 100)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.SessionID)
	}
	fresh := New(s.Store(), Options{})
	if err := fresh.Warm(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		fresh.mu.Lock()
		st := fresh.cache[id]
		fresh.mu.Unlock()
		if want := i > 0; (st != nil) != want {
			t.Errorf("session %d warmed = %v, want %v", i, st != nil, want)
		}
	}
	page, err := fresh.Resume(ctx, ResumeRequest{SessionID: ids[2]})
	if err != nil || len(page.Messages) != len(turn(2, "main.go", 100)) {
		t.Fatalf("resume after warm-up: %d messages, %v", len(page.Messages), err)
	}
}
