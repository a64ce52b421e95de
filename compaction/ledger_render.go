package compaction

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Tag names of the ledger blocks, in the order Render writes them. They follow the
// <read-files>/<modified-files> blocks at the end of a stored summary. fileops.StripTags knows
// the same names, so stripping a stored summary removes them with the file lists.
const (
	TagConstraints = "user-constraints"
	TagValues      = "user-values"
	TagCommands    = "commands-run"
	TagErrors      = "errors-seen"
	TagDropped     = "facts-dropped"
)

// LedgerTags lists the ledger's tag names in render order.
var LedgerTags = []string{TagConstraints, TagValues, TagCommands, TagErrors, TagDropped}

// Render writes the ledger as tagged blocks, one fact per line, blank lines between blocks,
// no trailing newline; "" for an empty ledger:
//
//	<user-constraints>
//	- the user's sentence
//	</user-constraints>
//
//	<user-values>
//	- green diff is #b5bd68
//	- (superseded) md link #b5bd68
//	</user-values>
//
//	<commands-run>
//	- ok (12 runs): cd packages/coding-agent && npm run check
//	- failed: npm run publish
//	</commands-run>
//
//	<errors-seen>
//	from npm run publish:
//	- open: src/theme/theme.ts(5,15): error TS2305: …
//	from user:
//	- resolved: Error: Invalid hex color: #000cc
//	</errors-seen>
//
//	<facts-dropped>
//	errors 12, commands 3
//	</facts-dropped>
func (l *Ledger) Render() string {
	if l.Empty() {
		return ""
	}
	var b strings.Builder
	block := func(tag string, lines []string) {
		if len(lines) == 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("<" + tag + ">\n")
		for _, s := range lines {
			b.WriteString(s + "\n")
		}
		b.WriteString("</" + tag + ">")
	}
	var lines []string
	for _, n := range l.Constraints {
		lines = append(lines, "- "+joinLines(n.Text))
	}
	block(TagConstraints, lines)
	lines = nil
	for _, n := range l.Values {
		prefix := "- "
		if n.Superseded {
			prefix = "- (superseded) "
		}
		lines = append(lines, prefix+joinLines(n.Text))
	}
	block(TagValues, lines)
	lines = nil
	for _, c := range l.Commands {
		runs := ""
		if c.Runs > 1 {
			runs = fmt.Sprintf(" (%d runs)", c.Runs)
		}
		lines = append(lines, "- "+c.Status+runs+": "+joinLines(c.Command))
	}
	block(TagCommands, lines)
	lines = nil
	// Errors are grouped by what produced them, groups in order of their oldest error.
	var sources []string
	for _, e := range l.Errors {
		if !slices.Contains(sources, e.Source) {
			sources = append(sources, e.Source)
		}
	}
	for _, src := range sources {
		if src != "" {
			lines = append(lines, "from "+joinLines(src)+":")
		}
		for _, e := range l.Errors {
			if e.Source == src {
				lines = append(lines, "- "+e.Status+": "+joinLines(e.Error))
			}
		}
	}
	block(TagErrors, lines)
	if d := l.Dropped; d.Total() > 0 {
		var parts []string
		for _, p := range []struct {
			name string
			n    int
		}{{"constraints", d.Constraints}, {"values", d.Values}, {"commands", d.Commands}, {"errors", d.Errors}} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", p.name, p.n))
			}
		}
		block(TagDropped, []string{strings.Join(parts, ", ")})
	}
	return b.String()
}

// joinLines keeps a fact on one line: line breaks become spaces.
func joinLines(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// AppendLedger returns summary (already ending with its file blocks, if any) followed by a
// blank line and l's blocks; summary alone when l is empty.
func AppendLedger(summary string, l *Ledger) string {
	r := l.Render()
	if r == "" {
		return summary
	}
	summary = strings.TrimRight(summary, " \t\r\n")
	if summary == "" {
		return r
	}
	return summary + "\n\n" + r
}

// trailingBlocks splits the ledger blocks off the end of summary: the text before them and the
// lines of each block by tag. Only blocks that end the text count, so a block quoted inside
// the prose is never taken for the server's; an opening tag must start a line; a tag met twice
// ends the walk, so a forged duplicate before the real block stays in rest.
func trailingBlocks(summary string) (rest string, blocks map[string][]string) {
	s := strings.TrimRight(summary, " \t\r\n")
	blocks = map[string][]string{}
	for {
		tag := ""
		for _, t := range LedgerTags {
			if strings.HasSuffix(s, "</"+t+">") {
				tag = t
				break
			}
		}
		if tag == "" || blocks[tag] != nil {
			return s, blocks
		}
		open := "<" + tag + ">"
		i := strings.LastIndex(s, open)
		if i < 0 || (i > 0 && s[i-1] != '\n') {
			return s, blocks
		}
		body := strings.TrimSuffix(s[i+len(open):], "</"+tag+">")
		blocks[tag] = append([]string{}, strings.Split(strings.Trim(body, "\n"), "\n")...)
		s = strings.TrimRight(s[:i], " \t\r\n")
	}
}

// StripLedger removes the ledger blocks that end summary (see trailingBlocks).
func StripLedger(summary string) string {
	rest, _ := trailingBlocks(summary)
	return rest
}

// LedgerFromSummary reads back the ledger blocks that end a stored summary, for compactions
// stored without the structured ledger (imported ones). ok is false when there are none.
func LedgerFromSummary(summary string) (l Ledger, ok bool) {
	_, blocks := trailingBlocks(summary)
	if len(blocks) == 0 {
		return Ledger{}, false
	}
	items := func(tag string) []string {
		var out []string
		for _, line := range blocks[tag] {
			if t, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok && t != "" {
				out = append(out, t)
			}
		}
		return out
	}
	for _, t := range items(TagConstraints) {
		l.Constraints = append(l.Constraints, LedgerNote{Text: t})
	}
	for _, t := range items(TagValues) {
		t, sup := strings.CutPrefix(t, "(superseded) ")
		l.Values = append(l.Values, LedgerNote{Text: t, Superseded: sup})
	}
	for _, t := range items(TagCommands) {
		head, cmd, found := strings.Cut(t, ": ")
		if !found {
			continue
		}
		c := LedgerCommand{Command: cmd, Runs: 1}
		status, runs, _ := strings.Cut(head, " (")
		c.Status = status
		if n, err := strconv.Atoi(strings.TrimSuffix(runs, " runs)")); err == nil {
			c.Runs = n
		}
		if c.Status == StatusOK || c.Status == StatusFailed {
			l.Commands = append(l.Commands, c)
		}
	}
	source := ""
	for _, line := range blocks[TagErrors] {
		line = strings.TrimSpace(line)
		if src, ok := strings.CutPrefix(line, "from "); ok && strings.HasSuffix(src, ":") {
			source = strings.TrimSuffix(src, ":")
			continue
		}
		t, ok := strings.CutPrefix(line, "- ")
		if !ok {
			continue
		}
		status, text, found := strings.Cut(t, ": ")
		if found && (status == StatusOpen || status == StatusResolved) {
			l.Errors = append(l.Errors, LedgerError{Status: status, Error: text, Source: source})
		}
	}
	for _, line := range blocks[TagDropped] {
		for _, part := range strings.Split(line, ",") {
			name, n, _ := strings.Cut(strings.TrimSpace(part), " ")
			v, err := strconv.Atoi(n)
			if err != nil {
				continue
			}
			switch name {
			case "constraints":
				l.Dropped.Constraints = v
			case "values":
				l.Dropped.Values = v
			case "commands":
				l.Dropped.Commands = v
			case "errors":
				l.Dropped.Errors = v
			}
		}
	}
	return l, true
}
