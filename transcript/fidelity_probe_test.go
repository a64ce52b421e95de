package transcript

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/sessionmem/sessionmem/memory"
)

// Probe B of the fidelity benchmark: durable facts derived mechanically from the parsed
// messages by fixed rules, written from the definitions before the ledger existed and
// sharing no code with package compaction. It is deliberately blunt: it does not judge whether
// a fact still matters (a resolved error counts like an open one) and matches loosely, so its
// figure is an independent check on the hand-written probe A rather than a second copy of it.
//
// Rules (docs/FIDELITY.md gives them in prose):
//   - constraint: a sentence the user typed (not harness markup, not pasted output) holding
//     one of the rule words below; kept when three quarters of its content words occur in one
//     line of the summary.
//   - number: a colour (6 hex digits), percentage or dotted version in a line the user typed;
//     kept when the token occurs in the summary.
//   - command: the family (first two words, three for "npm run", "npx", "go test"…) of each
//     build, test, lint, run or release command the agent ran; kept when the family occurs in
//     the summary.
//   - error: each TypeScript error code with its file, and the first error line of each other
//     failed tool result; kept when one line of the summary holds the code and the file name,
//     or three quarters of the error line's words.
//   - file: each path the read/write/edit tool calls name (decodeFileCalls), kept when it is
//     a line of the summary (added by measure).

// fact is one probe B fact; msg is the index of the message it came from.
type fact struct {
	kind  string
	msg   int
	text  string   // constraint and error line: the words to find; number and command: the token
	words []string // content words for the loose match
	code  string   // error: TypeScript code, with file
	file  string
}

var (
	ruleWords = regexp.MustCompile(`(?i)\b(must|mustn't|never|always|don't|do not|should|shouldn't|make sure|prefer|avoid|no need|instead of)\b`)
	numberTok = regexp.MustCompile(`(?i)(#?\b[0-9a-f]{6}\b|\b\d+(\.\d+)?%|\bv?\d+\.\d+\.\d+\b)`)
	tsError   = regexp.MustCompile(`([\w./-]+)\(\d+,\d+\): error (TS\d+)`)
	errWord   = regexp.MustCompile(`(?i)(error|failed|fatal|not found|no such file|cannot|could not|exception)`)
	wordRe    = regexp.MustCompile(`[a-z0-9_]{4,}`)
	buildCmds = map[string]bool{"npm": true, "npx": true, "node": true, "pnpm": true, "yarn": true, "bun": true, "mix": true,
		"make": true, "go": true, "cargo": true, "tsc": true, "tsgo": true, "pytest": true, "python": true, "python3": true,
		"docker": true, "git": true}
	gitWrites = map[string]bool{"commit": true, "push": true, "tag": true, "checkout": true, "merge": true, "rebase": true, "stash": true}
)

// stopWords are left out of the content words a loose match looks for.
var stopWords = map[string]bool{"that": true, "this": true, "with": true, "from": true, "have": true, "what": true,
	"when": true, "then": true, "they": true, "them": true, "there": true, "their": true, "will": true, "would": true,
	"could": true, "should": true, "also": true, "just": true, "like": true, "into": true, "your": true, "some": true,
	"make": true, "sure": true, "need": true, "want": true, "think": true, "must": true, "never": true, "always": true}

func contentWords(s string) []string {
	var out []string
	for _, w := range wordRe.FindAllString(strings.ToLower(s), -1) {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// typedLines are the lines of a user message the user plausibly typed: no harness markup, no
// pasted stack traces, prompts or long output lines.
func typedLines(m memory.Message) []string {
	if m.Role != memory.RoleUser {
		return nil
	}
	var out []string
	for _, b := range m.Content {
		if b.Type != memory.BlockText {
			continue
		}
		t := strings.TrimSpace(b.Text)
		if strings.HasPrefix(t, "<") || strings.HasPrefix(t, "$ ") || strings.HasPrefix(t, "{") {
			continue // harness markup, a shell command the user ran, pasted JSON
		}
		for _, l := range strings.Split(t, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || len(l) > 200 || strings.HasPrefix(l, "at ") || strings.ContainsAny(l, "➜⏎") ||
				strings.HasPrefix(l, ">") || strings.HasPrefix(l, "+") || strings.HasPrefix(l, "/") {
				continue
			}
			out = append(out, l)
		}
	}
	return out
}

func splitSentences(line string) []string {
	var out []string
	start := 0
	for i := 0; i < len(line); i++ {
		if (line[i] == '.' || line[i] == '!' || line[i] == '?') && (i+1 == len(line) || line[i+1] == ' ') {
			out = append(out, strings.TrimSpace(line[start:i+1]))
			start = i + 1
		}
	}
	if s := strings.TrimSpace(line[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// commandFamily reduces a shell command to what identifies it: the last command of a cd-&&
// chain without output plumbing, cut to its first words.
func commandFamily(cmd string) string {
	cmd = strings.TrimSpace(strings.Split(cmd, "\n")[0])
	if i := strings.LastIndex(cmd, "&& "); i >= 0 && strings.HasPrefix(cmd, "cd ") {
		cmd = cmd[i+3:]
	}
	cmd = strings.ReplaceAll(cmd, "2>&1", "")
	if i := strings.IndexAny(cmd, "|;>"); i >= 0 {
		cmd = cmd[:i]
	}
	f := strings.Fields(cmd)
	if len(f) < 2 || !buildCmds[f[0]] {
		return ""
	}
	if f[0] == "git" && !gitWrites[f[1]] {
		return ""
	}
	n := 2
	if (f[1] == "run" || f[1] == "test" || f[1] == "exec" || f[0] == "npx") && len(f) > 2 && !strings.HasPrefix(f[2], "-") {
		n = 3
	}
	return strings.Join(f[:n], " ")
}

func resultText(bs []memory.Block) string {
	var parts []string
	for _, b := range bs {
		if b.Type == memory.BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// independentFacts derives probe B's facts (all kinds but file) from msgs.
func independentFacts(msgs []memory.Message) []fact {
	var out []fact
	seen := map[string]bool{}
	add := func(f fact) {
		key := f.kind + "\x00" + f.text + "\x00" + f.code + "\x00" + f.file
		if !seen[key] {
			seen[key] = true
			out = append(out, f)
		}
	}
	for i, m := range msgs {
		for _, l := range typedLines(m) {
			for _, s := range splitSentences(l) {
				if len(s) >= 12 && ruleWords.MatchString(s) {
					if w := contentWords(s); len(w) > 0 {
						add(fact{kind: "constraint", msg: i, text: s, words: w})
					}
				}
			}
			for _, tok := range numberTok.FindAllString(l, -1) {
				add(fact{kind: "number", msg: i, text: strings.ToLower(strings.TrimPrefix(tok, "#"))})
			}
		}
		for _, b := range m.Content {
			switch b.Type {
			case memory.BlockToolCall:
				var args struct {
					Command string `json:"command"`
				}
				if json.Unmarshal(b.Arguments, &args) == nil && args.Command != "" {
					if fam := commandFamily(args.Command); fam != "" {
						add(fact{kind: "command", msg: i, text: fam})
					}
				}
			case memory.BlockToolResult:
				text := resultText(b.Content)
				ts := tsError.FindAllStringSubmatch(text, -1)
				for _, e := range ts {
					file := e[1][strings.LastIndexByte(e[1], '/')+1:]
					add(fact{kind: "error", msg: i, code: e[2], file: file})
				}
				if len(ts) == 0 && b.IsError {
					for _, l := range strings.Split(text, "\n") {
						if errWord.MatchString(l) {
							if w := contentWords(l); len(w) >= 2 {
								add(fact{kind: "error", msg: i, text: strings.TrimSpace(l), words: w[:min(len(w), 6)]})
							}
							break
						}
					}
				}
			}
		}
	}
	return out
}

// keptIn reports whether summary still holds f.
func (f fact) keptIn(summary string) bool {
	lower := strings.ToLower(summary)
	switch f.kind {
	case "number", "command":
		return strings.Contains(normText(summary), f.text)
	case "error":
		if f.code != "" {
			for _, l := range strings.Split(lower, "\n") {
				if strings.Contains(l, strings.ToLower(f.code)) && strings.Contains(l, strings.ToLower(f.file)) {
					return true
				}
			}
			return false
		}
		return wordsInOneLine(lower, f.words)
	default:
		return wordsInOneLine(lower, f.words)
	}
}

// wordsInOneLine reports whether one line of text holds at least three quarters of words.
func wordsInOneLine(text string, words []string) bool {
	need := (3*len(words) + 3) / 4
	for _, l := range strings.Split(text, "\n") {
		n := 0
		for _, w := range words {
			if strings.Contains(l, w) {
				n++
			}
		}
		if n >= need {
			return true
		}
	}
	return false
}
