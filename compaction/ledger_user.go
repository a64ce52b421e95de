package compaction

import (
	"strings"
	"unicode/utf8"
)

// The user's side of the ledger: sentences that instruct or state a preference, lines that
// state values, and errors the user pasted.

const (
	constraintChars = 400 // a longer sentence is clipped
	valueChars      = 200
)

var (
	// ruleRe marks a sentence that states a rule or preference.
	ruleRe = lazyRegexp(`(?i)\b(must|mustn't|must not|never|always|don'?t|do not|should|shouldn't|make sure|` +
		`prefer|avoid|no need|instead of|not allowed|only want|i want|we want|i would only|needs?|has to|have to|` +
		`please|can we|could we|how about|let'?s|i'd like|we'd like|i wish)\b`)
	// prohibitionRe: "no console logs!", "no rgb indices".
	prohibitionRe = lazyRegexp(`(?i)(^|,\s*)no\s+[a-z]`)
	fillerRe      = lazyRegexp(`(?i)^((ok|okay|alright|allright|yes|yeah|yep|no|nope|so|then|also|and|but|well|actually|hm+|now|btw|first|finally|wait|right|sure|cool|great|nice|good|perfect|ah|oh|dude|my dude|just|maybe|hey|omfg|omg|wtf|ugh|lol|pls|plz)\b[\s,.!:-]*)+`)
	midImperative = lazyRegexp(`(?i)(,\s*just|,\s*then|;|\bthen)\s+(just\s+)?(read|write|create|add|remove|delete|kill|use|make|put|keep|move|copy|rename|run|fix|update|change|call|commit|revert|open|adjust|split|replace|mention|document|start|continue)\b`)
	// imperatives that start an instruction.
	imperatives = map[string]bool{"read": true, "reread": true, "write": true, "create": true, "createa": true, "add": true,
		"remove": true, "remoev": true, "delete": true, "kill": true, "use": true, "make": true, "put": true, "keep": true,
		"move": true, "copy": true, "rename": true, "run": true, "fix": true, "update": true, "change": true, "check": true,
		"investigate": true, "implement": true, "start": true, "continue": true, "commit": true, "revert": true, "undo": true,
		"open": true, "look": true, "tackle": true, "adjust": true, "try": true, "give": true, "split": true, "merge": true,
		"test": true, "wrap": true, "replace": true, "push": true, "release": true, "bump": true, "document": true,
		"mention": true, "explain": true, "propose": true, "suggest": true, "show": true, "go": true, "do": true,
		"stop": true, "leave": true, "ensure": true, "refactor": true, "simplify": true, "clean": true, "port": true,
		"modify": true, "set": true, "install": true, "build": true, "deploy": true, "publish": true, "follow": true,
		"focus": true, "work": true, "wire": true, "extract": true, "drop": true, "skip": true, "include": true,
		"ignore": true, "call": true, "describe": true, "reduce": true, "increase": true, "decrease": true, "rewrite": true}
	// valueRe finds what a user states as a value: colours, percentages, versions, sizes and
	// durations, ports, settings and "a -> b" mappings.
	valueRe = lazyRegexp(`(?i)(#[0-9a-f]{6}\b|\b\d+(\.\d+)?\s?%|\bv?\d+\.\d+(\.\d+)+\b|\bv\d+\b|` +
		`\b\d+(\.\d+)?\s?(ms|s|sec|secs|seconds?|minutes?|mins?|hours?|h|px|em|rem|kb|mb|gb|tb|k|tokens?|lines?|chars?|characters|bytes|files|items|messages|entries|columns|rows|cores|x)\b|` +
		`localhost:\d+|:\d{4,5}\b|\bset to -?\d+|=\s*-?\d+\b|\S\s*->\s*\S|\b[0-9a-f]*\d[0-9a-f]*\b)`)
	hexWordRe  = lazyRegexp(`(?i)^[0-9a-f]*\d[0-9a-f]*$`)
	harnessTag = lazyRegexp(`<([a-z]+(?:-[a-z]+)+)>`)
	codeFences = lazyRegexp("(?s)```.*?(```|$)")
	// harnessRule marks a standing instruction in harness output by its capitals.
	harnessRule = lazyRegexp(`\b(MUST|NEVER|ALWAYS|NOT|CRITICAL|IMPORTANT|WARNING|Prohibited|REQUIRED)\b`)
)

// userEvent reads a user message as written (harness markup included).
func userEvent(raw string) (ledgerEvent, bool) {
	if t := strings.TrimSpace(raw); strings.HasPrefix(t, "$ ") || (strings.HasPrefix(t, "!") && len(t) > 1 && t[1] != ' ') {
		return ledgerEvent{}, false // a shell command the user ran through the agent ($ or !), and its output
	}
	typed, harness := splitHarness(ansiRe().ReplaceAllString(raw, ""))
	ev := ledgerEvent{user: true}
	seen := map[string]bool{}
	for _, line := range typedLines(typed) {
		for _, s := range splitSentences(line) {
			if isConstraint(s) && !seen[normFact(s)] {
				seen[normFact(s)] = true
				ev.constraints = append(ev.constraints, clip(s, constraintChars))
			}
		}
		if statesValue(line) && !coveredBy(line, ev.constraints) {
			ev.values = append(ev.values, clip(line, valueChars))
		}
	}
	for _, line := range typedLines(harness) {
		for _, s := range splitSentences(line) {
			if harnessRule().MatchString(s) && utf8.RuneCountInString(s) >= 20 && !seen[normFact(s)] {
				seen[normFact(s)] = true
				ev.constraints = append(ev.constraints, clip(s, constraintChars))
			}
		}
	}
	// Errors the user pasted: only lines that clearly identify one.
	for _, l := range errorLines(typed, false) {
		if strictError().MatchString(l) || strings.Contains(l, "Error:") || strings.Contains(l, "error:") {
			ev.errors = append(ev.errors, l)
		}
	}
	if len(ev.constraints) == 0 && len(ev.values) == 0 && len(ev.errors) == 0 {
		return ledgerEvent{}, false
	}
	return ev, true
}

// splitHarness separates what the user typed from what a harness injected: the arguments of a
// slash command count as typed; the output of a local command is harness text (it may carry
// standing instructions); other markup (system reminders, notifications) is dropped.
func splitHarness(s string) (typed, harness string) {
	var t, h strings.Builder
	for {
		loc := harnessTag().FindStringSubmatchIndex(s)
		if loc == nil {
			t.WriteString(s)
			return t.String(), h.String()
		}
		name := s[loc[2]:loc[3]]
		t.WriteString(s[:loc[0]])
		rest := s[loc[1]:]
		end := strings.Index(rest, "</"+name+">")
		body := rest
		if end >= 0 {
			body, rest = rest[:end], rest[end+len(name)+3:]
		} else {
			rest = ""
		}
		switch name {
		case "command-args":
			t.WriteString("\n" + body + "\n")
		case "local-command-stdout":
			h.WriteString("\n" + body + "\n")
		}
		s = rest
	}
}

// typedLines are the lines of text a person wrote: code blocks, pasted stack traces, shell
// prompts, diffs and very long lines left out; list markers removed.
func typedLines(text string) []string {
	text = codeFences().ReplaceAllString(text, "\n")
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t") {
			continue // indented: pasted output or code
		}
		l = strings.TrimSpace(l)
		if l == "" || utf8.RuneCountInString(l) > 2000 || strings.HasPrefix(l, "at ") || strings.ContainsRune(l, '➜') ||
			strings.HasPrefix(l, "$ ") || strings.HasPrefix(l, "{") || strings.HasPrefix(l, "+ ") || strings.HasPrefix(l, "|") ||
			strings.HasPrefix(l, "<") || strings.HasPrefix(l, "[") || strings.HasPrefix(l, "/") ||
			strings.HasPrefix(l, "'/") || strings.HasPrefix(l, `"/`) || strings.HasPrefix(l, "./") || strings.HasPrefix(l, "../") {
			continue
		}
		l = strings.TrimSpace(listMarker().ReplaceAllString(l, ""))
		l = strings.TrimSpace(strings.ReplaceAll(l, "**", ""))
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// splitSentences splits a line at sentence ends (., ! or ? before a space), keeping the text.
func splitSentences(line string) []string {
	var out []string
	start := 0
	for i := 0; i < len(line); i++ {
		if c := line[i]; (c == '.' || c == '!' || c == '?') && i+1 < len(line) && line[i+1] == ' ' &&
			!(c == '.' && i > 0 && line[i-1] == '.') {
			out = append(out, strings.TrimSpace(line[start:i+1]))
			start = i + 2
		}
	}
	if s := strings.TrimSpace(line[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// isConstraint reports whether a sentence instructs or states a preference.
func isConstraint(s string) bool {
	if utf8.RuneCountInString(s) < 12 {
		return false
	}
	if ruleRe().MatchString(s) || prohibitionRe().MatchString(s) || midImperative().MatchString(s) {
		return true
	}
	rest := fillerRe().ReplaceAllString(s, "")
	first := strings.ToLower(strings.Trim(strings.SplitN(rest, " ", 2)[0], ",.!:;"))
	return imperatives[first] && !strings.HasSuffix(s, "?")
}

// statesValue reports whether a line the user typed states a value worth keeping.
func statesValue(line string) bool {
	if utf8.RuneCountInString(line) > valueChars {
		return false
	}
	for _, m := range valueRe().FindAllString(line, -1) {
		if hexWordRe().MatchString(m) && len(m) != 6 {
			continue // a bare number is not a value; six hex digits (a colour) are
		}
		return true
	}
	return false
}

// coveredBy reports whether line is part of one of the sentences already kept.
func coveredBy(line string, sentences []string) bool {
	n := normFact(line)
	for _, s := range sentences {
		if k := normFact(s); strings.Contains(n, k) && len(k) >= len(n)*3/4 {
			return true
		}
	}
	return false
}

// valueKey identifies what a value line is about: its words without the values, so that
// "muted is #808080" and later "muted is #909090" are the same setting.
func valueKey(line string) string {
	return normFact(valueRe().ReplaceAllString(line, " "))
}
