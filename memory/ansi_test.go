package memory

import (
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// TestStripANSI: the sequences go as the viewer's clean (render.js) removes them.
func TestStripANSI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b[1;38;5;196mbold\x1b[m end", "bold end"},
		{"\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"},
		{"\x1b]0;window title\x07after", "after"},
		{"\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b]unterminated osc", ""},
		{"\x1b]osc to next\x1b[1mesc", "esc"},
		{"\x1b[31", "31"},   // CSI without a final byte: only "ESC [" goes
		{"a\x1bMb", "ab"},   // a two-byte escape
		{"a\x1b", "a"},      // lone ESC at the end
		{"a\x1b1b", "a1b"},  // ESC before a byte that starts no sequence
		{"é\x1b[2Kü", "éü"}, // around multibyte runes
	}
	for _, tc := range tests {
		if got := stripANSI(tc.in); got != tc.want {
			t.Errorf("stripANSI(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if s := "no escapes here"; stripANSI(s) != s || testing.AllocsPerRun(10, func() { stripANSI(s) }) != 0 {
		t.Error("a text without ESC is not returned as it is")
	}
}

// TestSearchSnippetANSI: a match's snippet (what session_search and the viewer show) has no
// pieces of escape codes, on the indexed and the scanning search.
func TestSearchSnippetANSI(t *testing.T) {
	indexed, _ := newIndexedService(t, Options{})
	plain := newTestService(t, Options{})
	for _, s := range []*Service{indexed, plain} {
		mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{
			user("1", "\x1b[31mred\x1b[0m alert: build \x1b]0;title\x07failed"),
		}})
		res := eventually(t, s, SearchRequest{Query: "alert"}, count(1))
		if got := res.Matches[0].Snippet; got != "red alert: build failed" {
			t.Errorf("snippet = %q", got)
		}
		// The words inside the codes are found as words: the index holds "red", not "31mred",
		// and "title" (an escape's payload) is not text at all.
		for q, want := range map[string]int{"red": 1, `"red alert"`: 1, "31mred": 0, "title": 0} {
			res, err := s.Search(t.Context(), SearchRequest{Query: q})
			if err != nil || len(res.Matches) != want {
				t.Errorf("search %s: %d matches (%v), want %d", q, len(res.Matches), err, want)
			}
		}
	}
}

// TestDocsWithoutANSI: what the index receives for a message has no escape codes.
func TestDocsWithoutANSI(t *testing.T) {
	rec := storage.Record{Seq: 1, Kind: KindMessage, Data: []byte(`{"id":"e1","ts":"2026-11-28T00:00:00Z","message":{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":"\u001b[1;32mPASS\u001b[0m ok"}]}}`)}
	docs := Docs(storage.Header{ID: "s", WorkingDir: "/w"}, rec)
	if len(docs) != 1 || docs[0].Text != "PASS ok" {
		t.Fatalf("docs = %+v, want one with the text %q", docs, "PASS ok")
	}
}

// BenchmarkStripANSI: the cost per snippet next to cutting the snippet itself, on a long
// tool output without and with escape codes.
func BenchmarkStripANSI(b *testing.B) {
	line := "ok  \tgithub.com/sessionmem/sessionmem/storage/local\t1.234s coverage: 81.2% of statements\n"
	plain := strings.Repeat(line, 800) // about 70 KB
	colored := strings.Repeat("\x1b[32m"+line+"\x1b[0m", 800)
	q, err := fts.Parse("coverage statements")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, text string }{{"plain", plain}, {"colored", colored}} {
		b.Run(c.name+"/strip", func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				stripANSI(c.text)
			}
		})
		b.Run(c.name+"/snippet", func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				fts.Snippet(c.text, q)
			}
		})
	}
}
