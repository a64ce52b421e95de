package compaction

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/message"
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
// backticks. What req.Ledger records (the user's constraints, commands, errors, values) is
// left out rather than repeated. Every section has a cap on its bullets, so merged summaries
// stop growing once full; the output is deterministic and at most ExtractiveMaxChars
// characters (less when req.MaxSummaryTokens asks for less).
func (Extractive) Summarize(ctx context.Context, req Request) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("extractive summary: %w", err)
	}
	maxChars := ExtractiveMaxChars
	if req.MaxSummaryTokens > 0 {
		maxChars = min(maxChars, 4*req.MaxSummaryTokens)
	}
	if turnPrefixOnly(req) {
		return extractTurnPrefix(parseWindow(req.TurnPrefix), req.Ledger, maxChars/2), nil
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
		p := parseForeign
		if isTemplateSummary(prev) {
			p = parseSummary
		}
		s = mergePrevious(p(prev), s, w)
	}
	s.leaveToLedger(req.Ledger)
	s.capSections()
	return renderSummary(s, maxChars), nil
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
	raw      string // user: the text blocks as written, harness markup included
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
		m := xmsg{role: gjson.Get(unsafeString(e.Message), "role").Str}
		idx := len(w.msgs)
		content := gjson.Get(unsafeString(e.Message), "content")
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
				if c := byID[b.Get(message.FieldToolCallID).Str]; c != nil && c.result == nil {
					c.result = r
					if c.shell && !r.isError && shellFailed(r.text) {
						r.isError = true
					}
				}
			}
			return true
		})
		if m.role == "user" {
			m.raw = strings.Join(texts, "\n")
		}
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

var shellFailRe = lazyRegexp(`(?m)^(FAIL\b|panic: |fatal: |error: |Error: |ERROR\b|npm ERR!|Traceback \(most recent call last\))|(?m)exit (code|status) [1-9]|Command exited with code [1-9]`)

// shellFailed spots failures in command output reported without is_error.
func shellFailed(out string) bool {
	// Literal pre-checks spare the regexp on the many outputs that cannot match.
	if !strings.Contains(out, "FAIL") && !strings.Contains(out, ": ") && !strings.Contains(out, "ERR") &&
		!strings.Contains(out, "Traceback") && !strings.Contains(out, "xit") {
		return false
	}
	return shellFailRe().MatchString(out)
}

var (
	// Harness markup in user text (Claude Code's reminders, command echoes) is not the user's words.
	markupOpen = lazyRegexp(`<([a-z]+(?:-[a-z]+)+)>`)
	ansiRe     = lazyRegexp("\x1b\\[[0-9;]*[A-Za-z]")
	codeFence  = lazyRegexp("(?s)```.*?(```|$)")
	spaceRe    = lazyRegexp(`\s+`)
	listMarker = lazyRegexp(`^(\s*([-*+•]|\d+[.)]|#+|>)\s+)+`)
)

func cleanText(s string) string {
	s = ansiRe().ReplaceAllString(s, "")
	// Drop <tag-name>…</tag-name> spans (hyphenated names are harness markup, not prose).
	for {
		loc := markupOpen().FindStringSubmatchIndex(s)
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
	text = codeFence().ReplaceAllString(text, "\n")
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && strings.ContainsRune("-*+•#>0123456789", []rune(line)[0]) {
			line = strings.TrimSpace(listMarker().ReplaceAllString(line, ""))
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
