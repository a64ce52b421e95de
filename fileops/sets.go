package fileops

import (
	"slices"
	"strings"
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

// StripTags removes trailing <read-files>/<modified-files> blocks from a summary, however many
// and in whatever order (pi leaves duplicates when a model echoes them), together with the
// white space around them. Blocks followed by other text are left alone: they are part of what
// the model wrote. An opening tag must start a line.
func StripTags(summary string) string {
	s := strings.TrimRight(summary, " \t\r\n")
	for {
		var open string
		switch {
		case strings.HasSuffix(s, readClose):
			open = readOpen
		case strings.HasSuffix(s, modifiedClose):
			open = modifiedOpen
		default:
			return s
		}
		i := strings.LastIndex(s, open)
		if i < 0 || (i > 0 && s[i-1] != '\n') {
			return s
		}
		s = strings.TrimRight(s[:i], " \t\r\n")
	}
}
