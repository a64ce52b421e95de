package redact

import (
	"strings"

	"github.com/sessionmem/sessionmem/internal/lazyre"
)

// How a rule's regexp is placed. Go's regexp has no DFA, so searching a whole large text with
// it is slow (about 10 MB/s here); rules therefore run it anchored at the places where the
// prefilter saw a trigger.
const (
	// atStart: re (anchored with ^) must match where a trigger begins, at a word boundary.
	atStart = iota
	// afterKey: the trigger is the end of a key name (password, …_TOKEN); re (anchored with ^)
	// matches the separator and value right after it, and group 1 is the secret.
	afterKey
	// span: re searches from the first trigger to the end of the text (rare, multi-line spans).
	span
	// custom: match (Go code) decides around each trigger; used for command-line and file
	// forms whose context (the command, the line) decides whether a word is a secret.
	custom
)

// rule is one kind of secret.
type rule struct {
	name     string         // marker kind: "[REDACTED:name]"; "" gives "[REDACTED]"
	mode     int            // atStart, afterKey or span
	triggers []string       // literals (ASCII case-insensitive); one occurs in every match
	re       *lazyre.Regexp // compiled on first use; nil for custom rules
	// group is the capturing group holding the secret; 0 is the whole match.
	group int
	// limit bounds how far past the trigger the regexp may look.
	limit int
	// key, for afterKey rules, vets the key name ending at the trigger; nil accepts any.
	key func(name string) bool
	// valid vets the secret (and sees the separator and the byte after it); nil accepts.
	valid func(secret, sep string, next byte) bool
	// unquote keeps quotes around a quoted secret ("…", '…', \"…\").
	unquote bool
	// midKey lets an afterKey trigger be followed by key characters (the "://" of a URL).
	midKey bool
	// match, for custom rules, returns the secret's span given where a trigger ends (the
	// span may lie before the trigger, as in "echo TOKEN | gh auth login --with-token").
	match func(s string, end int) [][2]int
}

func (ru *rule) marker() string {
	if ru.name == "" {
		return "[REDACTED]"
	}
	return "[REDACTED:" + ru.name + "]"
}

// find returns the spans of s to replace, in order, given the prefilter hits.
func (ru *rule) find(s string, hits []hit, bit uint64) [][2]int {
	if ru.mode == span {
		for _, h := range hits {
			if h.rules&bit != 0 {
				lo := max(0, h.end-len(ru.triggers[0])-64)
				var out [][2]int
				for _, m := range ru.re.Get().FindAllStringIndex(s[lo:], -1) {
					out = append(out, [2]int{m[0] + lo, m[1] + lo})
				}
				return out
			}
		}
		return nil
	}
	var out [][2]int
	done := 0 // text before this offset is already covered by a span
	for _, h := range hits {
		if h.rules&bit == 0 {
			continue
		}
		var sp [2]int
		var ok bool
		if ru.mode == custom {
			for _, sp := range ru.match(s, h.end) {
				if sp[0] >= done && sp[0] < sp[1] && !strings.HasPrefix(s[sp[0]:sp[1]], Marker) {
					out = append(out, sp)
					done = sp[1]
				}
			}
			continue
		}
		if ru.mode == atStart {
			sp, ok = ru.matchAtStart(s, h.end, done)
		} else {
			sp, ok = ru.matchAfterKey(s, h.end, done)
		}
		if ok {
			out = append(out, sp)
			done = sp[1]
		}
	}
	return out
}

func isWord(c byte) bool {
	return c == '_' || ('0' <= c && c <= '9') || ('a' <= c|0x20 && c|0x20 <= 'z')
}

func isKeyChar(c byte) bool { return isWord(c) || c == '.' || c == '-' }

func (ru *rule) window(s string, from int) string {
	if ru.limit > 0 && from+ru.limit < len(s) {
		return s[from : from+ru.limit]
	}
	return s[from:]
}

func (ru *rule) matchAtStart(s string, end, done int) ([2]int, bool) {
	for _, t := range ru.triggers {
		start := end - len(t)
		if start < done || !strings.EqualFold(s[start:end], t) || (start > 0 && isWord(s[start-1])) {
			continue
		}
		w := ru.window(s, start)
		m := ru.re.Get().FindStringSubmatchIndex(w)
		if m == nil {
			continue
		}
		a, b := m[2*ru.group], m[2*ru.group+1]
		if a < 0 || a == b || strings.HasPrefix(w[a:b], Marker) {
			continue
		}
		if m[1] < len(w) && isWord(w[m[1]]) && ru.group == 0 {
			continue // the token goes on: not the shape we know
		}
		if ru.valid != nil && !ru.valid(w[a:b], "", byteAt(w, m[1])) {
			continue
		}
		return [2]int{start + a, start + b}, true
	}
	return [2]int{}, false
}

func (ru *rule) matchAfterKey(s string, end, done int) ([2]int, bool) {
	if !ru.midKey && end < len(s) && isKeyChar(s[end]) {
		return [2]int{}, false // the key name goes on past the keyword (max_tokens, token_type)
	}
	start := end
	for start > 0 && isKeyChar(s[start-1]) {
		start--
	}
	if start < done || (ru.key != nil && !ru.key(s[start:end])) {
		return [2]int{}, false
	}
	w := ru.window(s, end)
	m := ru.re.Get().FindStringSubmatchIndex(w)
	if m == nil {
		return [2]int{}, false
	}
	a, b := m[2], m[3]
	v := w[a:b]
	if a == b || strings.HasPrefix(v, Marker) {
		return [2]int{}, false
	}
	if ru.valid != nil && !ru.valid(v, w[:a], byteAt(w, b)) {
		return [2]int{}, false
	}
	if ru.unquote {
		_, lo, hi := unquote(v)
		a, b = a+lo, a+hi
	}
	return [2]int{end + a, end + b}, true
}

// unquote returns the inside of a value quoted with ", ' or an escaped quote (\" for JSON
// inside JSON, \\\" one level deeper, and so on), and its bounds in v; a missing closing
// quote (a truncated value) is tolerated.
func unquote(v string) (inner string, lo, hi int) {
	lo, hi = 0, len(v)
	k := 0
	for k < len(v) && v[k] == '\\' {
		k++
	}
	switch {
	case k > 0 && k < len(v) && v[k] == '"':
		q := v[:k+1]
		lo = k + 1
		if len(v) >= 2*len(q) && strings.HasSuffix(v, q) {
			hi -= len(q)
		}
	case v != "" && (v[0] == '"' || v[0] == '\''):
		lo = 1
		if len(v) >= 2 && v[len(v)-1] == v[0] {
			hi--
		}
	}
	return v[lo:hi], lo, hi
}

func byteAt(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// builtinRules returns the built-in rules in the order they run: spans that may contain other
// secrets first, then provider keys with a recognisable shape (so an assignment keeps its key
// name and shows which kind of key it held), then assignments, then headers and URLs.
func builtinRules() []*rule {
	key := func(name, re string, triggers ...string) *rule {
		return &rule{name: name, mode: atStart, re: lazyre.New(`^(?:` + re + `)`), triggers: triggers, limit: 4096}
	}
	digitAndLetter := func(v, _ string, _ byte) bool { return hasDigitAndLetter(v) }
	withValid := func(r *rule, f func(string, string, byte) bool) *rule { r.valid = f; return r }
	rules := []*rule{
		// <private>…</private>: the user's own opt-out, possibly spanning lines.
		{mode: span, re: lazyre.New(`(?is)<private>.*?</private>`), triggers: []string{"<private>"}},
		// PEM private keys; an unterminated block (a truncated tool output) loses everything
		// that still looks like base64.
		{
			name: "private-key", mode: span, triggers: []string{"PRIVATE KEY-----"},
			re: lazyre.New(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\:,-]*)`),
		},
		key("anthropic-key", `sk-ant-[A-Za-z0-9_-]{20,}`, "sk-ant-"),
		withValid(key("openai-key", `sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`, "sk-"), digitAndLetter),
		key("aws-access-key-id", `(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}`, "AKIA", "ASIA", "ABIA", "ACCA"),
		key("github-token", `gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,}`, "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
		key("gitlab-token", `glpat-[A-Za-z0-9_-]{20,}`, "glpat-"),
		key("slack-token", `xox[abprs]-[A-Za-z0-9-]{10,}`, "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"),
		key("stripe-key", `[rs]k_(?:live|test)_[A-Za-z0-9]{10,}`, "sk_live_", "rk_live_", "sk_test_", "rk_test_"),
		key("google-api-key", `AIza[A-Za-z0-9_-]{35}`, "AIza"),
		withValid(key("huggingface-token", `hf_[A-Za-z0-9]{30,}`, "hf_"), digitAndLetter),
		withValid(key("mem0-key", `m0-[A-Za-z0-9_-]{20,}`, "m0-"), digitAndLetter),
		key("npm-token", `npm_[A-Za-z0-9]{36}`, "npm_"),
		key("heroku-key", `HRKU-[A-Za-z0-9_-]{20,}`, "HRKU-"),
		key("jwt", `eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`, "eyJ"),
		// Assignments run before the header rules: a header rule reading "passwd='x'" as a
		// credential would otherwise hide the key the assignment rule needs.
		assignmentRule(),
		flagRule(),
	}
	// Command-line and file forms run before the header rules, which would take a command
	// name after "Bearer" for a credential and hide the context these rules need.
	rules = append(rules, cliRules()...)
	rules = append(rules, []*rule{
		// Authorization headers: the credential after the scheme, whatever it looks like.
		{
			mode: afterKey, triggers: []string{"authorization"}, limit: 1024,
			key: func(k string) bool {
				return strings.EqualFold(k, "authorization") || strings.EqualFold(k, "proxy-authorization")
			},
			re:    lazyre.New(`^\\?["']?[ \t]*[:=][ \t]*\\?["']?(?i:bearer|basic|token|digest)[ \t]+([A-Za-z0-9._~+/=-]{4,})`),
			valid: notAKey,
		},
		// A bare "Bearer <token>" (curl -H, logs): only when the token looks like one.
		{
			mode: afterKey, triggers: []string{"bearer"}, limit: 1024,
			key:   func(k string) bool { return strings.EqualFold(k, "bearer") },
			re:    lazyre.New(`^[ \t]+([A-Za-z0-9._~+/=-]{8,})`),
			valid: func(v, sep string, next byte) bool { return notAKey(v, sep, next) && looksSecret(v) },
		},
		// Credentials in URLs: scheme://user:password@host.
		{
			mode: afterKey, triggers: []string{"://"}, limit: 1024, midKey: true,
			re:    lazyre.New(`^[^\s:@/"'<>\\]+:([^\s@/"'<>\\]+)@`),
			valid: func(v, _ string, _ byte) bool { return !placeholder(v) && !allDigits(v) },
		},
	}...)
	return rules
}

// secretKeyName reports whether k is a key name the assignment rule would act on.
func secretKeyName(k string) bool {
	for i := 0; i < len(k); i++ {
		if !isKeyChar(k[i]) {
			return false
		}
	}
	l := strings.ToLower(k)
	for _, t := range assignmentTriggers {
		if strings.HasSuffix(l, t) {
			return true
		}
	}
	return false
}

// notAKey rejects a "credential" followed by ":" or "=", or holding "=" other than base64
// padding: it is the key of the next assignment
// (Authorization: Bearer password=…), which the assignment rule handles.
func notAKey(v, _ string, next byte) bool {
	if next == ':' || next == '=' || strings.Contains(strings.TrimRight(v, "="), "=") {
		return false
	}
	switch strings.ToLower(v) {
	case "bearer", "basic", "token", "digest":
		return false // "Authorization: Bearer Bearer x": the real credential comes next
	}
	return true
}

// assignmentTriggers are the ends of key names whose values are secrets (DB_PASSWORD,
// GITHUB_TOKEN, clientSecret, OPENAI_API_KEY, aws_secret_access_key, SecretAccessKey). A key
// must end with one, so max_tokens, tokenizer or secret_name do not qualify.
var assignmentTriggers = []string{
	"password", "passwd", "passphrase", "secret", "token",
	"api_key", "api-key", "apikey", "access_key", "access-key", "accesskey",
	"secret_key", "secret-key", "secretkey", "private_key", "private-key", "privatekey",
	"auth_key", "auth-key", "authkey", "credential", "credentials",
}

// assignmentRule matches key=value, key: value, key := value and "key": "value" (also with the
// quotes escaped, as in JSON inside JSON).
func assignmentRule() *rule {
	return &rule{
		mode: afterKey, triggers: assignmentTriggers, limit: 1024, unquote: true,
		// Quotes may be escaped at any depth (\" in JSON inside JSON, \\\" one level deeper).
		re: lazyre.New(`^\\*["']?\s*(?::=|=|:)\s*` +
			`("[^"\n]*"|'[^'\n]*'|\\+"(?:[^"\\\n]|\\[^"\n])*?\\+"|\\*["']?[^\s"'` + "`" + `,;&|(){}\[\]<>\\]+)`),
		valid: validAssignment,
	}
}

// flagRule matches command-line options given as separate words: --password hunter2.
func flagRule() *rule {
	return &rule{
		mode: afterKey, triggers: []string{"password", "passwd", "token", "secret", "api-key", "apikey"}, limit: 1024,
		key: func(k string) bool { return strings.HasPrefix(k, "-") },
		re:  lazyre.New(`^[ \t]+([^\s"'` + "`" + `;&|<>()]+)`),
		valid: func(v, _ string, _ byte) bool {
			return !strings.HasPrefix(v, "-") && looksSecret(v)
		},
	}
}

// validAssignment decides whether the value of an assignment is a literal secret rather than
// code: quoted literals count unless they are placeholders or prose; unquoted values count in
// env/URL style (KEY=value, no spaces) unless they are variables, paths or calls, and elsewhere
// (`key: value`, `key = value`) only when they look like a random token.
func validAssignment(v, sep string, next byte) bool {
	inner, lo, _ := unquote(v)
	if (next == ':' || next == '=') && secretKeyName(inner) {
		return false // the "value" is the key of the next assignment: let that one match
	}
	quoted := lo > 0
	v = inner
	if v == "" || placeholder(v) || typeWord(v) {
		return false
	}
	if quoted {
		return !prose(v)
	}
	if next == '(' || next == '[' || strings.ContainsAny(v, "([") || v[0] == '/' || v[0] == '.' || v[0] == '~' || dottedIdent(v) {
		return false
	}
	if strings.Trim(sep, `\"'`) == "=" {
		return true // KEY=value: env files, command lines, query strings
	}
	return looksSecret(v)
}

// prose reports quoted values that read as a sentence (a description, not a secret): four
// words or more, none of them token-like. A passphrase of plain words is missed; that is the
// price of not redacting every "token": "…" description in schemas and docs.
func prose(v string) bool {
	f := strings.Fields(v)
	if len(f) < 4 {
		return false
	}
	for _, w := range f {
		if looksSecret(w) {
			return false
		}
	}
	return true
}

// elided reports documentation-style stand-ins such as "sk-ant-..." or "gsk_…": a short
// prefix and an ellipsis, too short to be a secret.
func elided(v string) bool {
	for _, e := range []string{"...", "…"} {
		if p, ok := strings.CutSuffix(v, e); ok && len(p) <= 10 {
			return true
		}
	}
	return false
}

// placeholder reports values that stand for a secret without being one.
func placeholder(v string) bool {
	// Only the value's start counts: a secret may well contain "${" or "..." somewhere.
	if strings.HasPrefix(v, Marker) || strings.HasPrefix(v, "$") || strings.HasPrefix(v, "{{") ||
		v == "%s" || v == "%v" || (strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">")) ||
		strings.HasPrefix(v, "process.env") || elided(v) {
		return true
	}
	same := true
	for i := 1; i < len(v); i++ {
		if v[i] != v[0] {
			same = false
			break
		}
	}
	if same {
		return true // "***", "xxxxxxxx"
	}
	l := strings.ToLower(v)
	return strings.HasPrefix(l, "your") || strings.Contains(l, "redacted") || strings.Contains(l, "placeholder") || l == "changeme"
}

var typeWords = map[string]bool{
	"string": true, "str": true, "number": true, "int": true, "integer": true, "bool": true, "boolean": true,
	"any": true, "null": true, "nil": true, "none": true, "true": true, "false": true, "undefined": true,
	"object": true, "optional": true, "required": true, "secret": true, "password": true, "token": true,
	"text": true, "bytes": true, "void": true, "unknown": true, "env": true,
}

func typeWord(v string) bool {
	return typeWords[strings.ToLower(strings.TrimRight(v, "?!;,"))]
}

// looksSecret reports whether an unquoted word looks like a random token rather than an
// identifier or a word: at least 8 characters with letters and digits, or 16 with mixed case.
func looksSecret(v string) bool {
	if len(v) < 8 || placeholder(v) || dottedIdent(v) {
		return false
	}
	var digit, upper, lower bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case '0' <= c && c <= '9':
			digit = true
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		}
	}
	return (digit && (upper || lower)) || (len(v) >= 16 && upper && lower)
}

func hasDigitAndLetter(v string) bool {
	var digit, letter bool
	for i := 0; i < len(v); i++ {
		c := v[i] | 0x20
		switch {
		case '0' <= v[i] && v[i] <= '9':
			digit = true
		case 'a' <= c && c <= 'z':
			letter = true
		}
	}
	return digit && letter
}

func allDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// dottedIdent reports member accesses such as document.querySelector or config.auth.token.
func dottedIdent(v string) bool {
	if !strings.Contains(v, ".") {
		return false
	}
	for _, seg := range strings.Split(v, ".") {
		if seg == "" {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i] | 0x20
			if !('a' <= c && c <= 'z') && seg[i] != '_' && seg[i] != '$' {
				return false
			}
		}
	}
	return true
}
