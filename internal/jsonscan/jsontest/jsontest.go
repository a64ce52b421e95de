// Package jsontest makes the random JSON text that the differential tests of jsonscan's users
// share: strings made of awkward pieces, any value, objects with white space, and damage to
// all of them, each drawn from the caller's *rand.Rand so a seed gives the same text again.
//
// Only tests import it (it is a package of its own, not a _test file, so that the tests of
// other packages can); it imports only the standard library.
package jsontest

import (
	"math/rand/v2"
	"strings"
)

// Escapes are the escapes a JSON string can hold: every short one, and \u escapes of all
// kinds (ASCII, the replacement character, surrogate pairs in both cases, lone and reversed
// surrogates, NUL). Callers add the raw pieces that matter to them.
var Escapes = []string{
	`\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u0041`, `\u00e9`, `\u20ac`, `\uFFFD`,
	`\ud83d`, `\ude00`, `\ud83d\ude00`, `\uD83D\uDE00`, `\udbff\udfff`, `\ud800`, `\udc00`, `\udcff\udc00`, `\ud800\udbff`, `\u0000`,
}

// Pieces returns up to max-1 pieces drawn from parts, joined.
func Pieces(rng *rand.Rand, parts []string, max int) string {
	var b strings.Builder
	for range rng.IntN(max) {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

// Pick returns one of options.
func Pick(rng *rand.Rand, options ...string) string { return options[rng.IntN(len(options))] }

// Space returns white space one time in four, nothing otherwise.
func Space(rng *rand.Rand) string {
	if rng.IntN(4) != 0 {
		return ""
	}
	return Pick(rng, " ", "\n", "\t ", "\r\n  ")
}

// Object returns an object of members ("key":value each, written compactly), shuffled, with
// white space around its tokens. Members are cut at their first ':', so white space can land
// inside a key that holds one, which makes the object invalid: more damage for the tests.
func Object(rng *rand.Rand, members []string) string {
	rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	var b strings.Builder
	b.WriteString("{" + Space(rng))
	for i, m := range members {
		if i > 0 {
			b.WriteString("," + Space(rng))
		}
		k, v, _ := strings.Cut(m, ":")
		b.WriteString(k + Space(rng) + ":" + Space(rng) + v + Space(rng))
	}
	b.WriteString("}")
	return b.String()
}

// Value returns any JSON value, containers nested at most three deep counting from depth,
// pretty or compact, its strings (keys included) made by str; see Object for when it is not
// valid.
func Value(rng *rand.Rand, depth int, str func(*rand.Rand) string) string {
	switch n := rng.IntN(9); {
	case n == 0:
		return "null"
	case n == 1:
		return []string{"true", "false"}[rng.IntN(2)]
	case n == 2:
		return []string{"0", "-0", "12", "-3.25", "1e9", "2.5E-3", "-0.0e+1"}[rng.IntN(7)]
	case n == 3 || depth > 2:
		return str(rng)
	case n < 6:
		var b strings.Builder
		b.WriteString("[" + Space(rng))
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteString("," + Space(rng))
			}
			b.WriteString(Value(rng, depth+1, str) + Space(rng))
		}
		b.WriteString("]")
		return b.String()
	}
	var members []string
	for range rng.IntN(4) {
		members = append(members, str(rng)+":"+Value(rng, depth+1, str))
	}
	return Object(rng, members)
}

// Damage changes, inserts or removes a byte of s, or cuts it short.
func Damage(rng *rand.Rand, s string) string {
	if s == "" {
		return s
	}
	i := rng.IntN(len(s))
	junk := string(`"\{}[],: 0atn\u`[rng.IntN(15)])
	switch rng.IntN(4) {
	case 0:
		return s[:i] + junk + s[i+1:]
	case 1:
		return s[:i] + junk + s[i:]
	case 2:
		return s[:i] + s[i+1:]
	}
	return s[:i]
}

// inputStringParts are what InputString's strings are made of: odd UTF-8, JSON's own
// characters and escapes, HTML characters and a line separator.
var inputStringParts = append(append([]string{
	"a", "Z", " ", "é", "€", "😀", "\xff", "\xe2\x82", "\x80", "\xed\xa0\x80", "{", "]", ":",
}, Escapes...), "<>&", "\u2028")

// InputString returns a random JSON string literal (quoted) as clients may send one, now and
// then with a run of plain text.
func InputString(rng *rand.Rand) string {
	s := Pieces(rng, inputStringParts, 10)
	if rng.IntN(4) == 0 {
		s += strings.Repeat("plain text runs ", rng.IntN(8))
	}
	return `"` + s + `"`
}
