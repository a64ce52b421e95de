package compaction

import (
	"strings"
	"unicode/utf8"
)

// Extraction of ledger facts from a window of messages. Everything here is rules over the
// text: the user's sentences that instruct or state values, the commands the agent ran with
// their outcome, and the lines that identify failures.

// ledgerEvent is one thing that happened, in order: a user message or a tool call with its
// result.
type ledgerEvent struct {
	user                        bool
	constraints, values, errors []string
	command                     string // a shell command, normalized; "" for other tools
	record                      bool   // the command is worth listing (not mere exploration)
	tool, target                string // a non-shell tool call and its main argument
	modifies, ok                bool
	complete                    bool // the output was not cut by head or tail
}

// source names what failed, as LedgerError.Source records it.
func (ev ledgerEvent) source() string {
	if ev.command != "" {
		return ev.command
	}
	return strings.TrimSpace(ev.tool + " " + ev.target)
}

// resolves reports whether this successful call settles an error recorded from source.
func (ev ledgerEvent) resolves(source string) bool {
	if source == ev.source() {
		return true
	}
	if ev.command != "" || !ev.modifies || ev.target == "" {
		return false
	}
	// A successful write or edit of a file settles earlier failed edits of it.
	tool, target, ok := strings.Cut(source, " ")
	return ok && target == ev.target && modifyingTool(tool)
}

func modifyingTool(name string) bool {
	lower := strings.ToLower(name)
	return strings.Contains(lower, "edit") || strings.Contains(lower, "write") || lower == "apply_patch" ||
		lower == "str_replace" || lower == "create"
}

func ledgerEvents(w window, wd string) []ledgerEvent {
	var out []ledgerEvent
	for _, m := range w.msgs {
		switch m.role {
		case "user":
			if ev, ok := userEvent(m.raw); ok {
				out = append(out, ev)
			}
		case "assistant":
			for _, c := range m.calls {
				if ev, ok := callEvent(c, wd); ok {
					out = append(out, ev)
				}
			}
		}
	}
	return out
}

// --- tool calls ---

func callEvent(c *xcall, wd string) (ledgerEvent, bool) {
	if c.result == nil {
		return ledgerEvent{}, false // no result (aborted, or beyond the window): no outcome
	}
	out := c.result.text
	if !c.shell {
		ev := ledgerEvent{tool: c.name, target: joinLines(clip(c.key, 200)), modifies: c.modifies, ok: !c.result.isError, complete: true}
		if !ev.ok {
			ev.errors = errorLines(out, true)
		}
		return ev, true
	}
	cmd, durable, truncated, grepTail := normCommand(c.key, wd)
	if cmd == "" {
		return ledgerEvent{}, false
	}
	failed := c.result.isError && !searchFoundNothing(c) && !(grepTail && onlyExitStatus(out))
	var errs []string
	if failed {
		errs = errorLines(out, true)
	} else if durable {
		if errs = strictErrorLines(out); len(errs) > 0 {
			failed = true // piped through tail or grep, the exit status hides what the output shows
		}
	}
	// An exploring command is not listed, but its failure (a path that does not exist) is.
	return ledgerEvent{command: cmd, record: durable, ok: !failed, errors: errs, complete: !truncated}, true
}

var (
	exitOnlyRe = lazyRegexp(`^(\(no output\)\s*)?((Command exited with|Exit) code \d+|exit (code|status):? \d+)?$`)
	// explorers only look: their runs are not worth recording as commands.
	explorers = map[string]bool{"ls": true, "cat": true, "head": true, "tail": true, "grep": true, "egrep": true,
		"fgrep": true, "rg": true, "ag": true, "ack": true, "find": true, "fd": true, "wc": true, "echo": true,
		"printf": true, "pwd": true, "which": true, "whereis": true, "type": true, "sed": true, "awk": true,
		"tree": true, "file": true, "stat": true, "du": true, "df": true, "sort": true, "uniq": true, "cut": true,
		"tr": true, "less": true, "more": true, "sleep": true, "true": true, "false": true, "mkdir": true,
		"cp": true, "mv": true, "rm": true, "touch": true, "chmod": true, "ln": true, "cd": true, "date": true,
		"xxd": true, "od": true, "hexdump": true, "jq": true, "diff": true, "test": true, "[": true, "source": true,
		".": true, "export": true, "set": true, "unset": true}
	plumbingRe = lazyRegexp(`\s*(\d?>&\d|\d?>\s*/dev/null)`)
	quotedRe   = lazyRegexp(`"[^"]{40,}"|'[^']{40,}'`)
)

func onlyExitStatus(out string) bool { return exitOnlyRe().MatchString(strings.TrimSpace(out)) }

// normCommand reduces a shell command to its identity: the first line, a cd into the working
// directory dropped (into a subdirectory made relative), redirections of stderr and pipes into
// head, tail, grep and the like removed, long quoted arguments (commit messages) elided.
// durable is false for commands that only look around or move files; truncated reports a
// head or tail cutting the output; grepTail a trailing grep filtering it.
func normCommand(cmd, wd string) (key string, durable, truncated, grepTail bool) {
	cmd = strings.TrimSpace(cmd)
	if i := strings.IndexByte(cmd, '\n'); i >= 0 {
		cmd = strings.TrimSpace(cmd[:i])
	}
	if i := strings.Index(cmd, "<<"); i >= 0 {
		cmd = strings.TrimSpace(cmd[:i]) // a here-document: the script is not the command
	}
	if i := strings.Index(cmd, " -m "); i >= 0 && strings.Contains(cmd[:i], "git ") {
		cmd = strings.TrimSpace(cmd[:i]) // git commit -m "…": the message is not the command
	}
	cmd = quotedRe().ReplaceAllString(cmd, `"…"`)
	// Split into the pipeline stages and the && / ; chain.
	segs := splitShell(cmd, "|")
	for len(segs) > 1 {
		last := strings.Fields(segs[len(segs)-1])
		if len(last) == 0 || !explorers[last[0]] {
			break
		}
		switch last[0] {
		case "head", "tail":
			truncated = true
		case "grep", "egrep", "rg":
			grepTail = true
		}
		segs = segs[:len(segs)-1]
	}
	cmd = strings.Join(segs, "|")
	cmd = strings.TrimSpace(plumbingRe().ReplaceAllString(cmd, ""))
	chain := splitShell(cmd, "&&")
	if len(chain) > 1 {
		if f := strings.Fields(chain[0]); len(f) == 2 && f[0] == "cd" {
			dir := strings.Trim(f[1], `"'`)
			rest := strings.Join(chain[1:], " && ")
			switch {
			case wd != "" && (dir == wd || dir == wd+"/"):
				cmd = rest
			case wd != "" && strings.HasPrefix(dir, strings.TrimSuffix(wd, "/")+"/"):
				cmd = "cd " + strings.TrimPrefix(dir, strings.TrimSuffix(wd, "/")+"/") + " && " + rest
			}
		}
	}
	cmd = strings.Join(strings.Fields(cmd), " ")
	for _, seg := range splitShell(cmd, "&&") {
		for _, s := range splitShell(seg, ";") {
			f := strings.Fields(s)
			for len(f) > 0 && strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "-") {
				f = f[1:] // VAR=value prefixes
			}
			if len(f) > 0 && !explorers[f[0]] && !(f[0] == "git" && len(f) > 1 && gitLooks[f[1]]) {
				durable = true
			}
		}
	}
	return clip(cmd, 200), durable, truncated, grepTail
}

// gitLooks are git subcommands that only look; they are recorded only next to something else.
var gitLooks = map[string]bool{"status": true, "diff": true, "show": true, "log": true, "ls-files": true, "blame": true}

// splitShell splits s at sep outside quotes (good enough for recording commands).
func splitShell(s, sep string) []string {
	var out []string
	quote := byte(0)
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case strings.HasPrefix(s[i:], sep) && !(sep == "|" && (strings.HasPrefix(s[i:], "||") || (i > 0 && s[i-1] == '|'))):
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + len(sep)
			i += len(sep) - 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// --- error lines ---

var (
	escapedNewline = lazyRegexp(`\\n`)
	boxPrefix      = lazyRegexp(`^[\s┃│║|▶►•]+`)
	// strictError lines are failures even in output whose exit status said success.
	strictError = lazyRegexp(`(error TS\d+:|^\*\* \(\w|\b[1-9]\d* failures?\b|^npm ERR!|^FAIL\b|^--- FAIL|^✘ \[ERROR\]|^panic: |^Traceback \(most recent)`)
	// strongError lines identify a failure.
	strongError = lazyRegexp(`(?i)(error TS\d+:|^\*\* \(\w|^\d+\) test |\b[1-9]\d* failures?\b|^\[[FRWCD]\] |^assertion\b.*\bfailed|` +
		`(?-i:(Error|Exception)\b: \S)|` +
		`^(error|fatal|panic)(\[[\w-]+\])?:|\b(error|exception)(\[[\w-]+\])?: \S|^\w*(Error|Exception): |^✘ \[ERROR\]|^[×✖✘] |` +
		`no such file or directory|permission denied|command not found|cannot find module|could not resolve|` +
		`could not find|not found in file|does not exist|exceeds maximum|not formatted|can never match|` +
		`\slint/\w+/\w+|^FAIL\b|^--- FAIL|^panic: |^npm ERR! (?:code|errno|missing|404|enoent|eresolve))`)
	// noiseLine lines say a command failed without saying why.
	noiseLine  = lazyRegexp(`(?i)^(npm (error|ERR!) (code \d|path|workspace|location|command|Lifecycle|A complete log)|exit code \d+$|command exited with code \d+$|\(no output\)|debugger attached|waiting for the debugger|error: process completed with exit code)`)
	locationRe = lazyRegexp(`^[\w./~-]+\.\w+:\d+`)
)

// errorLines picks up to four lines that identify a failure in out (up to 30 when they are
// compiler diagnostics, one per file and message); when none matches and the call failed,
// the first line that says more than an exit status.
func errorLines(out string, failed bool) []string {
	lines := splitOutput(out)
	var picked []string
	seen := map[string]bool{}
	limit := 4
	for i, l := range lines {
		if !mayBeError(l) || !strongError().MatchString(l) || noiseLine().MatchString(l) ||
			(utf8.RuneCountInString(l) > 400 && !strings.Contains(l, "error TS")) {
			continue // minified code and JSON lines are not how an error identifies itself
		}
		if strings.Contains(l, "error TS") {
			limit = 50
		}
		l = withContinuation(l, lines, i)
		if k := errorKey(l); !seen[k] {
			seen[k] = true
			picked = append(picked, l)
		}
		if len(picked) >= limit {
			break
		}
	}
	if len(picked) == 0 && failed {
		for i, l := range lines {
			if !noiseLine().MatchString(l) && !strings.HasPrefix(l, ">") {
				return []string{withContinuation(l, lines, i)}
			}
		}
	}
	// A short header that says what failed ("Pre-commit validation failed:") gives the first
	// line its context.
	if len(picked) > 0 && len(lines) > 0 && headerRe().MatchString(lines[0]) && !strings.HasPrefix(picked[0], lines[0]) &&
		utf8.RuneCountInString(lines[0]) <= 120 {
		picked[0] = clip(lines[0]+" "+picked[0], 240)
	}
	return picked
}

var headerRe = lazyRegexp(`(?i)(fail|error).*[:\]]$`)

// errorWords are the fragments (lower case) one of which every strongError line holds; looking
// for them first keeps the regexp off most lines of long outputs.
var errorWords = []string{"error", "fail", "fatal", "panic", "exception", "no such file", "denied", "not found",
	"cannot", "could not", "does not exist", "exceeds maximum", "not formatted", "never match", "lint/", ") test ",
	"[f]", "[r]", "[w]", "[c]", "[d]", "×", "✖", "✘", "assertion"}

func mayBeError(line string) bool {
	lower := strings.ToLower(line)
	for _, w := range errorWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// strictErrorLines are errorLines of output that claimed success, when it shows failures
// anyway (a compiler's errors piped through tail).
func strictErrorLines(out string) []string {
	if !strings.Contains(out, "error TS") && !strings.Contains(out, "** (") && !strings.Contains(out, "failure") &&
		!strings.Contains(out, "npm ERR!") && !strings.Contains(out, "FAIL") && !strings.Contains(out, "[ERROR]") &&
		!strings.Contains(out, "panic: ") && !strings.Contains(out, "Traceback") {
		return nil // the literal checks spare the regexp on the many outputs that cannot match
	}
	for _, l := range splitOutput(out) {
		if strictError().MatchString(l) {
			return errorLines(out, true)
		}
	}
	return nil
}

func splitOutput(out string) []string {
	out = ansiRe().ReplaceAllString(out, "")
	if strings.Contains(out, `\n`) {
		out = escapedNewline().ReplaceAllString(out, "\n")
	}
	out = strings.NewReplacer("<tool_use_error>", "", "</tool_use_error>", "").Replace(out)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(boxPrefix().ReplaceAllString(l, "")); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// withContinuation adds the next line to a short error line when it gives the location or
// finishes the sentence, and clips the result.
func withContinuation(l string, lines []string, i int) string {
	if utf8.RuneCountInString(l) < 110 && i+1 < len(lines) && !isDiagnostic(l) && !noiseLine().MatchString(lines[i+1]) {
		next := lines[i+1]
		if locationRe().MatchString(next) || (!strongError().MatchString(next) && startsLower(next) && !strings.HasPrefix(next, "at ")) {
			l += " " + next
		}
	}
	return clip(l, 240)
}

func startsLower(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return ('a' <= r && r <= 'z') || r == '`' || r == '\''
}

// errorKey is an error line's identity: lower case, without line and column numbers ("(3,4)",
// ":12" or ":12:5"), and for compiler diagnostics without the directory part of paths
// (packages report the same file by different relative paths). It is a hand-written scan:
// the ledger computes it for every error against every new one.
func errorKey(line string) string {
	diag := isDiagnostic(line)
	var b strings.Builder
	b.Grow(len(line))
	lower := strings.ToLower(line)
	word := 0 // start in b of the current path-like word, for dropping directories
	space := false
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		switch {
		case c == '(' && isPosition(lower[i+1:]):
			i += strings.IndexByte(lower[i:], ')')
			continue
		case c == ':' && i+1 < len(lower) && isDigit(lower[i+1]):
			j := i + 1
			for j < len(lower) && (isDigit(lower[j]) || lower[j] == ':') {
				j++
			}
			if j == len(lower) || !isWordChar(lower[j]) {
				i = j - 1
				continue
			}
		case diag && c == '/':
			s := b.String()[:word] // drop the directory written so far in this word
			b.Reset()
			b.WriteString(s)
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			word = b.Len()
			continue
		}
		if !isWordChar(c) && c != '.' && c != '-' && c != '_' {
			word = b.Len() + 1
		}
		space = false
		b.WriteByte(c)
	}
	return strings.TrimSpace(b.String())
}

// isPosition reports whether s starts with "digits,digits)".
func isPosition(s string) bool {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 || i >= len(s) || s[i] != ',' {
		return false
	}
	j := i + 1
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	return j > i+1 && j < len(s) && s[j] == ')'
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isWordChar(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'z') || c >= 0x80 }
