package fts

import "strings"

// Matches reports whether text matches q (contract v3): every Required term occurs in it, no
// Exclude term does, and at least one Ranked term does. It is the reference meaning of a
// query, which indexes implement with their own structures; tests use it as the oracle, and
// the local index checks multi-term words (phrases, paths) against the stored text with it.
func (q *Query) Matches(text string) bool {
	return q.MatchesTerms(Terms(text))
}

// MatchesTerms is Matches on the terms of a text (Terms).
func (q *Query) MatchesTerms(terms []string) bool {
	for _, t := range q.Include {
		if t.Required && !t.OccursIn(terms) {
			return false
		}
	}
	for _, t := range q.Exclude {
		if t.OccursIn(terms) {
			return false
		}
	}
	for _, t := range q.Ranked() {
		if t.OccursIn(terms) {
			return true
		}
	}
	return false
}

// OccursIn reports whether t matches at some position of terms.
func (t Term) OccursIn(terms []string) bool {
	return t.Count(terms) > 0
}

// Count returns how many times t occurs in terms (its term frequency): occurrences of a
// phrase do not overlap.
func (t Term) Count(terms []string) int {
	n := 0
	for i := 0; i+len(t.Terms) <= len(terms); i++ {
		if t.matchAt(terms, i) {
			n++
			i += len(t.Terms) - 1
		}
	}
	return n
}

// matchAt reports whether t's terms occur at terms[i], terms[i+1], ...
func (t Term) matchAt(terms []string, i int) bool {
	last := len(t.Terms) - 1
	for k, want := range t.Terms {
		got := terms[i+k]
		if k == last && t.Prefix {
			if !t.PrefixMatch(got) {
				return false
			}
		} else if got != want {
			return false
		}
	}
	return true
}

// PrefixMatch reports whether an index term matches t's last term as a prefix: it starts
// with it, or it is the prefix's own stem (PrefixStem). Index terms of plain words are
// stems, which can be shorter than what was typed: fixing* must still find "fixing".
func (t Term) PrefixMatch(term string) bool {
	p := t.Terms[len(t.Terms)-1]
	return strings.HasPrefix(term, p) || term == t.PrefixStem()
}

// PrefixStem returns the stem of a prefix term's last word when that word is a plain
// English word whose stem differs from it, else "".
func (t Term) PrefixStem() string {
	if !t.Prefix || len(t.Terms) == 0 {
		return ""
	}
	p := t.Terms[len(t.Terms)-1]
	if !Stemmable([]byte(p)) {
		return ""
	}
	if s := Stem(p); s != p {
		return s
	}
	return ""
}
