package fts

import (
	"slices"
	"strconv"
	"strings"
)

// PostgreSQL's limits on a tsvector: positions run from 1 to PGMaxPosition (larger ones are
// stored as PGMaxPosition, so a phrase is not found past it, single words still are), and a
// term keeps at most PGMaxPositions positions.
const (
	PGMaxPosition  = 16383
	PGMaxPositions = 256
)

// TSVector returns the terms of text as a PostgreSQL tsvector literal, to be cast with
// ::tsvector: 'term':1,4 'other':2. Positions are 1-based term positions, as phrases need.
// Building the literal here, not with to_tsvector, keeps PostgreSQL on this package's terms:
// its parser would split max_tokens into max and tokens.
func TSVector(text string) string {
	positions := map[string][]int{}
	var order []string
	pos := 0
	scanTerms(text, func(buf []byte, _, _ int) {
		pos++
		p := min(pos, PGMaxPosition)
		term := string(buf)
		ps, seen := positions[term]
		if !seen {
			order = append(order, term)
		}
		if len(ps) < PGMaxPositions && (len(ps) == 0 || ps[len(ps)-1] != p) {
			positions[term] = append(ps, p)
		}
	})
	slices.Sort(order)
	var b strings.Builder
	for i, term := range order {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(pgQuote(term))
		for j, p := range positions[term] {
			if j == 0 {
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(p))
		}
	}
	return b.String()
}

// TSQuery renders q as a PostgreSQL tsquery literal, to be cast with ::tsquery, that matches
// what q.Matches matches: every Required term ANDed (&), or else the Ranked terms ORed (|),
// and each exclusion as & !(...). Matching a TSVector of a text with it gives q.Matches(text),
// except for phrases past position PGMaxPosition.
func (q *Query) TSQuery() string {
	var out []string
	for _, t := range q.Required() {
		out = append(out, t.TSQuery())
	}
	if len(out) == 0 {
		var any []string
		for _, t := range q.Ranked() {
			any = append(any, t.TSQuery())
		}
		if len(any) == 1 {
			out = append(out, any[0])
		} else {
			out = append(out, "("+strings.Join(any, " | ")+")")
		}
	}
	for _, t := range q.Exclude {
		out = append(out, "!"+t.TSQuery())
	}
	return strings.Join(out, " & ")
}

// TSQuery renders one term as a tsquery: a lexeme, a phrase as lexemes joined by <->
// (followed-by), a prefix as :* (or its stem, see PrefixMatch).
func (t Term) TSQuery() string {
	parts := make([]string, len(t.Terms))
	for i, x := range t.Terms {
		parts[i] = pgQuote(x)
	}
	if t.Prefix {
		last := len(parts) - 1
		parts[last] += ":*"
		if s := t.PrefixStem(); s != "" {
			parts[last] = "(" + parts[last] + " | " + pgQuote(s) + ")"
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " <-> ") + ")"
}

// pgQuote quotes a lexeme for tsvector and tsquery input. Terms hold only word characters;
// the escapes are for safety.
func pgQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
