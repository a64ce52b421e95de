package compaction

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Limits of the extractive summary. ExtractiveMaxChars keeps it near 2,000 tokens however many
// compactions it has been merged through.
const (
	ExtractiveMaxChars = 8000
	bulletChars        = 220
	requestChars       = 400
)

// Section names of the summary layout, in order.
const (
	secGoal        = "Goal"
	secConstraints = "Constraints & Preferences"
	secDone        = "Done"
	secInProgress  = "In Progress"
	secBlocked     = "Blocked"
	secDecisions   = "Key Decisions"
	secNext        = "Next Steps"
	secCritical    = "Critical Context"
	secOrigRequest = "Original Request"
	secEarly       = "Early Progress"
	secSuffix      = "Context for Suffix"
)

// Name implements Summarizer.
func (Extractive) Name() string { return "extractive" }

// Summarize implements Summarizer. The summary uses the layout of the prompts' templates: the
// split-turn layout for a request with only a turn prefix, the full checkpoint otherwise,
// merged with PreviousSummary when there is one (its durable bullets are kept, in-progress
// items move to Done, resolved blockers leave Blocked, Next Steps are refreshed). Every bullet
// is text taken from the messages (clipped), or a short label followed by such text in
// backticks. The output is deterministic and at most about ExtractiveMaxChars characters.
func (Extractive) Summarize(ctx context.Context, req Request) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("extractive summary: %w", err)
	}
	if turnPrefixOnly(req) {
		return extractTurnPrefix(parseWindow(req.TurnPrefix)), nil
	}
	entries := req.History
	if len(req.TurnPrefix) > 0 {
		entries = append(append([]Entry(nil), req.History...), req.TurnPrefix...)
	}
	w := parseWindow(entries)
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("extractive summary: %w", err)
	}
	s := extractSections(w)
	if prev := strings.TrimSpace(StripFileTags(req.PreviousSummary)); prev != "" {
		s = mergePrevious(parseSummary(prev), s, w)
	}
	return renderSummary(s, ExtractiveMaxChars), nil
}

// --- the window: messages reduced to what the extraction looks at ---

type xcall struct {
	name, key string // key: the command, path or other main argument
	modifies  bool
	shell     bool
	result    *xresult
	msg       int
}

type xresult struct {
	text    string
	isError bool
	msg     int
	errLine *string // errorLine(text), computed once
}

// errorLine is the result's most telling failure line.
func (r *xresult) errorLine() string {
	if r.errLine == nil {
		l := errorLine(r.text)
		r.errLine = &l
	}
	return *r.errLine
}

// headTail keeps the start and end of a long tool output: failures are reported there, and
// scanning megabytes of output for them would dominate the extraction's cost.
func headTail(s string) string {
	const head, tail = 32 << 10, 8 << 10
	if len(s) <= head+tail {
		return s
	}
	h, t := s[:head], s[len(s)-tail:]
	for len(h) > 0 && !utf8.ValidString(h[len(h)-3:]) {
		h = h[:len(h)-1]
	}
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return h + "\n…\n" + t
}

type xmsg struct {
	role     string // user, assistant, system, tool_result, branch_summary
	text     string // visible text (user and assistant text blocks, branch summary)
	thinking string
	calls    []*xcall
}

type window struct {
	msgs  []xmsg
	calls []*xcall // in order
}

func parseWindow(entries []Entry) window {
	var w window
	byID := map[string]*xcall{}
	for _, e := range entries {
		switch e.Kind {
		case KindBranchSummary:
			w.msgs = append(w.msgs, xmsg{role: "branch_summary", text: e.Summary})
			continue
		case KindMessage:
		default:
			continue
		}
		m := xmsg{role: gjson.Get(view(e.Message), "role").Str}
		idx := len(w.msgs)
		content := gjson.Get(view(e.Message), "content")
		var texts, thinking []string
		if content.Type == gjson.String {
			texts = append(texts, content.Str)
		}
		content.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "text":
				texts = append(texts, b.Get("text").Str)
			case "thinking":
				thinking = append(thinking, b.Get("thinking").Str)
			case "tool_call":
				c := newCall(b.Get("name").Str, b.Get("arguments"))
				c.msg = idx
				m.calls = append(m.calls, c)
				w.calls = append(w.calls, c)
				if id := b.Get("id").Str; id != "" {
					byID[id] = c
				}
			case "tool_result":
				r := &xresult{text: headTail(resultText(b.Get("content"))), isError: b.Get("is_error").Bool(), msg: idx}
				if c := byID[b.Get("tool_call_id").Str]; c != nil && c.result == nil {
					c.result = r
					if c.shell && !r.isError && shellFailed(r.text) {
						r.isError = true
					}
				}
			}
			return true
		})
		if m.role != "tool_result" {
			m.text = cleanText(strings.Join(texts, "\n"))
			m.thinking = strings.Join(thinking, "\n")
		}
		w.msgs = append(w.msgs, m)
	}
	return w
}

func newCall(name string, args gjson.Result) *xcall {
	c := &xcall{name: name}
	lower := strings.ToLower(name)
	c.shell = strings.Contains(lower, "bash") || strings.Contains(lower, "shell") ||
		lower == "exec" || strings.Contains(lower, "command") || lower == "run"
	c.modifies = strings.Contains(lower, "edit") || strings.Contains(lower, "write") ||
		lower == "apply_patch" || lower == "str_replace" || lower == "create"
	for _, k := range []string{"command", "cmd", "path", "file_path", "filePath", "file", "notebook_path", "pattern", "url", "query"} {
		if v := args.Get(k); v.Type == gjson.String && v.Str != "" {
			c.key = v.Str
			break
		}
	}
	return c
}

var shellFailRe = regexp.MustCompile(`(?m)^(FAIL\b|panic: |fatal: |error: |Error: |ERROR\b|npm ERR!|Traceback \(most recent call last\))|(?m)exit (code|status) [1-9]|Command exited with code [1-9]`)

// shellFailed spots failures in command output reported without is_error.
func shellFailed(out string) bool {
	// Literal pre-checks spare the regexp on the many outputs that cannot match.
	if !strings.Contains(out, "FAIL") && !strings.Contains(out, ": ") && !strings.Contains(out, "ERR") &&
		!strings.Contains(out, "Traceback") && !strings.Contains(out, "xit") {
		return false
	}
	return shellFailRe.MatchString(out)
}

var (
	// Harness markup in user text (Claude Code's reminders, command echoes) is not the user's words.
	markupOpen = regexp.MustCompile(`<([a-z]+(?:-[a-z]+)+)>`)
	ansiRe     = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
	codeFence  = regexp.MustCompile("(?s)```.*?(```|$)")
	spaceRe    = regexp.MustCompile(`\s+`)
	listMarker = regexp.MustCompile(`^(\s*([-*+•]|\d+[.)]|#+|>)\s+)+`)
)

func cleanText(s string) string {
	s = ansiRe.ReplaceAllString(s, "")
	// Drop <tag-name>…</tag-name> spans (hyphenated names are harness markup, not prose).
	for {
		loc := markupOpen.FindStringSubmatchIndex(s)
		if loc == nil {
			break
		}
		end := strings.Index(s[loc[1]:], "</"+s[loc[2]:loc[3]]+">")
		if end < 0 {
			s = s[:loc[0]] + s[loc[1]:]
			continue
		}
		s = s[:loc[0]] + " " + s[loc[1]+end+len(s[loc[2]:loc[3]])+3:]
	}
	return strings.TrimSpace(s)
}

// sentences splits prose into sentences, leaving out code blocks, tables and list markers.
func sentences(text string) []string {
	text = codeFence.ReplaceAllString(text, "\n")
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && strings.ContainsRune("-*+•#>0123456789", []rune(line)[0]) {
			line = strings.TrimSpace(listMarker.ReplaceAllString(line, ""))
		}
		if line == "" || strings.HasPrefix(line, "|") || strings.HasPrefix(line, "<") {
			continue
		}
		start := 0
		for i := 0; i < len(line); i++ {
			if c := line[i]; (c == '.' || c == '!' || c == '?') && i+1 < len(line) && line[i+1] == ' ' &&
				i+2 < len(line) && (unicode.IsUpper(rune(line[i+2])) || line[i+2] == '`') {
				out = appendSentence(out, line[start:i+1])
				start = i + 2
			}
		}
		out = appendSentence(out, line[start:])
	}
	return out
}

func appendSentence(out []string, s string) []string {
	// Emphasis markers are layout, and a sentence ending in a colon only introduces a list.
	s = strings.TrimSpace(strings.ReplaceAll(s, "**", ""))
	if utf8.RuneCountInString(s) < 12 || strings.HasSuffix(s, ":") {
		return out
	}
	return append(out, s)
}

// clip collapses whitespace and shortens s to n characters at a word boundary.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	if i := strings.LastIndexByte(string(r), ' '); i > n/2 {
		return strings.TrimRight(string(r)[:i], " ,;:") + "…"
	}
	return string(r) + "…"
}

// firstLine is the first non-empty line of s.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

func code(s string) string {
	s = clip(strings.ReplaceAll(firstLine(s), "`", "'"), 120)
	return "`" + s + "`"
}

// --- sections ---

// sections holds bullet texts (without list markers) per section name.
type sections map[string][]string

var (
	constraintRe = keywords("must", "mustn't", "don't", "do not", "dont", "never", "always", "prefer", "avoid",
		"make sure", "should", "shouldn't", "no need to", "please use", "instead of", "not allowed")
	doneRe = keywords("done", "fixed", "implemented", "added", "created", "updated", "completed", "refactored",
		"removed", "renamed", "now passes", "tests pass", "works now", "now works", "resolved", "wrote", "moved",
		"replaced", "changed")
	decisionRe = keywords("decided", "decide to", "chose", "choose", "chosen", "instead", "because", "will use",
		"i'll use", "we'll use", "going with", "go with", "opted", "rather than", "switch to", "switched to",
		"the fix is", "the approach", "better to", "simpler to", "safer to", "the right way", "the best way",
		"the cleanest way", "the best approach", "the right fix", "so i'll", "so we'll", "the issue is",
		"the problem is", "the cause is")
	planRe = keywords("next, i", "next i", "next step", "then i'll", "i'll", "i will", "let me", "we need to",
		"need to", "todo", "remaining", "still need", "still have to", "plan is", "going to")
	imperativeRe = regexp.MustCompile(`(?i)^(please |then |also |and )?(use|run|start|keep|add|make|do|read|write|check|follow|put|leave|stick|only|try|ensure|remember|focus|work)\b`)
	numberRe     = regexp.MustCompile(`(?i)(\b\d[\d,.]*\s?(ms|µs|ns|s|sec|seconds|minutes|%|kb|mb|gb|tokens|tests?|lines|bytes|files|entries|messages|errors|x)\b|\bv\d+\.\d+(\.\d+)?\b|:\d{4,5}\b)`)
)

// matcher is what the extraction asks of its sentence filters.
type matcher interface{ MatchString(string) bool }

// wordList matches sentences containing one of its lowercase phrases as whole words. It does
// what a case-insensitive regexp alternation would, several times faster on long sessions.
type wordList []string

func keywords(words ...string) wordList { return wordList(words) }

// MatchString implements matcher.
func (k wordList) MatchString(s string) bool {
	lower := strings.ToLower(s)
	for _, w := range k {
		for off := 0; ; {
			i := strings.Index(lower[off:], w)
			if i < 0 {
				break
			}
			i += off
			end := i + len(w)
			if (i == 0 || !isWordByte(lower[i-1])) && (end == len(lower) || !isWordByte(lower[end])) {
				return true
			}
			off = i + 1
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 0x80 || ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || ('A' <= c && c <= 'Z')
}

func extractSections(w window) sections {
	s := sections{}
	users := userMessages(w)

	// Goal: the first request, the longest later one, the latest one.
	if len(users) > 0 {
		s.add(secGoal, clip(users[0], requestChars))
		longest := ""
		for _, u := range users[1:] {
			if len(u) > len(longest) && len(u) >= 80 {
				longest = u
			}
		}
		if longest != "" {
			s.add(secGoal, clip(longest, requestChars))
		}
		if last := users[len(users)-1]; len(users) > 1 {
			s.add(secGoal, clip(last, requestChars))
		}
	}

	var rules []string
	for _, re := range []matcher{constraintRe, imperativeRe} {
		// Without explicit rules, the user's direct instructions are the constraints there are.
		for _, u := range users {
			for _, sent := range sentences(u) {
				if re.MatchString(sent) && !strings.HasSuffix(sent, "?") {
					rules = append(rules, clip(sent, bulletChars))
				}
			}
		}
		if len(rules) > 0 {
			break
		}
	}
	for _, r := range lastN(dedup(rules), 10) {
		s.add(secConstraints, r)
	}

	// Done: changed files, successful builds and tests, the agent's own reports of finished work.
	var changed []string
	for _, c := range w.calls {
		if c.modifies && c.key != "" && c.result != nil && !c.result.isError && !slices.Contains(changed, c.key) {
			changed = append(changed, c.key)
		}
	}
	for chunk := range slices.Chunk(changed, 6) {
		quoted := make([]string, len(chunk))
		for i, p := range chunk {
			quoted[i] = code(p)
		}
		s.add(secDone, "Changed "+strings.Join(quoted, ", "))
	}
	var ran []string
	for _, c := range w.calls {
		if c.shell && c.key != "" && c.result != nil && !c.result.isError && buildOrTest(c.key) {
			ran = append(ran, "Ran "+code(c.key))
		}
	}
	for _, r := range lastN(dedup(ran), 4) {
		s.add(secDone, r)
	}
	var reports []string
	for _, m := range w.msgs {
		if m.role != "assistant" {
			continue
		}
		for _, sent := range sentences(m.text) {
			if doneRe.MatchString(sent) && !strings.HasSuffix(sent, "?") && !planRe.MatchString(sent) {
				reports = append(reports, clip(sent, bulletChars))
			}
		}
	}
	for _, r := range lastN(dedup(reports), 6) {
		s.add(secDone, r)
	}

	// In Progress: the last turn — its request and where the agent had got to.
	lastUser := -1
	for i, m := range w.msgs {
		if m.role == "user" && m.text != "" {
			lastUser = i
		}
	}
	if lastUser >= 0 {
		s.add(secInProgress, clip(w.msgs[lastUser].text, bulletChars))
		for i := len(w.msgs) - 1; i > lastUser; i-- {
			if m := w.msgs[i]; m.role == "assistant" {
				if sents := sentences(m.text); len(sents) > 0 {
					s.add(secInProgress, clip(sents[len(sents)-1], bulletChars))
					break
				}
				if len(m.calls) > 0 && m.calls[len(m.calls)-1].key != "" {
					c := m.calls[len(m.calls)-1]
					s.add(secInProgress, c.name+" "+code(c.key))
					break
				}
			}
		}
	}

	// Blocked: failures no later successful call with the same tool and argument resolved.
	var blocked []string
	for _, c := range unresolvedFailures(w) {
		blocked = append(blocked, blockedBullet(c))
	}
	for _, b := range lastN(dedup(blocked), 5) {
		s.add(secBlocked, b)
	}

	// Key Decisions: the agent's sentences that choose or justify; its reasoning when it said
	// none aloud.
	var decisions []string
	for _, text := range []func(xmsg) string{func(m xmsg) string { return m.text }, func(m xmsg) string { return m.thinking }} {
		for _, m := range w.msgs {
			if m.role != "assistant" {
				continue
			}
			for _, sent := range sentences(text(m)) {
				if decisionRe.MatchString(sent) && !strings.HasSuffix(sent, "?") {
					decisions = append(decisions, decisionBullet(sent))
				}
			}
		}
		if len(decisions) > 0 {
			break
		}
	}
	for _, d := range lastN(dedup(decisions), 8) {
		s.add(secDecisions, d)
	}

	// Next Steps: the latest request, then plans the agent stated in its last messages.
	if len(users) > 0 {
		s.add(secNext, clip(users[len(users)-1], bulletChars))
	}
	var plans []string
	seen := 0
	for i := len(w.msgs) - 1; i >= 0 && seen < 3; i-- {
		m := w.msgs[i]
		if m.role != "assistant" || m.text == "" {
			continue
		}
		seen++
		sents := sentences(m.text)
		for j := len(sents) - 1; j >= 0; j-- {
			if planRe.MatchString(sents[j]) {
				plans = append(plans, clip(sents[j], bulletChars))
			}
		}
	}
	slices.Reverse(plans)
	for _, p := range lastN(dedup(plans), 4) {
		s.add(secNext, p)
	}

	// Critical Context: commands, errors, numbers.
	var cmds []string
	for _, c := range w.calls {
		if c.shell && c.key != "" {
			cmds = append(cmds, code(c.key))
		}
	}
	if cmds = lastN(dedup(cmds), 8); len(cmds) > 0 {
		s.add(secCritical, "Commands run: "+strings.Join(cmds, ", "))
	}
	var errs []string
	for _, c := range w.calls {
		if c.result != nil && c.result.isError {
			if l := c.result.errorLine(); l != "" {
				errs = append(errs, "Error seen: "+code(l))
			}
		}
	}
	for _, e := range lastN(dedup(errs), 4) {
		s.add(secCritical, e)
	}
	var nums []string
	for _, m := range w.msgs {
		if m.role != "assistant" && m.role != "user" {
			continue
		}
		for _, sent := range sentences(m.text) {
			if strings.ContainsAny(sent, "0123456789") && numberRe.MatchString(sent) {
				nums = append(nums, clip(sent, bulletChars))
			}
		}
	}
	for _, n := range lastN(dedup(nums), 5) {
		s.add(secCritical, n)
	}
	return s
}

// extractTurnPrefix summarizes the beginning of a split turn in the split-turn layout.
func extractTurnPrefix(w window) string {
	s := sections{}
	full := extractSections(w)
	for _, m := range w.msgs {
		if m.role == "user" && m.text != "" {
			s.add(secOrigRequest, clip(m.text, 2*requestChars))
			break
		}
	}
	s[secEarly] = append(slices.Clone(full[secDone]), full[secDecisions]...)
	s[secSuffix] = append(slices.Clone(full[secBlocked]), full[secCritical]...)
	if ip := full[secInProgress]; len(ip) > 1 {
		s[secSuffix] = append(s[secSuffix], ip[1:]...)
	}
	var b strings.Builder
	writeSection(&b, "## ", secOrigRequest, s[secOrigRequest], "")
	writeSection(&b, "## ", secEarly, s[secEarly], "- ")
	writeSection(&b, "## ", secSuffix, s[secSuffix], "- ")
	return fitChars(strings.TrimSpace(b.String()), ExtractiveMaxChars/2)
}

func userMessages(w window) []string {
	var out []string
	for _, m := range w.msgs {
		if m.role == "user" && m.text != "" {
			out = append(out, m.text)
		}
	}
	return out
}

var buildTestRe = regexp.MustCompile(`\b(test|tests|build|vet|lint|check|make|tsc|pytest|cargo|commit|compile)\b`)

func buildOrTest(cmd string) bool { return buildTestRe.MatchString(cmd) }

// unresolvedFailures lists failed calls that no later call with the same tool and argument
// repeated successfully.
func unresolvedFailures(w window) []*xcall {
	var out []*xcall
	for i, c := range w.calls {
		if c.result != nil && c.result.isError && !searchFoundNothing(c) && !resolvedLater(w.calls[i+1:], c) {
			out = append(out, c)
		}
	}
	return out
}

// searchFoundNothing reports a search command (grep, rg, ag, ack) that exited with status 1
// and printed nothing else: that status means "no match", not a failure, so it blocks nothing.
func searchFoundNothing(c *xcall) bool {
	if !c.shell {
		return false
	}
	cmd := c.key
	if i := strings.LastIndex(cmd, "&& "); i >= 0 {
		cmd = cmd[i+3:]
	}
	switch strings.SplitN(strings.TrimSpace(cmd), " ", 2)[0] {
	case "grep", "egrep", "fgrep", "rg", "ag", "ack":
	default:
		return false
	}
	out := strings.TrimSpace(c.result.text)
	return out == "" || noMatchExitRe.MatchString(out)
}

var noMatchExitRe = regexp.MustCompile(`^(\(no output\)\s*)?(Command exited with code 1|exit (code|status):? 1)$`)

func resolvedLater(later []*xcall, failed *xcall) bool {
	for _, c := range later {
		if c.name == failed.name && c.key == failed.key && c.result != nil && !c.result.isError {
			return true
		}
	}
	return false
}

func blockedBullet(c *xcall) string {
	what := c.name
	if c.key != "" {
		what += " " + code(c.key)
	}
	if l := c.result.errorLine(); l != "" {
		return what + " failed: " + code(l)
	}
	return what + " failed"
}

var (
	errorLineStrong = regexp.MustCompile(`(?im)((error|fatal|panic|exception)(\[\w+\])?:|\berror [A-Z]+\d+|^\s*FAIL\b|traceback|no such file|could not|cannot|can't|not found|permission denied)`)
	errorLineWeak   = regexp.MustCompile(`(?i)(error|fail|panic|fatal|undefined|exception|denied|exit (code|status) [1-9])`)
)

// errorLine picks the most telling line of a failure's output.
func errorLine(out string) string {
	for _, re := range []*regexp.Regexp{errorLineStrong, errorLineWeak} {
		if loc := re.FindStringIndex(out); loc != nil {
			start := strings.LastIndexByte(out[:loc[0]], '\n') + 1
			end := strings.IndexByte(out[loc[0]:], '\n')
			if end < 0 {
				end = len(out)
			} else {
				end += loc[0]
			}
			if l := strings.TrimSpace(out[start:end]); l != "" {
				return l
			}
		}
	}
	return firstLine(out)
}

func decisionBullet(sent string) string {
	sent = clip(sent, bulletChars)
	if i := strings.Index(strings.ToLower(sent), " because "); i > 0 {
		return "**" + strings.TrimRight(sent[:i], " ,") + "**: " + strings.TrimSpace(sent[i+1:])
	}
	return "**" + strings.TrimSuffix(sent, ".") + "**"
}

func (s sections) add(name, bullet string) {
	bullet = strings.TrimSpace(bullet)
	if bullet == "" {
		return
	}
	k := normKey(bullet)
	for _, b := range s[name] {
		if normKey(b) == k {
			return
		}
	}
	s[name] = append(s[name], bullet)
}

func normKey(b string) string {
	b = strings.ToLower(strings.Trim(b, "*` .…"))
	return strings.ReplaceAll(strings.Join(strings.Fields(b), " "), "*", "")
}

func dedup(xs []string) []string {
	seen := make(map[string]bool, len(xs))
	out := xs[:0:0]
	for _, x := range xs {
		if k := normKey(x); !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return out
}

func lastN(xs []string, n int) []string {
	if len(xs) > n {
		return xs[len(xs)-n:]
	}
	return xs
}

// --- merging with a previous summary ---

var headingAlias = map[string]string{
	"goal": secGoal, "constraints & preferences": secConstraints, "constraints": secConstraints,
	"done": secDone, "in progress": secInProgress, "blocked": secBlocked,
	"key decisions": secDecisions, "next steps": secNext, "critical context": secCritical,
	// A split turn's halves fold into the main layout once the turn is history.
	"original request": secGoal, "early progress": secDone, "context for suffix": secCritical,
	"progress": "",
}

// parseSummary reads a summary in the template's layout back into bullets. Lines outside a
// known section, "(none)" and rules are ignored; list markers and check boxes are dropped.
func parseSummary(text string) sections {
	s := sections{}
	cur := ""
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") {
			h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(t, "#")))
			cur = headingAlias[h]
			continue
		}
		if cur == "" || t == "" || t == "---" || strings.EqualFold(t, "(none)") || strings.HasPrefix(t, "**Turn Context") {
			continue
		}
		t = strings.TrimSpace(listMarker.ReplaceAllString(t, ""))
		for _, box := range []string{"[x] ", "[X] ", "[ ] "} {
			t = strings.TrimPrefix(t, box)
		}
		if t != "" && t != "(none)" {
			s.add(cur, t)
		}
	}
	return s
}

// mergePrevious keeps the previous summary's durable bullets ahead of the new ones.
func mergePrevious(prev, cur sections, w window) sections {
	out := sections{}
	for _, name := range []string{secGoal, secConstraints, secDecisions, secCritical} {
		for _, b := range prev[name] {
			out.add(name, b)
		}
		for _, b := range cur[name] {
			out.add(name, b)
		}
	}
	// What was under way last time has been carried on since: it moves to Done, and blockers
	// whose command or file later succeeded are reported as resolved.
	for _, b := range prev[secDone] {
		out.add(secDone, b)
	}
	for _, b := range prev[secInProgress] {
		out.add(secDone, b)
	}
	for _, b := range prev[secBlocked] {
		if blockerResolved(b, w) {
			out.add(secDone, "Resolved: "+b)
		} else {
			out.add(secBlocked, b)
		}
	}
	for _, b := range cur[secDone] {
		out.add(secDone, b)
	}
	for _, b := range cur[secBlocked] {
		out.add(secBlocked, b)
	}
	out[secInProgress] = cur[secInProgress]
	out[secNext] = cur[secNext]
	if len(out[secNext]) == 0 {
		out[secNext] = prev[secNext]
	}
	return out
}

var backticked = regexp.MustCompile("`([^`]+)`")

// blockerResolved reports whether a call in w succeeded with the argument a blocker names.
func blockerResolved(bullet string, w window) bool {
	m := backticked.FindStringSubmatch(bullet)
	if m == nil {
		return false
	}
	for _, c := range w.calls {
		if c.result != nil && !c.result.isError && c.key != "" && code(c.key) == "`"+m[1]+"`" {
			return true
		}
	}
	return false
}

// --- rendering ---

// shrinkOrder lists which sections give up their oldest bullet first when the summary is too
// long; Goal keeps its first bullet (the original request) to the end.
var shrinkOrder = []string{secCritical, secDone, secDecisions, secConstraints, secNext, secBlocked, secInProgress, secGoal}

func renderSummary(s sections, maxChars int) string {
	for {
		out := renderSections(s)
		if len(out) <= maxChars {
			return out
		}
		longest, n := "", 0
		for _, name := range shrinkOrder {
			if l := len(s[name]); l > 1 && l > n {
				longest, n = name, l
			}
		}
		if longest == "" {
			return fitChars(out, maxChars)
		}
		if longest == secGoal {
			s[longest] = append(s[longest][:1:1], s[longest][2:]...)
		} else {
			s[longest] = s[longest][1:]
		}
	}
}

func renderSections(s sections) string {
	var b strings.Builder
	writeSection(&b, "## ", secGoal, s[secGoal], "- ")
	writeSection(&b, "## ", secConstraints, s[secConstraints], "- ")
	b.WriteString("\n## Progress\n")
	writeSection(&b, "### ", secDone, s[secDone], "- [x] ")
	writeSection(&b, "### ", secInProgress, s[secInProgress], "- [ ] ")
	writeSection(&b, "### ", secBlocked, s[secBlocked], "- ")
	writeSection(&b, "## ", secDecisions, s[secDecisions], "- ")
	writeSection(&b, "## ", secNext, s[secNext], "1. ")
	writeSection(&b, "## ", secCritical, s[secCritical], "- ")
	return strings.TrimSpace(b.String())
}

// writeSection writes a heading and its bullets; marker "1. " numbers them and "" writes the
// first bullet as a plain paragraph.
func writeSection(b *strings.Builder, level, name string, bullets []string, marker string) {
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "## Progress\n") {
		b.WriteString("\n")
	}
	b.WriteString(level + name + "\n")
	if len(bullets) == 0 {
		b.WriteString("(none)\n")
		return
	}
	for i, x := range bullets {
		switch marker {
		case "1. ":
			fmt.Fprintf(b, "%d. %s\n", i+1, x)
		case "":
			b.WriteString(x + "\n")
		default:
			b.WriteString(marker + x + "\n")
		}
	}
}

// fitChars is the last resort of the size bound: cut at a line boundary.
func fitChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, '\n'); i > 0 {
		s = s[:i]
	}
	return s + "\n[… summary cut to its size limit]"
}
