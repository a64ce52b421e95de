package fts

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the query language. They keep every query cheap for the index: a prefix stands
// for every term that starts with it, and FTS5 merges all their posting lists before
// anything else (at 1 GB of messages: co* 0.5 s, con* 0.17 s, conf* 0.016 s).
const (
	// MaxQueryBytes is the longest query accepted.
	MaxQueryBytes = 1000
	// MaxQueryTerms is the most words and phrases (included and excluded) in one query.
	MaxQueryTerms = 32
	// MinPrefixRunes is the fewest characters before a trailing *.
	MinPrefixRunes = 3
)

// ErrBadQuery is matched (errors.Is) by every *Error Parse returns.
var ErrBadQuery = errors.New("bad search query")

// Error says what is wrong with a query and how to fix it. Its text is meant to be shown to
// the user or the model as is.
type Error struct {
	// Offset is the byte offset in the query where the problem was found.
	Offset int
	// Msg says what was wrong; Hint what to do.
	Msg, Hint string
}

func (e *Error) Error() string { return e.Msg + "; " + e.Hint }

// Is makes errors.Is(err, ErrBadQuery) true.
func (e *Error) Is(target error) bool { return target == ErrBadQuery }

// Term is one word or phrase of a query.
type Term struct {
	// Terms are the lower-cased terms, to be found at consecutive positions. A word with
	// punctuation inside (auth/login.go, foo-bar, a.b) has several, like a phrase.
	Terms []string
	// Prefix makes the last of Terms match any term that starts with it.
	Prefix bool
	// Quoted is true when the query wrote the term in double quotes.
	Quoted bool
	// Required is true for a term that must occur: written +word, or "quoted".
	Required bool
	// Stop is true for a plain word that is a function word (IsStopWord): it makes no entry
	// a match by itself, unless the query has nothing but such words.
	Stop bool
	// Source is the term as written in the query, without the leading '-' or '+'.
	Source string
}

// Query is a parsed search query (contract v3): an entry matches when it contains every
// Required Include term, none of the Exclude terms, and at least one of the Ranked terms.
// Entries are ranked by the Ranked terms they hold (BM25).
type Query struct {
	Include []Term
	Exclude []Term
}

// Ranked returns the Include terms that make an entry a match and count in its score: those
// that are not function words, or all of them when the query has only function words. Every
// Required term is among them.
func (q *Query) Ranked() []Term {
	out := make([]Term, 0, len(q.Include))
	for _, t := range q.Include {
		if !t.Stop {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return q.Include
	}
	return out
}

// Required returns the Include terms that must occur.
func (q *Query) Required() []Term {
	var out []Term
	for _, t := range q.Include {
		if t.Required {
			out = append(out, t)
		}
	}
	return out
}

// String returns a canonical form of the query: equal strings mean equal queries (a cursor
// can carry its hash). Words are shown as their terms (lower-cased, stemmed); multi-term
// words as phrases; required terms with a leading +.
func (q *Query) String() string {
	var b strings.Builder
	write := func(t Term, neg bool) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if neg {
			b.WriteByte('-')
		} else if t.Required {
			b.WriteByte('+')
		}
		if len(t.Terms) > 1 {
			b.WriteByte('"')
		}
		b.WriteString(strings.Join(t.Terms, " "))
		if len(t.Terms) > 1 {
			b.WriteByte('"')
		}
		if t.Prefix {
			b.WriteByte('*')
		}
	}
	for _, t := range q.Include {
		write(t, false)
	}
	for _, t := range q.Exclude {
		write(t, true)
	}
	return b.String()
}

// Parse reads a query of the contract's language (v3):
//
//	word        ranked: entries holding more of the words, rarer ones and more often, first;
//	            an entry needs at least one of them (function words do not count, see
//	            IsStopWord); English inflections match each other (see Stemmed)
//	+word       the word must occur; +"a phrase" and +pref* too
//	"a phrase"  must occur: the words in this order, next to each other
//	pars*       a trailing * makes the word a prefix (of at least MinPrefixRunes characters)
//	-word       entries containing the word are left out; -"a phrase" and -pref* too
//
// Punctuation inside a word splits it into terms searched as a phrase: auth/login.go finds
// internal/auth/login.go. A word made only of punctuation (&&, ->) is ignored. It returns an
// *Error (matching ErrBadQuery) for an empty or too long query, an unbalanced quote, an empty
// phrase, a prefix that is too short, a word longer than MaxTermBytes, too many words, or a
// query with only exclusions.
func Parse(s string) (*Query, error) {
	if len(s) > MaxQueryBytes {
		return nil, &Error{Offset: MaxQueryBytes, Msg: fmt.Sprintf("query is %d bytes long", len(s)),
			Hint: fmt.Sprintf("shorten it to at most %d bytes", MaxQueryBytes)}
	}
	if !utf8.ValidString(s) {
		return nil, &Error{Msg: "query is not valid UTF-8", Hint: "send the query as UTF-8 text"}
	}
	if strings.TrimSpace(s) == "" {
		return nil, &Error{Msg: "query is empty", Hint: "give at least one word to look for"}
	}
	q := &Query{}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		start := i
		neg, req := false, false
		if (s[i] == '-' || s[i] == '+') && i+1 < len(s) && (s[i+1] == '"' || isWordStart(s[i+1:])) {
			neg, req = s[i] == '-', s[i] == '+'
			i++
		}
		var t Term
		var err error
		if s[i] == '"' {
			t, i, err = parsePhrase(s, i)
		} else {
			t, i, err = parseWord(s, i)
		}
		if err != nil {
			return nil, err
		}
		if len(t.Terms) == 0 {
			continue // punctuation only
		}
		t.Required = (req || t.Quoted) && !neg
		if t.Required || neg || t.Prefix || len(t.Terms) > 1 {
			t.Stop = false
		}
		if neg {
			q.Exclude = append(q.Exclude, t)
		} else {
			q.Include = append(q.Include, t)
		}
		if n := len(q.Include) + len(q.Exclude); n > MaxQueryTerms {
			return nil, &Error{Offset: start, Msg: fmt.Sprintf("query has more than %d words and phrases", MaxQueryTerms),
				Hint: "keep the few most distinctive words"}
		}
	}
	switch {
	case len(q.Include) == 0 && len(q.Exclude) == 0:
		return nil, &Error{Msg: "query has no words to search for, only punctuation",
			Hint: "give at least one word of letters or digits"}
	case len(q.Include) == 0:
		return nil, &Error{Msg: "query only excludes words (-word)",
			Hint: "add at least one word to look for"}
	}
	return q, nil
}

// parsePhrase reads "..." starting at the quote s[i]; a * right after the closing quote or
// just before it (after a word character) makes the last term a prefix.
func parsePhrase(s string, i int) (Term, int, error) {
	end := strings.IndexByte(s[i+1:], '"')
	if end < 0 {
		return Term{}, 0, &Error{Offset: i, Msg: fmt.Sprintf("unbalanced double quote at byte %d", i),
			Hint: `close the phrase with a second " or remove the quote`}
	}
	end += i + 1
	body := s[i+1 : end]
	next := end + 1
	prefix := false
	if next < len(s) && s[next] == '*' {
		prefix, next = true, next+1
	}
	if trimmed := strings.TrimRight(body, "*"); len(trimmed) < len(body) && endsWithWord(trimmed) {
		prefix, body = true, trimmed
	}
	t, err := makeTerm(s[i:next], body, prefix, i)
	if err != nil {
		return Term{}, 0, err
	}
	if len(t.Terms) == 0 {
		return Term{}, 0, &Error{Offset: i, Msg: fmt.Sprintf("phrase %s has no words", s[i:end+1]),
			Hint: "put words between the quotes or remove them"}
	}
	t.Quoted = true
	return t, next, nil
}

// parseWord reads a word starting at s[i]: up to white space or a double quote.
func parseWord(s string, i int) (Term, int, error) {
	j := i
	for j < len(s) && s[j] != '"' {
		r, size := utf8.DecodeRuneInString(s[j:])
		if unicode.IsSpace(r) {
			break
		}
		j += size
	}
	word := s[i:j]
	trimmed := strings.TrimRight(word, "*")
	prefix := len(trimmed) < len(word) && endsWithWord(trimmed)
	t, err := makeTerm(word, trimmed, prefix, i)
	return t, j, err
}

// makeTerm tokenizes text into a Term, checking term lengths and the prefix length. The terms
// are index terms (scanTerms), except a prefix's last term, which is only lower-cased: a
// prefix matches the terms that start with it (and, when the prefix is itself a plain word,
// its stem too; see the engines).
func makeTerm(source, text string, prefix bool, offset int) (Term, error) {
	t := Term{Source: source, Prefix: prefix}
	var err error
	var low []byte
	var words int
	stop := false
	scan(text, func(start, end int) {
		if err != nil {
			return
		}
		var ok bool
		if low, ok = appendLower(low[:0], text[start:end]); !ok {
			err = &Error{Offset: offset, Msg: fmt.Sprintf("word %.40q… is longer than %d bytes", text[start:end], MaxTermBytes),
				Hint: "such words are not indexed; search for a shorter word near it"}
			return
		}
		words++
		stop = IsStopWord(string(low))
		t.Terms = append(t.Terms, string(low))
	})
	if err != nil {
		return Term{}, err
	}
	// Index forms: the same scan as the indexer's, over the same text.
	i := 0
	scanTerms(text, func(term []byte, _, _ int) {
		if i < len(t.Terms) && !(prefix && i == len(t.Terms)-1) {
			t.Terms[i] = string(term)
		}
		i++
	})
	t.Stop = words == 1 && stop
	if prefix && len(t.Terms) > 0 {
		if last := t.Terms[len(t.Terms)-1]; utf8.RuneCountInString(last) < MinPrefixRunes {
			return Term{}, &Error{Offset: offset, Msg: fmt.Sprintf("prefix %s is too short", source),
				Hint: fmt.Sprintf("give at least %d characters before the *", MinPrefixRunes)}
		}
	}
	return t, nil
}

// endsWithWord reports whether s ends with a word character.
func endsWithWord(s string) bool {
	if s == "" {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s)
	if r < utf8.RuneSelf {
		return asciiWord[r]
	}
	return runeClass(r) != separator
}
