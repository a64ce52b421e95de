package redact

import (
	"regexp"
	"strings"
)

// Command-line and configuration-file forms of secrets. Their secret is often an ordinary
// word (a docker password, a netrc password), so what makes it a secret is its place: the
// command it is given to, the keyword before it, the line it is on. These rules read that
// context in Go (mode custom) instead of trusting the word's shape.

// cliRules returns the rules of this file, in the order they run.
func cliRules() []*rule {
	return []*rule{
		// First: the token is on the next line, where other rules must not take its context.
		{mode: custom, triggers: []string{"heroku auth:token"}, match: one(matchHerokuToken)},
		{mode: custom, triggers: []string{"configure set", "config set"}, match: one(matchConfigSet)},
		{mode: custom, triggers: []string{"--with-token", "--password-stdin"}, match: matchStdinSecret},
		{mode: custom, triggers: []string{"docker login", "podman login", "nerdctl login", "buildah login",
			"skopeo login", "oras login", "helm registry login"}, match: one(matchRegistryLogin)},
		{mode: custom, triggers: []string{"-u", "--user", "--proxy-user"}, match: one(matchCurlUser)},
		{mode: custom, triggers: []string{"key=", "sig=", "signature=", "auth="}, match: one(matchQuerySecret)},
		{mode: custom, triggers: []string{"key=", "key_base=", "pass=", "pwd=", "dsn=", "salt=", "seed=", "mnemonic="}, match: one(matchEnvLine)},
		{mode: custom, triggers: []string{"password"}, match: one(matchNetrc)},
	}
}

// one adapts a matcher of one span to the custom rule's signature.
func one(f func(s string, end int) (int, int, bool)) func(string, int) [][2]int {
	return func(s string, end int) [][2]int {
		if a, b, ok := f(s, end); ok {
			return [][2]int{{a, b}}
		}
		return nil
	}
}

// lineAround returns the bounds of the line holding offset i. An escaped newline (the two
// characters \n, as in JSON inside JSON) ends a line too.
func lineAround(s string, i int) (lo, hi int) {
	lo = strings.LastIndexByte(s[:i], '\n') + 1
	if j := strings.LastIndex(s[:i], `\n`); j >= 0 && j+2 > lo {
		lo = j + 2
	}
	hi = len(s)
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		hi = i + j
	}
	if j := strings.Index(s[i:], `\n`); j >= 0 && i+j < hi {
		hi = i + j
	}
	return lo, hi
}

// commandStart returns where the shell command holding offset i starts on its line: after
// the last ;, |, &, $( or backquote before i.
func commandStart(s string, lo, i int) int {
	start := lo
	for _, sep := range []string{";", "|", "&", "$(", "`"} {
		if j := strings.LastIndex(s[lo:i], sep); j >= 0 && lo+j+len(sep) > start {
			start = lo + j + len(sep)
		}
	}
	return start
}

// token is one shell word: its bounds, and the bounds of its inside when it is quoted.
type token struct {
	start, end int // the whole word, quotes included
	in, out    int // the word without its quotes
}

func (t token) text(s string) string { return s[t.in:t.out] }

// words splits s[from:to] into shell-like words, honouring '…' and "…" quotes, and stops at
// the end of the command: a newline, ";", "&", "|" outside quotes.
func words(s string, from, to int) []token {
	var out []token
	i := from
	for i < to {
		for i < to && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= to || s[i] == '\n' || s[i] == ';' || s[i] == '&' || s[i] == '|' {
			return out
		}
		t := token{start: i, in: i}
		if q := s[i]; q == '"' || q == '\'' {
			j := strings.IndexByte(s[i+1:to], q)
			if j < 0 {
				t.in, t.out, t.end = i+1, to, to
			} else {
				t.in, t.out, t.end = i+1, i+1+j, i+2+j
			}
			i = t.end
		} else {
			for i < to && !strings.ContainsRune(" \t\n;&|", rune(s[i])) {
				i++
			}
			t.out, t.end = i, i
		}
		out = append(out, t)
	}
	return out
}

// cliValue reports whether a word given as a secret on a command line is one, rather than a
// variable, a substitution or a stand-in.
func cliValue(v string) bool {
	return v != "" && !placeholder(v) && !strings.HasPrefix(v, "$") && !strings.HasPrefix(v, "`") &&
		!strings.HasPrefix(v, "<(") && !typeWord(v)
}

// triggerStart returns where the trigger ending at end starts (the longest that fits).
func triggerStart(s string, end int, triggers ...string) int {
	best := -1
	for _, t := range triggers {
		if st := end - len(t); st >= 0 && strings.EqualFold(s[st:end], t) && (best < 0 || st < best) {
			best = st
		}
	}
	return best
}

// configKey reports whether a configuration key names a secret: aws_secret_access_key,
// default.aws_session_token, //registry.npmjs.org/:_authToken, _auth, npmAuthToken.
func configKey(k string) bool {
	if i := strings.LastIndexAny(k, ".:/"); i >= 0 {
		k = k[i+1:]
	}
	l := strings.ToLower(k)
	return l == "_auth" || l == "auth" || l == "_password" || secretKeyName(k)
}

// matchConfigSet: `aws configure set aws_secret_access_key KEY`, `npm config set
// //registry.npmjs.org/:_authToken TOKEN`, `yarn config set npmAuthToken TOKEN`.
func matchConfigSet(s string, end int) (int, int, bool) {
	_, hi := lineAround(s, end)
	ws := words(s, end, hi)
	for i, w := range ws {
		k := w.text(s)
		if strings.HasPrefix(k, "-") {
			continue
		}
		if key, val, ok := strings.Cut(k, "="); ok && configKey(key) && cliValue(val) {
			return w.in + len(key) + 1, w.out, true
		}
		if configKey(k) && i+1 < len(ws) {
			v := ws[i+1]
			if t := v.text(s); !strings.HasPrefix(t, "-") && cliValue(t) {
				return v.in, v.out, true
			}
		}
	}
	return 0, 0, false
}

var herestring = regexp.MustCompile(`^[^\n]*?<<<[ \t]*`)

// matchStdinSecret: `echo TOKEN | gh auth login --with-token`, `gh auth login --with-token
// <<< TOKEN`, `printf '%s' PASS | docker login -u me --password-stdin`.
func matchStdinSecret(s string, end int) [][2]int {
	var out [][2]int
	if a, b, ok := echoedSecret(s, end); ok {
		out = append(out, [2]int{a, b})
	}
	_, hi := lineAround(s, end)
	if m := herestring.FindStringIndex(s[end:hi]); m != nil {
		if ws := words(s, end+m[1], hi); len(ws) > 0 && cliValue(ws[0].text(s)) {
			out = append(out, [2]int{ws[0].in, ws[0].out})
		}
	}
	return out
}

// echoedSecret finds the value piped in by "echo VALUE |" or "printf '%s' VALUE |" before the
// trigger ending at end.
func echoedSecret(s string, end int) (int, int, bool) {
	start := triggerStart(s, end, "--with-token", "--password-stdin")
	lo, _ := lineAround(s, end)
	pipe := strings.LastIndexByte(s[lo:start], '|')
	if pipe < 0 {
		return 0, 0, false
	}
	pipe += lo
	// Read backwards from the pipe (quotes before the command may be unbalanced): the last
	// word is the value, and echo or printf must come before it.
	v1 := pipe
	for v1 > lo && (s[v1-1] == ' ' || s[v1-1] == '\t') {
		v1--
	}
	v0 := v1
	var a, b int
	if v1 > lo && (s[v1-1] == '"' || s[v1-1] == '\'') {
		q := strings.LastIndexByte(s[lo:v1-1], s[v1-1])
		if q < 0 {
			return 0, 0, false
		}
		v0, a, b = lo+q, lo+q+1, v1-1
	} else {
		for v0 > lo && !isSpace(s[v0-1]) {
			v0--
		}
		a, b = v0, v1
	}
	t := s[a:b]
	if !echoBefore.MatchString(s[lo:v0]) || !cliValue(t) || strings.HasPrefix(t, "-") || strings.Contains(t, "%") {
		return 0, 0, false
	}
	return a, b, true
}

var echoBefore = regexp.MustCompile(`(?:^|[\s(;{&|])(?:echo|printf)\s`)

// matchRegistryLogin: `docker login -u me -p PASS registry`, `--password PASS`,
// `--password=PASS`, `-pPASS`.
func matchRegistryLogin(s string, end int) (int, int, bool) {
	_, hi := lineAround(s, end)
	ws := words(s, end, hi)
	for i, w := range ws {
		t := w.text(s)
		switch {
		case t == "-p" || t == "--password":
			if i+1 < len(ws) && cliValue(ws[i+1].text(s)) {
				return ws[i+1].in, ws[i+1].out, true
			}
		case strings.HasPrefix(t, "--password="):
			if cliValue(t[len("--password="):]) {
				return w.in + len("--password="), w.out, true
			}
		case strings.HasPrefix(t, "-p") && len(t) > 2 && t[2] != '-':
			if cliValue(t[2:]) {
				return w.in + 2, w.out, true
			}
		}
	}
	return 0, 0, false
}

var curlWord = regexp.MustCompile(`(?:^|[\s;&|({\[])curl[ \t]`)

// matchCurlUser: `curl -u user:PASS`, `curl --user user:PASS`, `--user=user:PASS`,
// `-uuser:PASS`, `--proxy-user user:PASS`. Only on a curl command line: `docker run -u
// 1000:1000` is a uid.
func matchCurlUser(s string, end int) (int, int, bool) {
	start := triggerStart(s, end, "-u", "--user", "--proxy-user")
	if start < 0 || (start > 0 && !isSpace(s[start-1])) || end >= len(s) {
		return 0, 0, false
	}
	lo, hi := lineAround(s, end)
	if !curlWord.MatchString(" " + s[commandStart(s, lo, start):start]) {
		return 0, 0, false
	}
	short := end-start == 2
	from := end
	switch {
	case s[end] == ' ' || s[end] == '\t':
	case s[end] == '=' && !short:
		from++
	case !short:
		return 0, 0, false // --username, --user-agent
	}
	ws := words(s, from, hi)
	if len(ws) == 0 {
		return 0, 0, false
	}
	w := ws[0]
	user, pass, ok := strings.Cut(w.text(s), ":")
	if !ok || user == "" || !cliValue(pass) {
		return 0, 0, false
	}
	return w.in + len(user) + 1, w.out, true
}

// matchQuerySecret: keys in a URL's query string: ?key=…, &sig=…, &X-Amz-Signature=…,
// ?auth=…, &subscription-key=…. (api_key=, token=, secret= and password= are assignments.)
func matchQuerySecret(s string, end int) (int, int, bool) {
	k := end - 1 // the '='
	ks := k
	for ks > 0 && isKeyChar(s[ks-1]) {
		ks--
	}
	if ks == 0 || (s[ks-1] != '?' && s[ks-1] != '&') {
		return 0, 0, false
	}
	key := strings.ToLower(s[ks:k])
	exact := key == "key" || key == "sig" || key == "auth" || strings.HasSuffix(key, "signature")
	if !exact && !strings.HasSuffix(key, "key") {
		return 0, 0, false
	}
	e := end
	for e < len(s) && !strings.ContainsRune("&#\"'<> \t\r\n\\`)]}", rune(s[e])) {
		e++
	}
	v := s[end:e]
	if len(v) < 8 || placeholder(v) || strings.HasPrefix(v, "$") || (!exact && !looksSecret(v)) {
		return 0, 0, false
	}
	return end, e, true
}

// envLast are the last words of .env keys whose value is a secret that the assignment
// rule's suffixes (…_TOKEN, …_SECRET, …_PASSWORD, …_API_KEY) do not cover.
var envLast = map[string]bool{"KEY": true, "PASS": true, "PWD": true, "DSN": true, "SALT": true, "SEED": true, "MNEMONIC": true}

// matchEnvLine: .env and shell-profile lines `APP_KEY=…`, `export DB_PASS=…`,
// `SENTRY_DSN=…`, `SECRET_KEY_BASE=…`: an upper-case key starting a word. A key ending in
// just KEY (SORT_KEY=name, PARTITION_KEY=userId) needs a value that looks random.
func matchEnvLine(s string, end int) (int, int, bool) {
	k := end - 1
	ks := k
	for ks > 0 && (isWord(s[ks-1])) {
		ks--
	}
	key := s[ks:k]
	if key == "" || strings.ToUpper(key) != key || key[0] < 'A' || key[0] > 'Z' {
		return 0, 0, false
	}
	if ks > 0 && strings.IndexByte(".${[", s[ks-1]) >= 0 {
		return 0, 0, false // ${APP_KEY=…}, config.APP_KEY=…: code, not an env line
	}
	_, hi := lineAround(s, end)
	parts := strings.Split(key, "_")
	last := parts[len(parts)-1]
	if !envLast[last] && !strings.HasSuffix(key, "KEY_BASE") {
		return 0, 0, false
	}
	for _, p := range parts {
		if p == "PUBLIC" || p == "PUBLISHABLE" || p == "PUB" {
			return 0, 0, false
		}
	}
	ws := words(s, end, hi)
	if len(ws) == 0 || ws[0].start != end {
		return 0, 0, false
	}
	w := ws[0]
	if w.in > w.start && (w.end == w.out || s[w.end-1] != s[w.start]) {
		return 0, 0, false // an unclosed quote: not an env line
	}
	v := w.text(s)
	if strings.Contains(v, "#") && w.in == w.start {
		v = v[:strings.IndexByte(v, '#')]
	}
	if last == "KEY" && (len(v) < 16 || !looksSecret(v)) && len(v) < 24 {
		return 0, 0, false
	}
	if (allDigits(v) && len(v) < 6) || !validAssignment(v, "=", byteAt(s, w.end)) {
		return 0, 0, false
	}
	return w.in, w.in + len(v), true
}

// netrcBefore matches what precedes "password" in a netrc entry: "machine HOST" (or
// "default") starting a line, then keyword-value pairs.
var netrcBefore = regexp.MustCompile(`(?m)^[ \t]*(?:machine\s+(\S+)|default)(?:\s+(?:login|account|port)\s+\S+)*\s+\z`)

// netrcInline matches an entry quoted inside a line: then the host must be a host name and
// the entry must have a login.
var netrcInline = regexp.MustCompile(`(?:^|[\s(\[{"'])machine\s+[\w-]+\.[\w.-]+\s+login\s+\S+(?:\s+(?:account|port)\s+\S+)*\s+\z`)

var netrcKeywords = map[string]bool{"machine": true, "default": true, "login": true, "account": true, "port": true, "password": true, "macdef": true}

// matchNetrc: `machine HOST login USER password PASS` (one line or several, as in ~/.netrc
// and ~/.authinfo), `default login USER password PASS`. The entry must start its line and
// hold nothing but netrc keywords and their values, so prose ("machine learning login page
// password reset") is left alone.
func matchNetrc(s string, end int) (int, int, bool) {
	start := end - len("password")
	if (start > 0 && !isSpace(s[start-1])) || end >= len(s) || !isSpace(s[end]) {
		return 0, 0, false
	}
	before := s[max(0, start-512):start]
	// A host name (with a dot) or "default" is netrc enough; otherwise ("machine learning
	// login page password reset flow") the value must end the entry.
	strict := true
	if m := netrcBefore.FindStringSubmatch(before); m != nil {
		strict = m[1] != "" && !strings.Contains(m[1], ".")
	} else if netrcInline.MatchString(before) {
		strict = false
	} else {
		return 0, 0, false
	}
	v := end
	for v < len(s) && isSpace(s[v]) {
		v++
	}
	e := v
	for e < len(s) && !isSpace(s[e]) {
		e++
	}
	if e == v || !cliValue(s[v:e]) {
		return 0, 0, false
	}
	_, hi := lineAround(s, e)
	if rest := strings.Fields(s[e:hi]); strict && len(rest) > 0 && !netrcKeywords[rest[0]] {
		return 0, 0, false
	}
	return v, e, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

var herokuSameLine = regexp.MustCompile(`^[^\w\n]{0,8}([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|HRKU-[\w-]{20,})\b`)

// matchHerokuToken: the token `heroku auth:token` prints, on the first non-empty line after
// the command.
func matchHerokuToken(s string, end int) (int, int, bool) {
	_, hi := lineAround(s, end)
	// A transcript flattened to one line ("heroku auth:token → 0123…"): the next word, if
	// it has the shape of a Heroku key.
	if m := herokuSameLine.FindStringSubmatchIndex(s[end:hi]); m != nil {
		return end + m[2], end + m[3], true
	}
	for hi < len(s) {
		lo := hi + 1
		_, next := lineAround(s, min(lo, len(s)))
		line := strings.TrimSpace(s[lo:next])
		if line == "" {
			hi = next
			continue
		}
		if len(line) < 16 || strings.ContainsAny(line, " \t") {
			return 0, 0, false
		}
		for i := 0; i < len(line); i++ {
			if !isWord(line[i]) && line[i] != '-' {
				return 0, 0, false
			}
		}
		a := lo + strings.Index(s[lo:next], line)
		return a, a + len(line), true
	}
	return 0, 0, false
}
