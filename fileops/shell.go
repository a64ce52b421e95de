package fileops

import (
	"path"
	"regexp"
	"strings"
)

// Shell heuristics. A shell call counts as a read only when its meaning is certain from the
// text alone: an optional chain of `cd DIR &&`, then a reader (cat, head, tail, sed -n with a
// print-only script, nl, less, more) naming files, optionally piped into read-only filters.
// Anything a shell would expand or redirect ($, `, globs, braces, <, >, ;, ||, a lone &,
// newlines, comments) makes the call ambiguous and it yields nothing: a missed read costs a
// line in a summary, a wrong one misleads the next session.

// maxUnwrap bounds nested `bash -lc "bash -lc …"` wrappers.
const maxUnwrap = 3

func (x *Extractor) appendShell(ops []FileOp, argv []string, script, dir, wd string) []FileOp {
	for range maxUnwrap {
		if argv != nil {
			if len(argv) == 2 && isApplyPatch(path.Base(argv[0])) {
				return appendPatch(ops, argv[1], dir, wd)
			}
			if s, ok := unwrapShell(argv); ok {
				argv, script = nil, s
				continue
			}
			if x.NoShell {
				return ops
			}
			// An argv array is executed without a shell: nothing is expanded.
			files, ok := reader(argv)
			if !ok {
				return ops
			}
			return appendReads(ops, files, dir, wd)
		}
		if cd, ok := heredocPatch(script); ok {
			return appendPatch(ops, script, resolveDir(dir, cd), wd)
		}
		toks, ok := lex(strings.TrimSpace(script))
		if !ok || len(toks) == 0 {
			return ops
		}
		if words, simple := plainWords(toks); simple {
			if s, ok := unwrapShell(words); ok {
				script = s
				continue
			}
		}
		if x.NoShell {
			return ops
		}
		files, cd, ok := parseReadCommand(toks, dir)
		if !ok {
			return ops
		}
		return appendReads(ops, files, cd, wd)
	}
	return ops
}

func appendReads(ops []FileOp, files []string, dir, wd string) []FileOp {
	for _, f := range files {
		ops = appendPath(ops, f, Read, dir, wd)
	}
	return ops
}

// unwrapShell returns the script of `bash -lc SCRIPT` (also sh, zsh, dash; -c with -l, -i,
// -e, -x, -u in any grouping).
func unwrapShell(argv []string) (string, bool) {
	if len(argv) < 3 {
		return "", false
	}
	switch path.Base(argv[0]) {
	case "bash", "sh", "zsh", "dash":
	default:
		return "", false
	}
	for i := 1; i < len(argv); i++ {
		f := argv[i]
		if len(f) < 2 || f[0] != '-' || strings.Trim(f[1:], "lciexu") != "" {
			return "", false
		}
		if strings.IndexByte(f, 'c') >= 0 {
			if i+1 < len(argv) {
				return argv[i+1], true
			}
			return "", false
		}
	}
	return "", false
}

// heredocPatch reports whether script runs apply_patch (Codex writes it as
// `apply_patch <<'EOF'` heredoc, possibly after `cd DIR &&` or inside `bash -lc "…"`), and the
// directory it runs in ("" = unchanged).
func heredocPatch(script string) (dir string, ok bool) {
	i := strings.Index(script, "*** Begin Patch")
	if i < 0 {
		return "", false
	}
	prefix := script[:i]
	if strings.Count(strings.TrimRight(prefix, " \t\r\n\"'"), "\n") > 0 {
		return "", false
	}
	f := strings.Fields(prefix)
	if len(f) >= 2 && (f[0] == "bash" || f[0] == "sh" || f[0] == "zsh") && strings.HasPrefix(f[1], "-") && strings.Contains(f[1], "c") {
		f = f[2:]
		if len(f) > 0 {
			f[0] = strings.TrimLeft(f[0], "\"'")
		}
	}
	if len(f) >= 3 && f[0] == "cd" && f[2] == "&&" {
		dir = strings.Trim(f[1], "\"'")
		f = f[3:]
	}
	if len(f) == 0 {
		return "", false
	}
	name := f[0]
	if j := strings.Index(name, "<<"); j >= 0 {
		name = name[:j]
	}
	if !isApplyPatch(path.Base(name)) {
		return "", false
	}
	return dir, true
}

// shTok is a word or an operator ("|" or "&&") of a simple shell command line.
type shTok struct {
	word string
	op   string
}

// lex splits a command line into words and the two operators it understands. It fails on
// anything whose meaning depends on expansion, redirection or further commands.
func lex(s string) ([]shTok, bool) {
	var (
		toks   []shTok
		b      strings.Builder
		inWord bool
	)
	flush := func() {
		if inWord {
			toks = append(toks, shTok{word: b.String()})
			b.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t':
			flush()
		case '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
				inWord = true
			}
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch s[i] {
				case '$', '`':
					return nil, false
				case '\\':
					if i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
						i++
						if s[i] != '\n' {
							b.WriteByte(s[i])
						}
					} else {
						b.WriteByte('\\')
					}
				default:
					b.WriteByte(s[i])
				}
			}
			if i >= len(s) {
				return nil, false
			}
		case '|':
			if i+1 < len(s) && (s[i+1] == '|' || s[i+1] == '&') {
				return nil, false
			}
			flush()
			toks = append(toks, shTok{op: "|"})
		case '&':
			if i+1 >= len(s) || s[i+1] != '&' {
				return nil, false
			}
			i++
			flush()
			toks = append(toks, shTok{op: "&&"})
		case '#':
			if !inWord {
				return nil, false
			}
			b.WriteByte(c)
		case '\n', '\r', ';', '<', '>', '(', ')', '`', '$', '*', '?', '[', ']', '{', '}', '!':
			return nil, false
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return toks, true
}

// plainWords returns the words of toks when it holds no operator.
func plainWords(toks []shTok) ([]string, bool) {
	words := make([]string, 0, len(toks))
	for _, t := range toks {
		if t.op != "" {
			return nil, false
		}
		words = append(words, t.word)
	}
	return words, true
}

// parseReadCommand accepts `[cd DIR &&]... reader FILES [| filter]...` and returns the files
// and the directory they are relative to.
func parseReadCommand(toks []shTok, wd string) (files []string, dir string, ok bool) {
	var segs [][]shTok
	start := 0
	for i, t := range toks {
		if t.op == "&&" {
			segs = append(segs, toks[start:i])
			start = i + 1
		}
	}
	segs = append(segs, toks[start:])
	dir = wd
	for _, seg := range segs[:len(segs)-1] {
		w, simple := plainWords(seg)
		if !simple || len(w) != 2 || w[0] != "cd" || w[1] == "-" || strings.HasPrefix(w[1], "-") {
			return nil, "", false
		}
		dir = resolveDir(dir, w[1])
	}
	var stages [][]string
	var cur []string
	for _, t := range segs[len(segs)-1] {
		if t.op == "|" {
			if len(cur) == 0 {
				return nil, "", false
			}
			stages = append(stages, cur)
			cur = nil
			continue
		}
		cur = append(cur, t.word)
	}
	if len(cur) == 0 {
		return nil, "", false
	}
	stages = append(stages, cur)
	files, ok = reader(stages[0])
	if !ok {
		return nil, "", false
	}
	for _, st := range stages[1:] {
		if !filter(st) {
			return nil, "", false
		}
	}
	return files, dir, true
}

var sedPrint = regexp.MustCompile(`^(?:(?:\d+|\$)(?:,(?:\d+|\$|\+\d+))?|/[^/]*/(?:,(?:/[^/]*/|\d+|\$))?)?p$`)

// reader returns the files a reading command names; ok is false when argv is not one of the
// recognised readers or uses an option whose effect is unknown here.
func reader(argv []string) (files []string, ok bool) {
	if len(argv) == 0 {
		return nil, false
	}
	args := argv[1:]
	switch path.Base(argv[0]) {
	case "cat":
		files, ok = operands(args, func(f string) (int, bool) {
			return 0, f == "--number" || f == "--show-all" || strings.Trim(f[1:], "AbeEnstTuv") == ""
		})
	case "head", "tail":
		files, ok = operands(args, headTailFlag)
	case "nl":
		files, ok = operands(args, func(f string) (int, bool) {
			if len(f) == 2 && strings.IndexByte("bdfhinsvwl", f[1]) >= 0 {
				return 1, true
			}
			return 0, len(f) > 2 && strings.IndexByte("bdfhinsvwl", f[1]) >= 0 || f == "-p"
		})
	case "less", "more":
		files, ok = operands(args, func(f string) (int, bool) {
			return 0, len(f) == 2 && strings.IndexByte("NRSFXi", f[1]) >= 0
		})
	case "sed":
		files, ok = sedFiles(args)
	default:
		return nil, false
	}
	if !ok || len(files) == 0 {
		return nil, false
	}
	for _, f := range files {
		if f == "-" {
			return nil, false
		}
	}
	return files, true
}

// operands walks args, letting flag decide on each option (how many following words it takes
// as values, and whether it is known), and returns the operands.
func operands(args []string, flag func(string) (int, bool)) ([]string, bool) {
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(files, args[i+1:]...), true
		}
		if len(a) > 1 && a[0] == '-' {
			n, ok := flag(a)
			if !ok || i+n >= len(args) {
				return nil, false
			}
			i += n
			continue
		}
		files = append(files, a)
	}
	return files, true
}

func headTailFlag(f string) (int, bool) {
	switch {
	case f == "-n" || f == "-c":
		return 1, true
	case f == "-q" || f == "-v" || f == "-f" || f == "-F":
		return 0, true
	case strings.HasPrefix(f, "--lines=") || strings.HasPrefix(f, "--bytes="):
		return 0, true
	case (strings.HasPrefix(f, "-n") || strings.HasPrefix(f, "-c")) && isCount(f[2:]):
		return 0, true
	case isCount(f[1:]):
		return 0, true
	}
	return 0, false
}

func isCount(s string) bool {
	s = strings.TrimPrefix(s, "+")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// sedFiles accepts only `sed -n` with print-only scripts; -i and scripts with other commands
// (w, s///w, e) could write or run things.
func sedFiles(args []string) ([]string, bool) {
	quiet := false
	var scripts, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" || a == "--quiet" || a == "--silent":
			quiet = true
		case a == "-E" || a == "-r" || a == "-s" || a == "-nE" || a == "-En":
			quiet = quiet || strings.Contains(a, "n")
		case a == "-e":
			if i+1 >= len(args) {
				return nil, false
			}
			i++
			scripts = append(scripts, args[i])
		case a == "--":
			rest = append(rest, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			return nil, false
		default:
			rest = append(rest, a)
		}
	}
	if !quiet {
		return nil, false
	}
	if len(scripts) == 0 {
		if len(rest) == 0 {
			return nil, false
		}
		scripts, rest = rest[:1], rest[1:]
	}
	for _, sc := range scripts {
		for _, part := range strings.Split(sc, ";") {
			if !sedPrint.MatchString(strings.ReplaceAll(part, " ", "")) {
				return nil, false
			}
		}
	}
	return rest, true
}

// filter reports whether argv only transforms its input on stdout.
func filter(argv []string) bool {
	switch path.Base(argv[0]) {
	case "head", "tail", "grep", "egrep", "fgrep", "rg", "wc", "cut", "uniq", "nl", "cat", "tr", "less", "more", "column":
		return true
	case "sort":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "--output") {
				return false
			}
		}
		return true
	case "sed":
		_, ok := sedFiles(append(argv[1:len(argv):len(argv)], "-"))
		return ok
	}
	return false
}
