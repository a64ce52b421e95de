package fts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SnippetRunes is the most characters (runes) a snippet holds, ellipses included.
const SnippetRunes = 300

// maxSpans bounds the work of choosing a window in a huge text with a common word.
const maxSpans = 4096

// span is one occurrence of an Include term: bytes [start, end) of the text, runes
// [rstart, rend).
type span struct {
	start, end   int
	rstart, rend int
	term         int
}

// Snippet returns plain text of at most SnippetRunes characters from text around the best
// match of q: the stretch that holds the most different Include terms (then the most
// occurrences, then the earliest), widened with context on both sides. The match itself is
// always inside, unless one phrase occurrence alone is longer than a snippet. White space
// and control or invisible formatting characters become single spaces; "…" marks a cut. With
// q nil or no match in text, it returns the beginning of text.
func Snippet(text string, q *Query) string {
	spans := findSpans(text, q)
	if len(spans) == 0 {
		s, cut := firstRunes(collapse(prefixBytes(text, 4*SnippetRunes)), SnippetRunes-1)
		s = strings.TrimSpace(s)
		if cut || len(text) > 4*SnippetRunes {
			s += "…"
		}
		return s
	}
	best := bestWindow(spans, len(q.Ranked()), SnippetRunes-2)
	cs, ce := best[0], best[1]
	mid := collapse(text[cs:ce])
	budget := SnippetRunes - 2 - utf8.RuneCountInString(mid)
	if budget < 0 { // one occurrence longer than a snippet
		s, _ := firstRunes(mid, SnippetRunes-2)
		return ellipsis(cs > 0) + strings.TrimSpace(s) + "…"
	}
	leftRaw := suffixBytes(text[:cs], 4*budget+64)
	rightRaw := prefixBytes(text[ce:], 4*budget+64)
	left, right := collapse(leftRaw), collapse(rightRaw)
	// Split the budget evenly, giving one side's unused share to the other.
	lb := budget / 2
	if n := utf8.RuneCountInString(right); n < budget-lb {
		lb = budget - n
	}
	rb := budget - min(lb, utf8.RuneCountInString(left))
	l, lcut := lastRunes(left, lb)
	r, rcut := firstRunes(right, rb)
	lcut = lcut || len(leftRaw) < cs
	rcut = rcut || ce+len(rightRaw) < len(text)
	if lcut {
		l = trimPartialWordLeft(l)
	}
	if rcut {
		r = trimPartialWordRight(r)
	}
	out := strings.TrimSpace(l + mid + r)
	return ellipsis(lcut) + out + ellipsis(rcut)
}

func ellipsis(b bool) string {
	if b {
		return "…"
	}
	return ""
}

// findSpans lists the occurrences of q's Include terms in text, in text order. It runs
// once over the text without allocating per term: each term is looked up among the query's
// terms as it is lowered, and phrases are then matched on those ids.
func findSpans(text string, q *Query) []span {
	if q == nil || len(q.Include) == 0 {
		return nil
	}
	terms := q.Ranked()
	// ids of the exact terms the query needs; prefixes (at most MaxQueryTerms) as bits.
	ids := map[string]int32{}
	var prefixes []Term
	for _, t := range terms {
		for j, term := range t.Terms {
			if j == len(t.Terms)-1 && t.Prefix {
				prefixes = append(prefixes, t)
			} else if _, ok := ids[term]; !ok {
				ids[term] = int32(len(ids))
			}
		}
	}
	var toks []tok
	scanTerms(text, func(term []byte, start, end int) {
		t := tok{start: start, end: end, id: -1}
		if id, ok := ids[string(term)]; ok {
			t.id = id
		}
		for i, p := range prefixes {
			if p.PrefixMatch(string(term)) {
				t.pre |= 1 << i
			}
		}
		toks = append(toks, t)
	})
	// Each Ranked term as ids, its prefix (if any) as a bit number.
	want := make([][]int32, len(terms))
	bit := make([]int, len(terms))
	pi := 0
	for k, t := range terms {
		for j, term := range t.Terms {
			if j == len(t.Terms)-1 && t.Prefix {
				bit[k] = pi
				pi++
			} else {
				want[k] = append(want[k], ids[term])
			}
		}
	}
	var spans []span
	for i := range toks {
		for k, t := range terms {
			if n := len(t.Terms); i+n <= len(toks) && matchIDs(t, toks[i:i+n], want[k], bit[k]) {
				spans = append(spans, span{start: toks[i].start, end: toks[i+n-1].end, term: k})
			}
		}
		if len(spans) >= maxSpans {
			break
		}
	}
	// Rune offsets, counted once along the text (spans are ordered by start).
	pos, runes := 0, 0
	for i := range spans {
		runes += utf8.RuneCountInString(text[pos:spans[i].start])
		pos = spans[i].start
		spans[i].rstart = runes
		spans[i].rend = runes + utf8.RuneCountInString(text[spans[i].start:spans[i].end])
	}
	return spans
}

// tok is a term of the text as findSpans sees it.
type tok struct {
	start, end int
	id         int32  // the exact query term it is, or -1
	pre        uint64 // bit i: it starts with the query's i-th prefix
}

// matchIDs reports whether toks (as many as t has terms) match t: the exact terms by their
// ids (want), a last prefix term by its bit.
func matchIDs(t Term, toks []tok, want []int32, bit int) bool {
	for j := range want {
		if toks[j].id != want[j] {
			return false
		}
	}
	return !t.Prefix || toks[len(want)].pre&(1<<bit) != 0
}

// bestWindow picks the byte range [start, end) covering a run of spans no longer than limit
// runes with the most distinct terms, then the most spans, then the earliest.
func bestWindow(spans []span, nterms, limit int) [2]int {
	counts := make([]int, nterms)
	distinct := 0
	bestD, bestN := -1, -1
	var best [2]int
	l := 0
	for r := range spans {
		if counts[spans[r].term] == 0 {
			distinct++
		}
		counts[spans[r].term]++
		for l < r && maxEnd(spans[l:r+1])-spans[l].rstart > limit {
			counts[spans[l].term]--
			if counts[spans[l].term] == 0 {
				distinct--
			}
			l++
		}
		if n := r - l + 1; distinct > bestD || distinct == bestD && n > bestN {
			bestD, bestN = distinct, n
			best = [2]int{spans[l].start, maxByteEnd(spans[l : r+1])}
		}
	}
	return best
}

func maxEnd(s []span) int {
	m := 0
	for _, x := range s {
		m = max(m, x.rend)
	}
	return m
}

func maxByteEnd(s []span) int {
	m := 0
	for _, x := range s {
		m = max(m, x.end)
	}
	return m
}

// collapse turns runs of white space, control and invisible formatting characters (zero
// width, BiDi controls) into one space, keeping a leading or trailing space.
func collapse(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}

// prefixBytes and suffixBytes cut s to at most n bytes at a rune boundary.
func prefixBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func suffixBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// firstRunes returns the first n runes of s and whether it cut anything.
func firstRunes(s string, n int) (string, bool) {
	i := 0
	for k := 0; k < n; k++ {
		if i >= len(s) {
			return s, false
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], i < len(s)
}

// lastRunes returns the last n runes of s and whether it cut anything.
func lastRunes(s string, n int) (string, bool) {
	i := len(s)
	for k := 0; k < n; k++ {
		if i <= 0 {
			return s, false
		}
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:], i > 0
}

// trimPartialWordLeft drops a word cut in half at the start of s, when a space follows soon.
func trimPartialWordLeft(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 && i <= 24 {
		return s[i:]
	}
	return s
}

// trimPartialWordRight drops a word cut in half at the end of s, when a space precedes soon.
func trimPartialWordRight(s string) string {
	if i := strings.LastIndexByte(s, ' '); i >= 0 && len(s)-i <= 24 {
		return s[:i]
	}
	return s
}
