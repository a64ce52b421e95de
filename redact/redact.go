package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Marker is what every redacted span starts with; whole secrets become "[REDACTED:kind]",
// values of assignments and user patterns "[REDACTED]".
const Marker = "[REDACTED"

// Redactor replaces secrets in text. Build it once with New; it is safe for concurrent use.
type Redactor struct {
	rules  []*rule
	pre    *prefilter
	extras []*userRule
}

// New returns a Redactor with the built-in rules plus extra, user-supplied regular expressions
// (RE2 syntax, as in package regexp). A match of an extra pattern is replaced whole by
// "[REDACTED]", or only its group named "secret" when it has one; empty matches are ignored.
// The error names the first pattern that does not compile.
func New(extra []string) (*Redactor, error) {
	rules, pre := builtin()
	r := &Redactor{rules: rules, pre: pre}
	for i, p := range extra {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact: extra pattern %d %q: %w", i+1, p, err)
		}
		x := &userRule{re: re, group: max(0, re.SubexpIndex("secret"))}
		x.literal, _ = re.LiteralPrefix()
		r.extras = append(r.extras, x)
	}
	return r, nil
}

// builtin returns the built-in rules and their prefilter, built on the first call and shared
// by every Redactor after it (both are read-only): a server makes one Redactor for what it
// prints and one for its store, and each build took about 8 ms of the start.
var builtin = sync.OnceValues(func() ([]*rule, *prefilter) {
	rules := builtinRules()
	triggers := make([][]string, len(rules))
	for i, ru := range rules {
		triggers[i] = ru.triggers
	}
	return rules, newPrefilter(triggers)
})

// String returns s with secrets replaced. Text without any trigger literal (the common case)
// costs one table-driven pass and no allocation, and comes back unchanged. Redacting twice
// gives the same text as redacting once (for the built-in rules; a user pattern matching
// "[REDACTED]" itself would break that).
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	if mask, hits := r.pre.scanHits(s, nil); mask != 0 {
		for i, ru := range r.rules {
			bit := uint64(1) << uint(i)
			if mask&bit == 0 {
				continue
			}
			spans := ru.find(s, hits, bit)
			if spans == nil {
				continue
			}
			s = replace(s, spans, ru.marker())
			// Offsets moved; replacements are rare, so rescanning costs little overall.
			hits = r.pre.hits(s, mask, hits[:0])
		}
	}
	for _, x := range r.extras {
		if x.literal == "" || strings.Contains(s, x.literal) {
			if spans := x.find(s); spans != nil {
				s = replace(s, spans, "[REDACTED]")
			}
		}
	}
	return s
}

// Bytes is String for byte slices; it returns b itself when nothing was redacted.
func (r *Redactor) Bytes(b []byte) []byte {
	s := string(b)
	out := r.String(s)
	if out == s {
		return b
	}
	return []byte(out)
}

func replace(s string, spans [][2]int, marker string) string {
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp[0]])
		b.WriteString(marker)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// userRule is a user pattern.
type userRule struct {
	re      *regexp.Regexp
	group   int    // the "secret" group, 0 = whole match
	literal string // a literal every match starts with, to skip the regexp cheaply
}

func (x *userRule) find(s string) [][2]int {
	var out [][2]int
	for _, m := range x.re.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[2*x.group], m[2*x.group+1]
		if start < 0 || start == end || strings.HasPrefix(s[start:end], Marker) {
			continue
		}
		out = append(out, [2]int{start, end})
	}
	return out
}

// Version is the version of the built-in rules. Fingerprint notices changed regexps and
// triggers by itself; bump Version when Go code (a custom rule, a validity check) changes what
// is redacted, so stores redacted with the older rules are redacted again.
const Version = 2

// Fingerprint identifies what this Redactor redacts: the rules' version and definitions and
// the user patterns. sessionmem re-applies redaction to a store whose marker holds another
// fingerprint (see "sessionmem redact").
func (r *Redactor) Fingerprint() string {
	h := sha256.New()
	fmt.Fprintf(h, "v%d\n", Version)
	for _, ru := range r.rules {
		fmt.Fprintf(h, "%s %d %q %v\n", ru.name, ru.mode, ru.triggers, ru.re)
	}
	for _, x := range r.extras {
		fmt.Fprintf(h, "extra %q\n", x.re.String())
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
