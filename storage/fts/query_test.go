package fts

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	w := func(src string, terms ...string) Term { return Term{Terms: terms, Source: src} }
	p := func(src string, terms ...string) Term { return Term{Terms: terms, Source: src, Prefix: true} }
	ph := func(src string, prefix bool, terms ...string) Term {
		return Term{Terms: terms, Source: src, Quoted: true, Required: true, Prefix: prefix}
	}
	xph := func(src string, terms ...string) Term { return Term{Terms: terms, Source: src, Quoted: true} }
	stop := func(src string, terms ...string) Term { return Term{Terms: terms, Source: src, Stop: true} }
	req := func(src string, terms ...string) Term { return Term{Terms: terms, Source: src, Required: true} }
	tests := []struct {
		name, query string
		inc, exc    []Term
		canon       string
	}{
		{"one word", "zebrafish", []Term{w("zebrafish", "zebrafish")}, nil, "zebrafish"},
		{"words any order, lower-cased", "Quokka  ZEBRAFISH", []Term{w("Quokka", "quokka"), w("ZEBRAFISH", "zebrafish")}, nil, "quokka zebrafish"},
		{"phrase", `"exact phrase here"`, []Term{ph(`"exact phrase here"`, false, "exact", "phrase", "here")}, nil, `+"exact phrase here"`},
		{"one-word phrase", `"Word"`, []Term{ph(`"Word"`, false, "word")}, nil, "+word"},
		{"required word", "+quokka zebrafish", []Term{req("quokka", "quokka"), w("zebrafish", "zebrafish")}, nil, "+quokka zebrafish"},
		{"required phrase", `+"a b"`, []Term{ph(`"a b"`, false, "a", "b")}, nil, `+"a b"`},
		{"plus inside a word", "c++ a+b", []Term{w("c++", "c"), w("a+b", "a", "b")}, nil, `c "a b"`},
		{"function words marked", "what did the walrus say", []Term{stop("what", "what"), stop("did", "did"), stop("the", "the"), w("walrus", "walrus"), w("say", "say")}, nil, "what did the walrus say"},
		{"prefix", "pars*", []Term{p("pars*", "pars")}, nil, "pars*"},
		{"prefix stars collapse", "pars**", []Term{p("pars**", "pars")}, nil, "pars*"},
		{"phrase prefix after quote", `"parse conf"*`, []Term{ph(`"parse conf"*`, true, "pars", "conf")}, nil, `+"pars conf"*`},
		{"phrase prefix inside quote", `"parse conf*"`, []Term{ph(`"parse conf*"`, true, "pars", "conf")}, nil, `+"pars conf"*`},
		{"exclusion", "error -timeout", []Term{w("error", "error")}, []Term{w("timeout", "timeout")}, "error -timeout"},
		{"excluded phrase", `error -"connection reset"`, []Term{w("error", "error")}, []Term{xph(`"connection reset"`, "connect", "reset")}, `error -"connect reset"`},
		{"excluded prefix", "error -time*", []Term{w("error", "error")}, []Term{p("time*", "time")}, "error -time*"},
		{"identifier with call parens", "parseConfig(", []Term{w("parseConfig(", "parseconfig")}, nil, "parseconfig"},
		{"path is a phrase", "auth/login.go", []Term{w("auth/login.go", "auth", "login", "go")}, nil, `"auth login go"`},
		{"file name is a phrase", "login.go", []Term{w("login.go", "login", "go")}, nil, `"login go"`},
		{"path prefix", "auth/log*", []Term{p("auth/log*", "auth", "log")}, nil, `"auth log"*`},
		{"double dash is not an exclusion", "--store", []Term{w("--store", "store")}, nil, "store"},
		{"dash inside a word", "foo-bar", []Term{w("foo-bar", "foo", "bar")}, nil, `"foo bar"`},
		{"lone dash and punctuation ignored", "a - && b", []Term{stop("a", "a"), w("b", "b")}, nil, "a b"},
		{"star after punctuation is not a prefix", "foo.*", []Term{w("foo.*", "foo")}, nil, "foo"},
		{"quote ends a word", `say"hello world"`, []Term{w("say", "say"), ph(`"hello world"`, false, "hello", "world")}, nil, `say +"hello world"`},
		{"unicode", "Straße 東京", []Term{w("Straße", "straße"), w("東京", "東", "京")}, nil, `straße "東 京"`},
		{"operators are words", "a OR b", []Term{stop("a", "a"), stop("OR", "or"), w("b", "b")}, nil, "a or b"},
		{"tabs and newlines separate", "x\ty\nz", []Term{w("x", "x"), w("y", "y"), w("z", "z")}, nil, "x y z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Parse(tt.query)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.query, err)
			}
			if !reflect.DeepEqual(q.Include, tt.inc) || !reflect.DeepEqual(q.Exclude, tt.exc) {
				t.Fatalf("Parse(%q) = %+v / %+v, want %+v / %+v", tt.query, q.Include, q.Exclude, tt.inc, tt.exc)
			}
			if got := q.String(); got != tt.canon {
				t.Fatalf("String() = %q, want %q", got, tt.canon)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, query, want string
	}{
		{"empty", "", "query is empty"},
		{"blank", "  \t ", "query is empty"},
		{"too long", strings.Repeat("a ", MaxQueryBytes), "bytes long"},
		{"unbalanced quote", `foo "bar`, "unbalanced double quote at byte 4"},
		{"unbalanced after phrase", `"a b" "c`, "unbalanced double quote at byte 6"},
		{"empty phrase", `foo ""`, `phrase "" has no words`},
		{"punctuation phrase", `foo "--"`, `phrase "--" has no words`},
		{"only exclusions", "-foo -bar", "only excludes"},
		{"only excluded phrase", `-"a b"`, "only excludes"},
		{"only punctuation", "&& ||", "only punctuation"},
		{"short prefix", "ab*", "prefix ab* is too short"},
		{"short prefix in path", "auth/lo*", "prefix auth/lo* is too short"},
		{"short excluded prefix", "foo -be*", "prefix be* is too short"},
		{"word too long", "x" + strings.Repeat("y", MaxTermBytes), "longer than 128 bytes"},
		{"too many words", strings.Repeat("w ", MaxQueryTerms+1), "more than 32 words"},
		{"invalid utf-8", "ab\xff", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Parse(tt.query)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.query, q)
			}
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("error %v does not match ErrBadQuery", err)
			}
			var qe *Error
			if !errors.As(err, &qe) || qe.Hint == "" {
				t.Fatalf("error %v is not an *Error with a hint", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	const text = "Calling parseConfig(path) in /home/me/internal/auth/login.go: zebrafish saw a quokka. Übergröße!"
	tests := []struct {
		query string
		want  bool
	}{
		{"zebrafish quokka", true},
		{"quokka zebrafish", true},
		{"QUOKKA", true},
		{`"zebrafish saw"`, true},
		{`"saw zebrafish"`, false},
		{"zebra*", true},
		{"zebra", false},
		{"parseConfig", true},
		{"parseconfig(", true},
		{"parse*", true},
		{"config", false},
		{"login.go", true},
		{"auth/login.go", true},
		{"internal/auth/login.go", true},
		{"/home/me/internal/auth/login.go", true},
		{"auth/login.py", false},
		{"other/login.go", false},
		{"zebrafish -quokka", false},
		{"zebrafish -walrus", true},
		{`zebrafish -"a quokka"`, false},
		{`zebrafish -"quokka a"`, true},
		{"zebrafish -quok*", false},
		{"übergröße", true},
		{"ÜBERGRÖSSE", false},      // no case folding beyond lower-casing: ß is not ss
		{"zebrafish walrus", true}, // v3: words are ranked, one is enough
		{"walrus narwhal", false},
		{"+zebrafish walrus", true},
		{"zebrafish +walrus", false},
		{`walrus "zebrafish saw"`, true},
		{`walrus "saw zebrafish"`, false},
		{"what did the walrus say", false},   // function words alone make no match
		{"what did the zebrafish see", true}, // one content word is enough
		{"in the", true},                     // a query of function words still searches them
		{"of the", false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := Parse(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Matches(text); got != tt.want {
				t.Fatalf("%q matches = %v, want %v", tt.query, got, tt.want)
			}
		})
	}
}
