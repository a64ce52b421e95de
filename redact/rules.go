package redact

import (
	"regexp"
	"strings"
)

// builtinRules returns the built-in rules in the order they run: spans that may contain other
// secrets first, then provider keys with a recognisable shape (so an assignment keeps its key
// name and shows which kind of key it held), then headers and assignments.
func builtinRules() []*rule {
	keyed := func(name, re string, triggers ...string) *rule {
		return &rule{name: name, re: regexp.MustCompile(re), triggers: triggers, after: 1024}
	}
	return []*rule{
		// <private>…</private>: the user's own opt-out, possibly spanning lines.
		{re: regexp.MustCompile(`(?is)<private>.*?</private>`), triggers: []string{"<private>"}, after: -1},
		// PEM private keys; an unterminated block (a truncated tool output) loses everything
		// that still looks like base64.
		{
			name:     "private-key",
			re:       regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\:,-]*)`),
			triggers: []string{"PRIVATE KEY-----"}, before: 64, after: -1,
		},
		keyed("anthropic-key", `\bsk-ant-[A-Za-z0-9_-]{20,}`, "sk-ant-"),
		withValid(keyed("openai-key", `\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`, "sk-"), hasDigitAndLetter),
		keyed("aws-access-key-id", `\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`, "akia", "asia", "abia", "acca"),
		keyed("github-token", `\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,})\b`, "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
		keyed("gitlab-token", `\bglpat-[A-Za-z0-9_-]{20,}`, "glpat-"),
		keyed("slack-token", `\bxox[abprs]-[A-Za-z0-9-]{10,}`, "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"),
		keyed("stripe-key", `\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}`, "sk_live_", "rk_live_", "sk_test_", "rk_test_"),
		keyed("google-api-key", `\bAIza[A-Za-z0-9_-]{35}`, "aiza"),
		withValid(keyed("huggingface-token", `\bhf_[A-Za-z0-9]{30,}`, "hf_"), hasDigitAndLetter),
		withValid(keyed("mem0-key", `\bm0-[A-Za-z0-9_-]{20,}`, "m0-"), hasDigitAndLetter),
		keyed("npm-token", `\bnpm_[A-Za-z0-9]{36}\b`, "npm_"),
		keyed("jwt", `\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`, "eyj"),
		// Authorization headers: the credential after the scheme, whatever it looks like.
		{
			re:       regexp.MustCompile(`(?i)\b(?:proxy-)?authorization\\?["']?\s*[:=]\s*\\?["']?(?:bearer|basic|token|digest)\s+([A-Za-z0-9._~+/=-]{4,})`),
			triggers: []string{"authorization"}, value: 1, after: 1024,
		},
		// A bare "Bearer <token>" (curl -H, logs): only when the token looks like one.
		{
			re:       regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})`),
			triggers: []string{"bearer"}, value: 1, after: 1024,
			valid: func(v string, _ []int, _ string) bool { return looksSecret(v) },
		},
		// Credentials in URLs: scheme://user:password@host.
		{
			re:       regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:@/"'<>\\]+:([^\s@/"'<>\\]+)@`),
			triggers: []string{"://"}, value: 1, after: 1024,
			valid: func(v string, _ []int, _ string) bool { return !placeholder(v) && !allDigits(v) },
		},
		assignmentRule(),
		flagRule(),
	}
}

func withValid(r *rule, f func(string) bool) *rule {
	r.valid = func(v string, _ []int, _ string) bool { return f(v) }
	return r
}

// keyWords are the ends of key names whose values are secrets (DB_PASSWORD, GITHUB_TOKEN,
// clientSecret, OPENAI_API_KEY, aws_secret_access_key, SecretAccessKey). A key must end with
// one, so max_tokens, tokenizer or secret_name do not qualify.
const keyWords = `password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|auth[_-]?key|credentials?`

// assignmentRule matches key=value, key: value, key := value and "key": "value" (also with the
// quotes escaped, as in JSON inside JSON). Groups: 1 key, 2 separator, 3 value.
func assignmentRule() *rule {
	re := regexp.MustCompile(`(?i)\b([a-z0-9_.-]*?(?:` + keyWords + `))(\\?["']?\s*(?::=|=|:)\s*)` +
		`("[^"\n]*"|'[^'\n]*'|\\"(?:[^"\\\n]|\\[^"\n])*\\"|[^\s"'` + "`" + `,;&|(){}\[\]<>\\]+)`)
	return &rule{
		re:       re,
		triggers: []string{"password", "passwd", "passphrase", "secret", "token", "api_key", "api-key", "apikey", "access_key", "access-key", "accesskey", "private_key", "privatekey", "auth_key", "authkey", "credential"},
		value:    3,
		valid:    validAssignment,
		unquote:  true,
		before:   256,
		after:    1024,
	}
}

// flagRule matches command-line options given as separate words: --password hunter2.
func flagRule() *rule {
	re := regexp.MustCompile(`(?i)(?:^|\s)(--?[a-z0-9-]*(?:password|passwd|token|secret|api-key|apikey))\s+([^\s"'` + "`" + `;&|<>()]+)`)
	return &rule{
		re:       re,
		triggers: []string{"password", "passwd", "token", "secret", "api-key", "apikey"},
		value:    2,
		valid:    func(v string, _ []int, _ string) bool { return !strings.HasPrefix(v, "-") && looksSecret(v) },
		after:    1024,
	}
}

// validAssignment decides whether the value of an assignment is a literal secret rather than
// code: quoted literals count unless they are placeholders or prose; unquoted values count in
// env/URL style (KEY=value, no spaces) unless they are variables or calls, and elsewhere
// (`key: value`, `key = value`) only when they look like a random token.
func validAssignment(v string, m []int, s string) bool {
	sep := s[m[4]:m[5]]
	quoted := false
	switch {
	case strings.HasPrefix(v, `\"`) && len(v) >= 4:
		v, quoted = v[2:len(v)-2], true
	case v[0] == '"' || v[0] == '\'':
		v, quoted = v[1:len(v)-1], true
	}
	if v == "" || placeholder(v) || typeWord(v) {
		return false
	}
	if quoted {
		return strings.Count(strings.TrimSpace(v), " ") < 3
	}
	if strings.ContainsAny(v, "([") || v[0] == '/' || v[0] == '.' || v[0] == '~' || dottedIdent(v) {
		return false
	}
	if end := m[7]; end < len(s) && (s[end] == '(' || s[end] == '[') {
		return false // a call or an index: code, not a literal
	}
	if strings.TrimSpace(strings.TrimLeft(sep, `\"'`)) == "=" && !strings.ContainsAny(sep, " \t") {
		return true
	}
	return looksSecret(v)
}

// placeholder reports values that stand for a secret without being one.
func placeholder(v string) bool {
	if strings.HasPrefix(v, Marker) || strings.HasPrefix(v, "$") || strings.Contains(v, "${") ||
		strings.Contains(v, "{{") || strings.Contains(v, "%s") || strings.Contains(v, "...") || strings.Contains(v, "…") ||
		(strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">")) || strings.HasPrefix(v, "process.env") {
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
	if len(v) < 8 || placeholder(v) {
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
