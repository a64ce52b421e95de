package fts

import (
	"reflect"
	"slices"
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
		{"non-ASCII punctuation separates", "“quoted”—dash…end", []string{"quot", "dash", "end"}},
		{"English words stemmed", "Fixed the failing tests", []string{"fix", "the", "fail", "test"}},
		{"han characters one term each", "東京都に住む", []string{"東", "京", "都", "に", "住", "む"}},
		{"mixed han and latin", "go言語rocks", []string{"go", "言", "語", "rock"}},
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

func TestStemmable(t *testing.T) {
	for _, tt := range []struct {
		term string
		want bool
	}{
		{"fixed", true}, {"redacted", true}, {"parseconfigs", true}, {"ab", false},
		{"max_tokens", false}, {"v2tests", false}, {"naïve", false}, {"42", false},
	} {
		if got := Stemmable([]byte(tt.term)); got != tt.want {
			t.Errorf("Stemmable(%q) = %v, want %v", tt.term, got, tt.want)
		}
	}
	// The same term whatever the case and the neighbours: a query and its text agree.
	for _, text := range []string{"REDACTED", "Redacted", "redacted.", "src/redacted/x", "(redacted)"} {
		if got := Terms(text); !slices.Contains(got, "redact") {
			t.Errorf("Terms(%q) = %q, want the stem redact", text, got)
		}
	}
}

// TestScanWordsAppendTerm: ScanWords and AppendTerm, word by word, give the terms
// AppendTerms gives, in order (an indexer remembering each word's term relies on it), and
// AppendTerm leaves dst as it was for a word it refuses.
func TestScanWordsAppendTerm(t *testing.T) {
	texts := []string{
		"Fixing the fixes: fixed it, don't 'quote' me; parseConfig parse_config v2 README login.go",
		"Über café naïve résumé ﬁle ΣΊΣΥΦΟΣ 日本語のテスト 中文 한국어 x ok 42 3.14 travelled skies",
		strings.Repeat("z", MaxTermBytes) + " " + strings.Repeat("Z", MaxTermBytes+1) + " " + strings.Repeat("é", MaxTermBytes/2+1) + " end",
		"", "   ", "a", "'", "''s", "generously GENEROUSLY Generously",
	}
	for _, text := range texts {
		var got []string
		dst := []byte("prefix")
		ScanWords(text, func(start, end int) {
			term, ok := AppendTerm(dst, text[start:end])
			if !ok {
				if string(term) != "prefix" {
					t.Errorf("%q: a refused word changed dst to %q", text[start:end], term)
				}
				return
			}
			got = append(got, string(term[len("prefix"):]))
		})
		body, n := AppendTerms(nil, text)
		want := strings.Fields(string(body))
		if n != len(got) || !slices.Equal(got, want) {
			t.Errorf("%q: %q (%d), want %q (%d)", text, got, len(got), want, n)
		}
	}
}
