package redact

import (
	"fmt"
	"regexp"
	"strings"
)

// Marker is what every redacted span starts with; whole secrets become "[REDACTED:kind]",
// values of assignments "[REDACTED]".
const Marker = "[REDACTED"

// Redactor replaces secrets in text. Build it once with New; it is safe for concurrent use.
type Redactor struct {
	rules  []*rule
	pre    *prefilter
	extras []*rule
}

// rule is one kind of secret.
type rule struct {
	name string // marker kind: "[REDACTED:name]"; "" gives "[REDACTED]"
	re   *regexp.Regexp
	// triggers are literals (ASCII case-insensitive) of which at least one occurs in any match;
	// the rule's regexp runs only on text containing one.
	triggers []string
	// value, when > 0, is the capturing group holding the secret; the rest of the match (a key
	// name, quotes) is kept. 0 replaces the whole match.
	value int
	// valid, when set, vets the secret text (the group or the whole match); false keeps it.
	valid func(secret string, m []int, s string) bool
	// literal gates user patterns case-sensitively ("" = always run).
	literal string
	// unquote keeps the quotes around a quoted secret ("…", '…', \"…\").
	unquote bool
	// before and after bound the text around a trigger in which the regexp runs (Go's regexp
	// has no DFA, so running it over a whole large text is slow); after < 0 means to the end.
	before, after int
}

// New returns a Redactor with the built-in rules plus extra, user-supplied regular expressions
// (RE2 syntax, as in package regexp). A match of an extra pattern is replaced whole by
// "[REDACTED]", or only its group named "secret" when it has one. The error names the first
// pattern that does not compile.
func New(extra []string) (*Redactor, error) {
	r := &Redactor{rules: builtinRules()}
	triggers := make([][]string, len(r.rules))
	for i, ru := range r.rules {
		triggers[i] = ru.triggers
	}
	r.pre = newPrefilter(triggers)
	for i, p := range extra {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact: extra pattern %d %q: %w", i+1, p, err)
		}
		ru := &rule{re: re}
		if g := re.SubexpIndex("secret"); g > 0 {
			ru.value = g
		}
		ru.literal, _ = re.LiteralPrefix()
		r.extras = append(r.extras, ru)
	}
	return r, nil
}

// String returns s with secrets replaced. Text without any trigger literal (the common case)
// is returned as is after one table-driven pass, without allocating. Redacting twice gives the
// same text as redacting once.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	if mask := r.pre.scan(s); mask != 0 {
		hits := r.pre.hits(s, mask, nil)
		for i, ru := range r.rules {
			bit := uint64(1) << uint(i)
			if mask&bit == 0 {
				continue
			}
			spans := ru.windowSpans(s, hits, bit)
			if spans == nil {
				continue
			}
			s = replace(s, spans, ru.marker())
			// Offsets moved; replacements are rare, so rescanning is cheap overall.
			hits = r.pre.hits(s, mask, hits[:0])
		}
	}
	for _, ru := range r.extras {
		if ru.literal == "" || strings.Contains(s, ru.literal) {
			s = ru.apply(s)
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

func (ru *rule) marker() string {
	if ru.name == "" || ru.value > 0 {
		return "[REDACTED]"
	}
	return "[REDACTED:" + ru.name + "]"
}

func (ru *rule) apply(s string) string {
	if spans := ru.spans(s); spans != nil {
		return replace(s, spans, ru.marker())
	}
	return s
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

// maxStretch bounds how far a window grows to reach the start of a key name or the end of a
// token.
const maxStretch = 4096

// windowSpans runs the rule's regexp only in windows around its triggers' hits, each widened
// to the surrounding word so that a window never starts or ends inside a key or token.
func (ru *rule) windowSpans(s string, hits []hit, bit uint64) [][2]int {
	var out [][2]int
	lo, hi := -1, -1
	flush := func() {
		if lo < 0 {
			return
		}
		for _, sp := range ru.spans(s[lo:hi]) {
			out = append(out, [2]int{sp[0] + lo, sp[1] + lo})
		}
	}
	for _, h := range hits {
		if h.rules&bit == 0 {
			continue
		}
		l := max(0, h.end-64-ru.before)
		for stop := max(0, l-maxStretch); l > stop && wordish(s[l-1]); l-- {
		}
		e := len(s)
		if ru.after >= 0 && h.end+ru.after < len(s) {
			e = h.end + ru.after
			for stop := min(len(s), e+maxStretch); e < stop && tokenish(s[e]); e++ {
			}
		}
		if lo >= 0 && l <= hi {
			hi = max(hi, e)
			continue
		}
		flush()
		lo, hi = l, e
	}
	flush()
	return out
}

// wordish bytes may belong to a key name or scheme; a window never starts after one.
func wordish(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c == '+' || ('0' <= c && c <= '9') || ('a' <= c|0x20 && c|0x20 <= 'z')
}

// tokenish bytes may belong to a token; a window never ends before one.
func tokenish(c byte) bool {
	return c > ' ' && c != '"' && c != '\'' && c != '\\' && c != '<' && c != '>'
}

// spans returns the byte ranges of s the rule replaces, in order.
func (ru *rule) spans(s string) [][2]int {
	ms := ru.re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return nil
	}
	var out [][2]int
	for _, m := range ms {
		start, end := m[0], m[1]
		if ru.value > 0 {
			start, end = m[2*ru.value], m[2*ru.value+1]
		}
		if start < 0 || start == end {
			continue
		}
		secret := s[start:end]
		if strings.HasPrefix(secret, Marker) || (ru.valid != nil && !ru.valid(secret, m, s)) {
			continue
		}
		if ru.unquote {
			switch {
			case len(secret) >= 4 && strings.HasPrefix(secret, `\"`) && strings.HasSuffix(secret, `\"`):
				start, end = start+2, end-2
			case len(secret) >= 2 && (secret[0] == '"' || secret[0] == '\''):
				start, end = start+1, end-1
			}
		}
		out = append(out, [2]int{start, end})
	}
	return out
}
