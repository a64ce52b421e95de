package fileops

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Sets accumulates read and modified paths across messages and compactions.
// The zero value is an empty set, ready to use. Paths are stored as given (Extractor output is
// already normalized). Sets is not safe for concurrent use.
type Sets struct {
	read, modified map[string]struct{}
}

// Add records ops.
func (s *Sets) Add(ops ...FileOp) {
	for _, o := range ops {
		switch o.Op {
		case Read:
			s.addRead(o.Path)
		case Modify:
			s.addModified(o.Path)
		}
	}
}

// AddLists merges previously stored lists (read, modified), as carried by a compaction.
func (s *Sets) AddLists(read, modified []string) {
	for _, p := range read {
		s.addRead(p)
	}
	for _, p := range modified {
		s.addModified(p)
	}
}

func (s *Sets) addRead(p string) {
	if !listable(p) {
		return
	}
	if s.read == nil {
		s.read = make(map[string]struct{})
	}
	s.read[p] = struct{}{}
}

func (s *Sets) addModified(p string) {
	if !listable(p) {
		return
	}
	if s.modified == nil {
		s.modified = make(map[string]struct{})
	}
	s.modified[p] = struct{}{}
}

// listable reports whether p can appear in a one-path-per-line list.
func listable(p string) bool {
	return strings.TrimSpace(p) != "" && !strings.ContainsAny(p, "\n\r\x00")
}

// Lists returns sorted read paths (minus modified ones) and sorted modified paths.
// Both are non-nil (empty when nothing was recorded), so they encode as JSON [] rather than null.
func (s *Sets) Lists() (read, modified []string) {
	read = make([]string, 0, len(s.read))
	for p := range s.read {
		if _, m := s.modified[p]; !m {
			read = append(read, p)
		}
	}
	modified = make([]string, 0, len(s.modified))
	for p := range s.modified {
		modified = append(modified, p)
	}
	slices.Sort(read)
	slices.Sort(modified)
	return read, modified
}

// Len returns the number of distinct paths recorded (read-only plus modified).
func (s *Sets) Len() int {
	n := len(s.modified)
	for p := range s.read {
		if _, m := s.modified[p]; !m {
			n++
		}
	}
	return n
}

// Tag names of the blocks appended to summaries.
const (
	readOpen      = "<read-files>"
	readClose     = "</read-files>"
	modifiedOpen  = "<modified-files>"
	modifiedClose = "</modified-files>"
)

// AppendTags returns summary followed by a blank line and the <read-files> and
// <modified-files> blocks (one path per line; empty lists omitted). Tags already present at
// the end of summary (echoed by a model) are stripped first.
//
// The exact format, the same as pi's:
//
//	<summary, trailing white space removed>
//	(blank line)
//	<read-files>
//	a.go
//	b.go
//	</read-files>
//	(blank line)
//	<modified-files>
//	c.go
//	</modified-files>
//
// There is no trailing newline. With an empty summary the result starts with the first tag;
// with both lists empty it is the stripped summary alone. Paths that cannot be listed (blank,
// or holding a line break) are skipped. AppendTags is idempotent:
// AppendTags(AppendTags(s, r, m), r, m) == AppendTags(s, r, m).
func AppendTags(summary string, read, modified []string) string {
	var b strings.Builder
	b.WriteString(StripTags(summary))
	block := func(open, close string, paths []string) {
		first := true
		for _, p := range paths {
			if !listable(p) {
				continue
			}
			if first {
				if b.Len() > 0 {
					b.WriteString("\n\n")
				}
				b.WriteString(open)
				first = false
			}
			b.WriteByte('\n')
			b.WriteString(p)
		}
		if !first {
			b.WriteByte('\n')
			b.WriteString(close)
		}
	}
	block(readOpen, readClose, read)
	block(modifiedOpen, modifiedClose, modified)
	return b.String()
}

// AppendTagsWithin is AppendTags with the blocks bounded to maxChars characters (<= 0: no
// bound): when the lists are longer, read-only paths are left out of the text first (the last
// in sorted order first), then modified ones, and omitted says how many. The caller keeps the
// complete lists elsewhere (a compaction stores them apart from the text) and should say so.
func AppendTagsWithin(summary string, read, modified []string, maxChars int) (out string, omitted int) {
	size := func(r, m []string) int { return utf8.RuneCountInString(AppendTags("", r, m)) }
	if maxChars <= 0 || size(read, modified) <= maxChars {
		return AppendTags(summary, read, modified), 0
	}
	r, m := slices.Clone(read), slices.Clone(modified)
	total := size(r, m)
	for len(r)+len(m) > 0 && total > maxChars {
		var p string
		emptied := false
		if len(r) > 0 {
			p, r = r[len(r)-1], r[:len(r)-1]
			emptied = len(r) == 0
		} else {
			p, m = m[len(m)-1], m[:len(m)-1]
			emptied = len(m) == 0
		}
		omitted++
		total -= utf8.RuneCountInString(p) + 1 // the path and its line break
		if emptied {
			total = size(r, m) // the block went with its last path
		}
	}
	return AppendTags(summary, r, m), omitted
}

// LedgerTags name the blocks the server appends after the file lists: the durable-facts
// ledger of package compaction (compaction.LedgerTags, which memory's tests keep equal).
// StripTags removes them together with the file blocks.
var LedgerTags = []string{"user-constraints", "user-values", "commands-run", "errors-seen", "facts-dropped"}

// serverTags are all the blocks the server appends to a summary.
var serverTags = append([]string{"read-files", "modified-files"}, LedgerTags...)

// StripTags removes the trailing blocks the server appends to a summary
// (<read-files>/<modified-files> and the ledger's blocks, see LedgerTags), however many and in
// whatever order (pi leaves duplicates when a model echoes them), together with the white
// space around them. Blocks followed by other text are left alone: they are part of what the
// model wrote. An opening tag must start a line.
func StripTags(summary string) string {
	s := strings.TrimRight(summary, " \t\r\n")
	for {
		open := ""
		for _, t := range serverTags {
			if strings.HasSuffix(s, "</"+t+">") {
				open = "<" + t + ">"
				break
			}
		}
		if open == "" {
			return s
		}
		i := strings.LastIndex(s, open)
		if i < 0 || (i > 0 && s[i-1] != '\n') {
			return s
		}
		s = strings.TrimRight(s[:i], " \t\r\n")
	}
}

// CleanSummary prepares text a summarizer wrote for the server's blocks: StripTags, then every
// remaining line that is exactly an opening or closing server tag is removed. The blocks that
// end a stored summary are then always the ones the server appended: a summary cannot forge
// or duplicate them, wherever it puts the tags.
func CleanSummary(text string) string {
	s := StripTags(text)
	if !strings.Contains(s, "<") {
		return s
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "<") && strings.HasSuffix(t, ">") &&
			slices.Contains(serverTags, strings.TrimPrefix(strings.Trim(t, "<>"), "/")) {
			continue
		}
		out = append(out, l)
	}
	return strings.TrimRight(strings.Join(out, "\n"), " \t\r\n")
}
