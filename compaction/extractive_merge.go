package compaction

import (
	"fmt"
	"strings"
)

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
		t = strings.TrimSpace(listMarker().ReplaceAllString(t, ""))
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

var backticked = lazyRegexp("`([^`]+)`")

// blockerResolved reports whether a call in w succeeded with the argument a blocker names.
func blockerResolved(bullet string, w window) bool {
	m := backticked().FindStringSubmatch(bullet)
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
