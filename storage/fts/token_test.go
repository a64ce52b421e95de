package fts

import (
	"reflect"
	"strings"
	"testing"
)

func TestTerms(t *testing.T) {
	long := strings.Repeat("a", MaxTermBytes+1)
	tests := []struct {
		name, text string
		want       []string
	}{
		{"empty", "", []string{}},
		{"words lower-cased", "Hello, World!", []string{"hello", "world"}},
		{"identifier whole", "cfg := parseConfig(path)", []string{"cfg", "parseconfig", "path"}},
		{"snake case whole", "max_tokens=5 __init__.py", []string{"max_tokens", "5", "__init__", "py"}},
		{"path splits at punctuation", "/home/me/internal/auth/login.go:42", []string{"home", "me", "internal", "auth", "login", "go", "42"}},
		{"kebab and dotted", "foo-bar a.b.c --store", []string{"foo", "bar", "a", "b", "c", "store"}},
		{"unicode letters and marks", "Ünïcode straße naïve", []string{"ünïcode", "straße", "naïve"}},
		{"non-ASCII punctuation separates", "“quoted”—dash…end", []string{"quoted", "dash", "end"}},
		{"han characters one term each", "東京都に住む", []string{"東", "京", "都", "に", "住", "む"}},
		{"mixed han and latin", "go言語rocks", []string{"go", "言", "語", "rocks"}},
		{"too long term dropped", "a " + long + " b", []string{"a", "b"}},
		{"term at the limit kept", strings.Repeat("b", MaxTermBytes), []string{strings.Repeat("b", MaxTermBytes)}},
		{"invalid utf-8 separates", "ab\xffcd", []string{"ab", "cd"}},
		{"digits", "v1.2.3 0x1F", []string{"v1", "2", "3", "0x1f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Terms(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Terms(%q) = %q, want %q", tt.text, got, tt.want)
			}
			buf, n := AppendTerms(nil, tt.text)
			want := ""
			for _, w := range tt.want {
				want += w + " "
			}
			if string(buf) != want || n != len(tt.want) {
				t.Fatalf("AppendTerms(%q) = %q, %d; want %q, %d", tt.text, buf, n, want, len(tt.want))
			}
		})
	}
}

func TestTokenizeOffsets(t *testing.T) {
	text := "Open ÜBER/login.go"
	toks := Tokenize(text)
	want := []Token{{"open", 0, 4}, {"über", 5, 10}, {"login", 11, 16}, {"go", 17, 19}}
	if !reflect.DeepEqual(toks, want) {
		t.Fatalf("Tokenize = %+v, want %+v", toks, want)
	}
}

func BenchmarkAppendTerms(b *testing.B) {
	text := strings.Repeat("The parseConfig(path) call in internal/auth/login.go returned err != nil; Übergröße 42.\n", 24)
	b.SetBytes(int64(len(text)))
	var buf []byte
	for b.Loop() {
		buf, _ = AppendTerms(buf[:0], text)
	}
}

func TestStemmed(t *testing.T) {
	tests := []struct {
		text, word string // word: the term of text asked about (its first occurrence)
		want       bool
	}{
		{"we fixed it", "fixed", true},
		{"Fixed it", "Fixed", true},
		{"tests.", "tests", true},
		{"the tests, then", "tests", true},
		{"`tests`", "tests", true},
		{"**tests**", "tests", true},
		{"(tests)", "tests", true},
		{"user's tests", "user", true},
		{"ab", "ab", false},                         // too short to change
		{"parseConfigs", "parseConfigs", false},     // camelCase identifier
		{"URLs", "URLs", false},                     // acronym
		{"TESTS", "TESTS", false},                   // all capitals: an identifier or acronym
		{"max_tokens", "max_tokens", false},         // not a letters-only word
		{"v2tests", "v2tests", false},               // digits
		{"internal/tests/a.go", "tests", false},     // a path segment
		{"login.go", "login", false},                // a file name
		{"foo-bars", "bars", false},                 // kebab-case
		{"fn(tests)", "tests", false},               // a call's argument
		{"https://x.io/docs", "docs", false},        // a URL
		{"naïve", "naïve", false},                   // not ASCII
		{"end of sentence.Then", "sentence", false}, // joined without a space: a name
	}
	for _, tt := range tests {
		i := strings.Index(tt.text, tt.word)
		if got := Stemmed(tt.text, i, i+len(tt.word)); got != tt.want {
			t.Errorf("Stemmed(%q, %q) = %v, want %v", tt.text, tt.word, got, tt.want)
		}
	}
}
