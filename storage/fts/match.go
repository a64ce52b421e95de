package fts

import "strings"

// Matches reports whether text matches q: every Include term occurs in it and no Exclude
// term does. It is the reference meaning of a query, which indexes implement with their own
// structures; memory can use it to check a hit against the text it read back, and tests use
// it as the oracle.
func (q *Query) Matches(text string) bool {
	terms := Terms(text)
	for _, t := range q.Include {
		if !t.occursIn(terms) {
			return false
		}
	}
	for _, t := range q.Exclude {
		if t.occursIn(terms) {
			return false
		}
	}
	return true
}

// occursIn reports whether t matches at some position of terms.
func (t Term) occursIn(terms []string) bool {
	for i := range terms {
		if t.matchAt(terms, i) {
			return true
		}
	}
	return false
}

// matchAt reports whether t's terms occur at terms[i], terms[i+1], ...
func (t Term) matchAt(terms []string, i int) bool {
	if i+len(t.Terms) > len(terms) {
		return false
	}
	last := len(t.Terms) - 1
	for k, want := range t.Terms {
		got := terms[i+k]
		if k == last && t.Prefix {
			if !strings.HasPrefix(got, want) {
				return false
			}
		} else if got != want {
			return false
		}
	}
	return true
}
