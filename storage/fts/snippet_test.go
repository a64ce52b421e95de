package fts

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSnippet(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 40) // 1,080 bytes
	tests := []struct {
		name, text, query string
		want              string // exact snippet, or "" to check only the invariants
		contains          []string
		noLeading         bool
	}{
		{name: "short text whole", text: "the quick brown fox", query: "brown", want: "the quick brown fox"},
		{name: "white space collapsed", text: "a\n\n\tquick\r\nbrown  fox\x00\u200b end", query: "fox", want: "a quick brown fox end"},
		{name: "match in the middle of a long text", text: filler + "NEEDLE here " + filler, query: "needle", contains: []string{"NEEDLE here"}},
		{name: "match at the start", text: "needle " + filler, query: "needle", contains: []string{"needle lorem"}, noLeading: true},
		{name: "match at the end", text: filler + "the needle", query: "needle", contains: []string{"the needle"}},
		{name: "phrase kept whole across lines", text: filler + "auth/\nlogin.go " + filler, query: "auth/login.go", contains: []string{"auth/ login.go"}},
		{name: "window with both words preferred", text: "alpha " + filler + filler + " alpha beta " + filler, query: "alpha beta", contains: []string{"alpha beta"}},
		{name: "prefix", text: filler + "parseConfigFile() " + filler, query: "parsec*", contains: []string{"parseConfigFile()"}},
		{name: "unicode around", text: strings.Repeat("日本語のテキスト。", 60) + "ÜBER " + strings.Repeat("ü", 400), query: "über", contains: []string{"ÜBER"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Parse(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got := Snippet(tt.text, q)
			checkSnippet(t, got, q)
			if tt.want != "" && got != tt.want {
				t.Fatalf("Snippet = %q, want %q", got, tt.want)
			}
			for _, c := range tt.contains {
				if !strings.Contains(got, c) {
					t.Fatalf("Snippet = %q, does not contain %q", got, c)
				}
			}
			if tt.noLeading && strings.HasPrefix(got, "…") {
				t.Fatalf("Snippet = %q starts with an ellipsis", got)
			}
		})
	}
}

func TestSnippetWithoutMatch(t *testing.T) {
	long := strings.Repeat("word ", 200)
	if got := Snippet(long, nil); utf8.RuneCountInString(got) > SnippetRunes || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "word word") {
		t.Fatalf("Snippet(nil) = %q", got)
	}
	if got := Snippet("short one", nil); got != "short one" {
		t.Fatalf("Snippet(short, nil) = %q", got)
	}
}

// TestSnippetRandom checks the invariants on random texts: at most SnippetRunes runes, and
// the snippet itself matches the query's first term.
func TestSnippetRandom(t *testing.T) {
	words := []string{"alpha", "beta", "gamma", "Delta", "parseConfig", "login.go", "über", "東京", "x", "foo_bar", "zeta-eta"}
	seps := []string{" ", "  ", "\n", ", ", "/", "(", "\t\t", "…"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var b strings.Builder
		n := rng.IntN(400)
		for range n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		text := b.String()
		query := words[rng.IntN(len(words))]
		if rng.IntN(2) == 0 {
			query += " " + words[rng.IntN(len(words))]
		}
		q, err := Parse(query)
		if err != nil {
			t.Fatal(err)
		}
		got := Snippet(text, q)
		if utf8.RuneCountInString(got) > SnippetRunes {
			t.Fatalf("case %d: %d runes: %q", i, utf8.RuneCountInString(got), got)
		}
		if q.Include[0].OccursIn(Terms(text)) && !anyOccurs(q, got) {
			t.Fatalf("case %d: snippet %q holds no term of %q (text %q)", i, got, query, text)
		}
	}
}

func anyOccurs(q *Query, s string) bool {
	terms := Terms(s)
	for _, t := range q.Include {
		if t.OccursIn(terms) {
			return true
		}
	}
	return false
}

func checkSnippet(t *testing.T, s string, q *Query) {
	t.Helper()
	if n := utf8.RuneCountInString(s); n > SnippetRunes {
		t.Fatalf("snippet has %d runes: %q", n, s)
	}
	if !anyOccurs(q, s) {
		t.Fatalf("snippet %q holds no term of %s", s, q)
	}
	if strings.ContainsAny(s, "\n\t\r\x00\u200b") || strings.Contains(s, "  ") {
		t.Fatalf("snippet %q is not collapsed", s)
	}
}

func BenchmarkSnippet(b *testing.B) {
	text := strings.Repeat("lorem ipsum dolor sit amet ", 200) + " parseConfig(path) " + strings.Repeat("lorem ipsum ", 100)
	q, _ := Parse("parseconfig path")
	for b.Loop() {
		Snippet(text, q)
	}
}

func BenchmarkSnippetToolOutput(b *testing.B) {
	// A 100 KB tool output with the match near the end, as a file read would be.
	text := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) {\n\tlog.Printf(\"request %s\", r.URL)\n}\n", 1100) + " parseConfig(path) " + strings.Repeat("x ", 100)
	q, _ := Parse("parseconfig path")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Snippet(text, q)
	}
}
