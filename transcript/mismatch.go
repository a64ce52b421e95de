package transcript

import (
	"fmt"
	"io"
	"os"
)

// FormatMismatchError reports a file given as one format that holds no line of it: a Claude
// Code transcript passed as a Codex rollout, say. Every reader skips the lines it does not
// know (formats grow new kinds of lines), so without this check such a file would import as
// nothing and look unchanged.
type FormatMismatchError struct {
	Path   string
	Format Format // the format the file was given as
	Guess  Format // the format Detect recognizes in it; FormatAuto when none
}

// Summary says what is wrong without the guess: "PATH does not look like a Codex transcript
// (expected ...)". The command line adds its own advice (the flag to use).
func (e *FormatMismatchError) Summary() string {
	return fmt.Sprintf("%s does not look like a %s transcript (expected %s)", e.Path, FormatTitle(e.Format), expectedLines(e.Format))
}

func (e *FormatMismatchError) Error() string {
	if e.Guess == FormatAuto {
		return e.Summary()
	}
	return fmt.Sprintf("%s; it looks like a %s transcript", e.Summary(), FormatTitle(e.Guess))
}

// Unwrap makes the error an ErrUnknownFormat too: the file is not in a format it was said to be.
func (e *FormatMismatchError) Unwrap() error { return ErrUnknownFormat }

// FormatTitle is a format's name for people: "Claude Code", "Codex", "pi".
func FormatTitle(f Format) string {
	switch f {
	case FormatClaudeCode:
		return "Claude Code"
	case FormatCodex:
		return "Codex"
	case FormatPi:
		return "pi"
	case FormatSessionmem:
		return "sessionmem export"
	}
	return string(f)
}

// expectedLines describes what a format's lines look like, for FormatMismatchError.
func expectedLines(f Format) string {
	switch f {
	case FormatClaudeCode:
		return `JSON lines with a "sessionId" and a "type" such as user, assistant or summary`
	case FormatCodex:
		return `JSON lines with a "type" such as session_meta or response_item and a "payload"`
	case FormatPi:
		return `a "type":"session" line with the working directory, then "type":"message" lines`
	case FormatSessionmem:
		return `a "type":"sessionmem_export" header line, then message lines`
	}
	return "lines of that format"
}

// mismatch returns the FormatMismatchError of path given as format, with Detect's guess.
func mismatch(path string, format Format) *FormatMismatchError {
	e := &FormatMismatchError{Path: path, Format: format}
	if g, err := Detect(path); err == nil && g != format {
		e.Guess = g
	}
	return e
}

// mismatched reports whether a parse from the start of a file (st) shows a file of another
// format: lines to judge by, none of them the reader's.
func mismatched(st Stats) bool { return st.Recognized == 0 && st.Foreign() > 0 }

// checkBytes is how much of a file CheckFormat reads: enough for the first lines of every
// format, however long a first prompt.
const checkBytes = 1 << 20

// CheckFormat reads the start of path with format's reader and returns a
// *FormatMismatchError when it holds complete lines but none of that format. It returns nil
// when a line is of the format, when the start holds no complete line to judge by (the
// import itself then checks the whole file), for FormatAuto, and when the file cannot be read
// (the import reports that). It writes nothing, so a caller can check files before it opens
// a store for them.
func CheckFormat(path string, format Format) error {
	if format == FormatAuto {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	_, st, err := Parse(io.LimitReader(f, checkBytes), format, ParseOptions{Path: path})
	if err != nil || !mismatched(st) {
		return nil
	}
	return mismatch(path, format)
}
