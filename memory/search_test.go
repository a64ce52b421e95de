package memory

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
	"github.com/sessionmem/sessionmem/storage/local"
)

// newIndexedService is newTestService over a store with the full-text index.
func newIndexedService(t *testing.T, opts Options) (*Service, string) {
	t.Helper()
	dir := t.TempDir()
	store, err := local.Open(dir, local.Options{Summarize: Summarize, Docs: Docs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if opts.Now == nil {
		clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		opts.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	}
	return New(store, opts), dir
}

// eventually retries a search until check accepts it (the index is fresh within a second).
func eventually(t *testing.T, s *Service, req SearchRequest, check func(SearchResult) bool) SearchResult {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		res, err := s.Search(t.Context(), req)
		if err != nil {
			t.Fatalf("search %+v: %v", req, err)
		}
		if check(res) {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("search %+v: %+v", req, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func count(n int) func(SearchResult) bool {
	return func(r SearchResult) bool { return len(r.Matches) == n }
}

func TestDocs(t *testing.T) {
	h := storage.Header{ID: "s1", WorkingDir: "/home/dev/proj"}
	msg := `{"type":"message","id":"e1","ts":"2026-01-02T03:04:05Z","message":{"role":"assistant","content":[` +
		`{"type":"text","text":"Reading it."},{"type":"thinking","thinking":"hmm"},` +
		`{"type":"tool_call","id":"c1","name":"read","arguments":{"path":"internal/auth/login.go","n":3}},` +
		`{"type":"tool_call","id":"c2","name":"edit","arguments":{"path":"/etc/hosts"}}]}}`
	docs := Docs(h, storage.Record{Seq: 4, Kind: KindMessage, Data: []byte(msg)})
	if len(docs) != 1 {
		t.Fatalf("docs = %+v", docs)
	}
	d := docs[0]
	want := "Reading it.\nhmm\nread\ninternal/auth/login.go\nedit\n/etc/hosts"
	if d.Text != want || d.Kind != fts.KindMessage || d.Role != "assistant" || d.EntryID != "e1" || d.Seq != 4 ||
		d.Time.Format(time.RFC3339) != "2026-01-02T03:04:05Z" {
		t.Fatalf("doc = %+v", d)
	}
	if strings.Join(d.Files, " ") != "/home/dev/proj/internal/auth/login.go /etc/hosts" {
		t.Fatalf("files = %q", d.Files)
	}
	tool := `{"type":"message","id":"e2","message":{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":"package auth"},` +
		`{"type":"tool_result","tool_call_id":"c2","content":[{"type":"text","text":"127.0.0.1"}]}]}}`
	if d := Docs(h, storage.Record{Seq: 5, Kind: KindMessage, Data: []byte(tool)}); len(d) != 1 || d[0].Text != "package auth\n127.0.0.1" {
		t.Fatalf("tool output doc = %+v", d)
	}
	comp := `{"type":"compaction","id":"c9","compaction":{"summary":"We fixed login.\n<read-files>\nmain.go\n</read-files>","read_files":["main.go"],"modified_files":[]}}`
	d = Docs(h, storage.Record{Seq: 6, Kind: KindCompaction, Data: []byte(comp)})[0]
	if d.Kind != fts.KindSummary || d.EntryID != "c9" || d.Text != "We fixed login." || d.Files[0] != "/home/dev/proj/main.go" {
		t.Fatalf("summary doc = %+v", d)
	}
	if d := Docs(h, storage.Record{Seq: 7, Kind: KindLabel, Data: []byte(`{"type":"label","id":"l"}`)}); d != nil {
		t.Fatalf("label docs = %+v", d)
	}
}

// TestSearchV3 runs every query form of the contract through the index and through the
// scan (a store without index), which must agree.
func TestSearchV3(t *testing.T) {
	indexed, _ := newIndexedService(t, Options{})
	plain := newTestService(t, Options{})
	for _, s := range []*Service{indexed, plain} {
		a := mustSave(t, s, SaveRequest{WorkingDir: wd, Name: "auth work", Messages: []Message{
			user("1", "the zebrafish quokka problem in parseConfig(x)"),
			assistantCall("2", "c1", "read", `{"path":"internal/auth/login.go"}`),
			toolResult("3", "c1", "package auth // quokka"),
		}}).SessionID
		mustSave(t, s, SaveRequest{WorkingDir: "/other", Messages: []Message{
			user("1", "quokka quokka quokka elsewhere"),
			assistant("2", "configuration parsing, without the rare animal"),
		}})
		eventually(t, s, SearchRequest{Query: "+quokka +zebrafish"}, count(1))
		cases := []struct {
			req  SearchRequest
			want int
		}{
			{SearchRequest{Query: "zebrafish quokka"}, 3}, // v3: words are ranked, not all required
			{SearchRequest{Query: "+zebrafish quokka"}, 1},
			{SearchRequest{Query: "what was the zebrafish problem"}, 1},
			{SearchRequest{Query: "what was the"}, 2}, // only function words: searched as words
			{SearchRequest{Query: "quokkas"}, 3},      // word forms match each other
			{SearchRequest{Query: "parsing configurations"}, 1},
			{SearchRequest{Query: `"quokka zebrafish"`}, 0},
			{SearchRequest{Query: `"zebrafish quokka"`}, 1},
			{SearchRequest{Query: "quokka"}, 3},
			{SearchRequest{Query: "quokka -zebrafish"}, 2},
			{SearchRequest{Query: "zebra*"}, 1},
			{SearchRequest{Query: "config*"}, 1},
			{SearchRequest{Query: "parseConfig"}, 1},
			{SearchRequest{Query: "login.go"}, 1},
			{SearchRequest{Query: "auth/login.go"}, 1},
			{SearchRequest{Query: "quokka", WorkingDir: wd}, 2},
			{SearchRequest{Query: "quokka", SessionID: a}, 2},
			{SearchRequest{Query: "quokka", Role: "tool_result"}, 1},
			{SearchRequest{File: "internal/auth/login.go"}, 1},
			{SearchRequest{File: wd + "/internal/auth/login.go"}, 1},
			{SearchRequest{Query: "read", File: "internal/auth/login.go"}, 1},
			{SearchRequest{Query: "quokka", Since: "2030-01-01T00:00:00Z"}, 0},
			{SearchRequest{Query: "quokka", Since: "2999-01-01T00:00:00Z"}, 0},
			{SearchRequest{Query: "quokka", Until: "2999-01-01T00:00:00Z"}, 3},
			{SearchRequest{Query: "quokka", Until: "2030-01-01T00:00:00Z"}, 3},
		}
		for _, tc := range cases {
			res := eventually(t, s, tc.req, count(tc.want))
			for _, m := range res.Matches {
				if m.Snippet == "" || m.EntryID == "" || m.Kind != fts.KindMessage || m.Time.IsZero() {
					t.Errorf("%+v: match %+v", tc.req, m)
				}
			}
		}
		// Ranking: three quokkas beat one.
		res := eventually(t, s, SearchRequest{Query: "quokka"}, count(3))
		if !strings.Contains(res.Matches[0].Snippet, "quokka quokka quokka") || res.Matches[0].Score < res.Matches[2].Score {
			t.Errorf("ranking: %+v", res.Matches)
		}
		if m := eventually(t, s, SearchRequest{Query: "zebrafish"}, count(1)).Matches[0]; m.SessionName != "auth work" || m.SessionID != a || m.Role != RoleUser || m.MessageID != "1" {
			t.Errorf("match: %+v", m)
		}
		// Paging.
		p1 := eventually(t, s, SearchRequest{Query: "quokka", Limit: 2}, count(2))
		if p1.NextCursor == "" {
			t.Fatal("no cursor")
		}
		p2, err := s.Search(t.Context(), SearchRequest{Query: "quokka", Limit: 2, Cursor: p1.NextCursor})
		if err != nil || len(p2.Matches) != 1 || p2.NextCursor != "" || p2.Matches[0].EntryID == p1.Matches[0].EntryID && p2.Matches[0].SessionID == p1.Matches[0].SessionID {
			t.Fatalf("page 2: %v %+v", err, p2)
		}
		if _, err := s.Search(t.Context(), SearchRequest{Query: "zebrafish", Cursor: p1.NextCursor}); !errors.Is(err, ErrInvalid) {
			t.Errorf("foreign cursor: %v", err)
		}
	}
	// The indexed service answered from its index, not by scanning.
	match, _ := fts.Parse("quokka")
	res, err := indexed.Store().(storage.Searcher).Search(t.Context(), storage.SearchQuery{Match: match})
	if err != nil || len(res.Hits) != 3 {
		t.Fatalf("index: %v %+v", err, res)
	}
}

func TestSearchBadInput(t *testing.T) {
	s, _ := newIndexedService(t, Options{})
	for _, req := range []SearchRequest{
		{},
		{Query: "  "},
		{Query: `"unclosed`},
		{Query: "-only"},
		{Query: "ab*"},
		{Query: "x", Limit: 101},
		{Query: "x", Limit: -1},
		{Query: "x", Role: "robot"},
		{Query: "x", Since: "yesterday"},
		{Query: "x", Until: "2026-13-01"},
		{Query: "x", Since: "2026-02-01T00:00:00Z", Until: "2026-01-01T00:00:00Z"},
		{Query: "x", WorkingDir: "relative/dir"},
		{Query: "x", SessionID: "../etc"},
		{Query: "x", Cursor: "nonsense"},
		{Query: strings.Repeat("a ", 600)},
	} {
		if _, err := s.Search(t.Context(), req); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", req, err)
		} else if !strings.Contains(err.Error(), ";") {
			t.Errorf("%+v: no hint in %q", req, err)
		}
	}
	// A well-formed id of no session is a tool error too (the contract: in every tool).
	if _, err := s.Search(t.Context(), SearchRequest{Query: "x", SessionID: "no-such-session"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("search in an unknown session: %v, want ErrNotFound", err)
	}
}

func TestSearchSummaries(t *testing.T) {
	s, _ := newIndexedService(t, Options{})
	id := longSession(t, s, 20)
	res, err := s.Compact(t.Context(), CompactRequest{SessionID: id, KeepRecentTokens: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(t.Context(), CompactRequest{SessionID: id, CompactionID: res.CompactionID,
		Summary: "We replaced the flux capacitor in the billing module."}); err != nil {
		t.Fatal(err)
	}
	m := eventually(t, s, SearchRequest{Query: "capacitor"}, count(1)).Matches[0]
	if m.Kind != fts.KindSummary || m.Role != "" || !strings.Contains(m.Snippet, "flux capacitor") || m.EntryID == "" {
		t.Fatalf("summary match %+v", m)
	}
}

// TestSearchIndexHoldsNoSecret: a secret saved through the service is redacted before the
// store, so neither search nor the index files' bytes have it.
func TestSearchIndexHoldsNoSecret(t *testing.T) {
	const secret = "sk-live-SECRETVALUE123"
	s, dir := newIndexedService(t, Options{Redact: func(x string) string { return strings.ReplaceAll(x, secret, "[REDACTED]") }})
	mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{
		user("1", "my key is "+secret+" please keep it"),
		assistantCall("2", "c1", "bash", `{"command":"export KEY=`+secret+`"}`),
	}})
	eventually(t, s, SearchRequest{Query: "keep"}, count(1))
	if res, err := s.Search(t.Context(), SearchRequest{Query: "secretvalue123"}); err != nil || len(res.Matches) != 0 {
		t.Fatalf("secret found: %v %+v", err, res)
	}
	s.Store().Close()
	files, _ := filepath.Glob(filepath.Join(dir, "search", "*"))
	if len(files) == 0 {
		t.Fatal("no index files")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, needle := range []string{secret, "secretvalue123", "SECRETVALUE123"} {
			if bytes.Contains(b, []byte(needle)) {
				t.Fatalf("%s holds %q", f, needle)
			}
		}
	}
}
