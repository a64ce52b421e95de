package compaction

import (
	"regexp"
	"slices"
	"strings"
)

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
	imperativeRe = lazyRegexp(`(?i)^(please |then |also |and )?(use|run|start|keep|add|make|do|read|write|check|follow|put|leave|stick|only|try|ensure|remember|focus|work)\b`)
	numberRe     = lazyRegexp(`(?i)(\b\d[\d,.]*\s?(ms|µs|ns|s|sec|seconds|minutes|%|kb|mb|gb|tokens|tests?|lines|bytes|files|entries|messages|errors|x)\b|\bv\d+\.\d+(\.\d+)?\b|:\d{4,5}\b)`)
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
	s.addGoal(users)
	s.addConstraints(users)
	s.addDone(w)
	s.addInProgress(w)
	s.addBlocked(w)
	s.addDecisions(w)
	s.addNext(w, users)
	s.addCritical(w)
	return s
}

// addGoal: the first request, the longest later one, the latest one.
func (s sections) addGoal(users []string) {
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
}

// addConstraints: the user's rules; without explicit rules, their direct instructions.
func (s sections) addConstraints(users []string) {
	var rules []string
	for _, re := range []matcher{constraintRe, imperativeRe()} {
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
}

// addDone: changed files, successful builds and tests, the agent's own reports of finished work.
func (s sections) addDone(w window) {
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
}

// addInProgress: the last turn — its request and where the agent had got to.
func (s sections) addInProgress(w window) {
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
}

// addBlocked: failures no later successful call with the same tool and argument resolved.
func (s sections) addBlocked(w window) {
	var blocked []string
	for _, c := range unresolvedFailures(w) {
		blocked = append(blocked, blockedBullet(c))
	}
	for _, b := range lastN(dedup(blocked), 5) {
		s.add(secBlocked, b)
	}
}

// addDecisions: the agent's sentences that choose or justify; its reasoning when it said
// none aloud.
func (s sections) addDecisions(w window) {
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
}

// addNext: the latest request, then plans the agent stated in its last messages.
func (s sections) addNext(w window, users []string) {
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
}

// addCritical: commands, errors, numbers.
func (s sections) addCritical(w window) {
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
			if strings.ContainsAny(sent, "0123456789") && numberRe().MatchString(sent) {
				nums = append(nums, clip(sent, bulletChars))
			}
		}
	}
	for _, n := range lastN(dedup(nums), 5) {
		s.add(secCritical, n)
	}
}

// extractTurnPrefix summarizes the beginning of a split turn in the split-turn layout, in at
// most maxChars characters.
func extractTurnPrefix(w window, l *Ledger, maxChars int) string {
	s := sections{}
	full := extractSections(w)
	full.leaveToLedger(l)
	full.capSections()
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
	return fitChars(strings.TrimSpace(b.String()), maxChars)
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

var buildTestRe = lazyRegexp(`\b(test|tests|build|vet|lint|check|make|tsc|pytest|cargo|commit|compile)\b`)

func buildOrTest(cmd string) bool { return buildTestRe().MatchString(cmd) }

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
	return out == "" || noMatchExitRe().MatchString(out)
}

var noMatchExitRe = lazyRegexp(`^(\(no output\)\s*)?(Command exited with code 1|exit (code|status):? 1)$`)

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
	errorLineStrong = lazyRegexp(`(?im)((error|fatal|panic|exception)(\[\w+\])?:|\berror [A-Z]+\d+|^\s*FAIL\b|traceback|no such file|could not|cannot|can't|not found|permission denied)`)
	errorLineWeak   = lazyRegexp(`(?i)(error|fail|panic|fatal|undefined|exception|denied|exit (code|status) [1-9])`)
)

// errorLine picks the most telling line of a failure's output.
func errorLine(out string) string {
	for _, re := range []*regexp.Regexp{errorLineStrong(), errorLineWeak()} {
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

// sectionCaps bound each section's bullets, so that merging summary after summary stops
// adding once a section is full (the newest bullets stay; Goal keeps its first, the original
// request).
var sectionCaps = map[string]int{secGoal: 3, secConstraints: 10, secDone: 12, secInProgress: 3, secBlocked: 5,
	secDecisions: 10, secNext: 5, secCritical: 10}

func (s sections) capSections() {
	for name, n := range sectionCaps {
		b := s[name]
		if len(b) <= n {
			continue
		}
		if name == secGoal {
			s[name] = append(b[:1:1], b[len(b)-(n-1):]...)
			continue
		}
		s[name] = b[len(b)-n:]
	}
}

// ledgerPointer stands in the Constraints section for what the ledger keeps word for word.
const ledgerPointer = "The user's instructions are kept word for word in the <user-constraints> block at the end."

// leaveToLedger removes what the ledger records: the user's constraints (a pointer stays),
// the commands run (Done's "Ran …" and Critical Context's list), the errors of Critical
// Context, the error text of blockers, and sentences the ledger holds as the user's values.
func (s sections) leaveToLedger(l *Ledger) {
	if l == nil {
		return
	}
	if len(l.Constraints) > 0 {
		s[secConstraints] = []string{ledgerPointer}
	}
	held := map[string]bool{}
	for _, n := range append(slices.Clone(l.Constraints), l.Values...) {
		held[normKey(n.Text)] = true
	}
	var critical []string
	for _, b := range s[secCritical] {
		if strings.HasPrefix(b, "Commands run:") || strings.HasPrefix(b, "Error seen:") || held[normKey(b)] {
			continue
		}
		critical = append(critical, b)
	}
	s[secCritical] = critical
	var done []string
	for _, b := range s[secDone] {
		if !strings.HasPrefix(b, "Ran `") { // the ledger lists every command with its outcome
			done = append(done, b)
		}
	}
	s[secDone] = done
	for i, b := range s[secBlocked] {
		if j := strings.Index(b, " failed: `"); j >= 0 {
			s[secBlocked][i] = b[:j] + " failed (the error is in <errors-seen>)"
		}
	}
}
