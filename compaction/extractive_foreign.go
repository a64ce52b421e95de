package compaction

import (
	"strings"
)

// --- a previous summary another agent wrote ---

// An imported session's latest summary is the other agent's: Claude Code's, for one, is an
// "Analysis:" scratchpad followed by "Summary:" and numbered sections ("1. Primary Request and
// Intent:", "7. Pending Tasks:" …). parseSummary knows only the template's headings and would
// drop all of it, so the first extractive compaction after an import lost the user's request
// ("Goal (none)") and everything the other agent had kept.

// isTemplateSummary reports whether text has a heading of the template's layout, which
// parseSummary reads.
func isTemplateSummary(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "#") {
			continue
		}
		if _, ok := headingAlias[strings.ToLower(strings.TrimSpace(strings.TrimLeft(t, "#")))]; ok {
			return true
		}
	}
	return false
}

// parseForeign reads a summary in another layout into the template's sections: a heading
// whose words say what it holds starts that section (foreignSection), every other line is a
// bullet of the section it is in (the opening, before any heading, counts as critical
// context). Code blocks and an analysis that comes before a "Summary:" line are left out.
func parseForeign(text string) sections {
	text = afterSummaryLine(text)
	s := sections{}
	cur, fenced := secCritical, false
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			fenced = !fenced
			continue
		}
		if fenced || t == "" || t == "---" {
			continue
		}
		indented := line[0] == ' ' || line[0] == '\t'
		if title, rest, ok := foreignHeading(t); ok && !indented {
			cur, t = foreignSection(title), rest
		}
		if cur == "" {
			continue // a section to leave out (an analysis)
		}
		t = strings.TrimSpace(listMarker().ReplaceAllString(t, ""))
		if t == "" || strings.EqualFold(t, "(none)") || strings.EqualFold(t, "none") {
			continue
		}
		switch cur {
		case secGoal:
			s.add(cur, clip(t, requestChars))
		case foreignUsers:
			// A list of what the user said: as for the messages themselves (addConstraints),
			// their rules and direct instructions are the constraints; the rest is chat.
			if constraintRe.MatchString(t) || imperativeRe().MatchString(t) {
				s.add(secConstraints, clip(t, bulletChars))
			}
		default:
			s.add(cur, clip(t, bulletChars))
		}
	}
	return s
}

// afterSummaryLine returns what follows a line that is only "Summary:" (or a "Summary"
// heading), when there is one: what comes before it is the writer's working notes.
func afterSummaryLine(text string) string {
	for i := 0; i < len(text); {
		end := strings.IndexByte(text[i:], '\n')
		if end < 0 {
			end = len(text) - i
		}
		t := strings.ToLower(strings.TrimSpace(strings.Trim(strings.TrimSpace(text[i:i+end]), "#*:")))
		if t == "summary" && i > 0 {
			return text[i+end:]
		}
		i += end + 1
	}
	return text
}

// foreignHeading recognises a section title at the start of a line: "# Title", "1. Title:",
// "1. **Title**: rest", "**Title**" or "Title:" (short, not indented), and returns the title
// and the rest of the line. A title says nothing about a section unless foreignSection knows
// its words, so only those count.
func foreignHeading(t string) (title, rest string, ok bool) {
	if strings.HasPrefix(t, "#") {
		title = strings.TrimSpace(strings.TrimLeft(t, "#"))
		return title, "", foreignSection(title) != "" || strings.Contains(strings.ToLower(title), "analysis")
	}
	u := t
	if i := strings.IndexByte(u, '.'); i > 0 && i <= 2 && isDigits(u[:i]) {
		u = strings.TrimSpace(u[i+1:])
	}
	if strings.HasPrefix(u, "**") {
		if end := strings.Index(u[2:], "**"); end > 0 {
			title, rest = u[2:2+end], strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(u[4+end:]), ":"))
			title = strings.TrimSuffix(title, ":")
		}
	} else if i := strings.IndexByte(u, ':'); i > 0 && i <= 48 {
		title, rest = u[:i], strings.TrimSpace(u[i+1:])
	}
	if title == "" {
		return "", "", false
	}
	if strings.EqualFold(strings.TrimSpace(title), "analysis") {
		return title, rest, true
	}
	return title, rest, foreignSection(title) != ""
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// foreignUsers is the section of a list of the user's messages, sorted as parseForeign reads it.
const foreignUsers = "user messages"

// foreignTitles maps words of a title to the template's section, the first that matches
// winning ("Pending Tasks" is what is next, not the goal). "" leaves the section out.
var foreignTitles = []struct {
	words   []string
	section string
}{
	{[]string{"analysis"}, ""},
	{[]string{"user messages", "user's messages"}, foreignUsers},
	{[]string{"pending", "next step", "next steps", "todo", "remaining", "follow-up"}, secNext},
	{[]string{"current work", "in progress", "current state", "current status"}, secInProgress},
	{[]string{"request", "intent", "goal", "objective", "task"}, secGoal},
	{[]string{"constraint", "preference", "requirement", "instruction", "rules"}, secConstraints},
	{[]string{"decision", "problem solving", "approach", "solution", "design"}, secDecisions},
	{[]string{"blocked", "blocker", "open question", "unresolved"}, secBlocked},
	{[]string{"error", "fixes", "done", "completed", "progress", "accomplish", "changes made"}, secDone},
	{[]string{"concept", "files", "code", "context", "technical", "key", "notes", "state"}, secCritical},
}

// foreignSection is the template's section for a title, "" when its words say nothing
// foreignTitles knows (or when they say to leave it out).
func foreignSection(title string) string {
	t := strings.ToLower(title)
	for _, ft := range foreignTitles {
		for _, w := range ft.words {
			if strings.Contains(t, w) {
				return ft.section
			}
		}
	}
	return ""
}
