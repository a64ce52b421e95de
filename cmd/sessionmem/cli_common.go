package main

// Shared plumbing of the people-facing commands (cli_*.go): flag parsing that allows flags
// after positional arguments, the store directory and service set-up (the same environment as
// serve), error wording for a terminal, and the small formatting helpers the tables use.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/redact"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/postgres"
)

// Test seams. They are read-only outside tests (set once in a test init), so they carry no
// configuration and race with nothing.
var (
	// cliNow is the clock relative times are measured against.
	cliNow = time.Now
	// cliLocation is the zone absolute times are shown in.
	cliLocation = func() *time.Location { return time.Local }
	// isTerminal reports whether a stream is an interactive terminal (progress, prompts).
	isTerminal = fileIsTerminal
)

// fileIsTerminal reports whether v is an *os.File on a character device other than the null
// device (the standard library has no isatty; a terminal is the character device one meets
// in practice, /dev/null the one that is not a terminal).
func fileIsTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}

// cliFlags is a command's flag set plus the flags every store command shares.
type cliFlags struct {
	*flag.FlagSet
	name  string
	help  string
	store *string
}

// newCLIFlags returns the flag set of command name with --store registered. help is the full
// text --help prints.
func newCLIFlags(name, help string) *cliFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &cliFlags{FlagSet: fs, name: name, help: help}
	c.store = fs.String("store", "", "")
	return c
}

// parse parses args, allowing flags before and after positional arguments (a lone "--" ends
// the flags). It returns the positional arguments. For --help it prints the help to stdout and
// returns flag.ErrHelp; for a bad flag it prints the problem to stderr and returns errUsage.
func (c *cliFlags) parse(e *env, args []string) ([]string, error) {
	var pos []string
	for {
		if err := c.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(e.stdout, c.help)
				return nil, flag.ErrHelp
			}
			return nil, c.usageError(e, "%v", err)
		}
		rest := c.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError prints a usage problem and returns errUsage (exit code 2).
func (c *cliFlags) usageError(e *env, format string, a ...any) error {
	fmt.Fprintf(e.stderr, "sessionmem %s: %s\nRun 'sessionmem %s --help' for usage.\n", c.name, fmt.Sprintf(format, a...), c.name)
	return errUsage
}

// helpOrErr turns the parse result into the command's return value: --help is success.
func helpOrErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// cliStore is an open store and the service over it.
type cliStore struct {
	dir    string
	store  storage.Store
	svc    *memory.Service
	logger *slog.Logger
	red    *redact.Redactor
	llm    bool // an llm summarizer is configured
}

// openOptions choose what openCLIStore sets up beyond the basics.
type openOptions struct {
	// create makes a missing store directory (0700), or a database's tables, for the commands
	// that save (import, hook), as serve does. The others only read or change what is stored:
	// a missing store is an error for them, most often a mistyped --store, which must not leave
	// a directory, or sessionmem's tables in whatever database the URL names.
	create bool
	// llm builds the llm summarizer from SESSIONMEM_LLM_* (only compact needs it).
	llm bool
	// logHandler replaces the stderr log handler (verify collects storage's warnings).
	logHandler slog.Handler
}

// openCLIStore opens the store named by --store / the environment and builds the memory
// service with the same environment serve reads (redaction patterns, file-tool mapping, the
// llm summarizer). Logs go to stderr at warn level unless SESSIONMEM_LOG_LEVEL says otherwise.
//
// serve.go builds its service inline in runServe; this is the reusable equivalent for the
// one-shot commands.
func openCLIStore(e *env, storeFlag string, o openOptions) (*cliStore, error) {
	dir, err := resolveStore(storeFlag, e.getenv)
	if err != nil {
		return nil, err
	}
	if !o.create {
		if err := storeExists(dir); err != nil {
			return nil, err
		}
	}
	level := slog.LevelWarn
	if v := e.getenv(envLogLevel); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			return nil, &configError{Field: envLogLevel, Value: v, Msg: "want debug, info, warn or error"}
		}
	}
	var patterns []string
	if raw := e.getenv(envRedact); raw != "" {
		if err := json.Unmarshal([]byte(raw), &patterns); err != nil {
			return nil, &configError{Field: envRedact, Value: raw,
				Msg: `want a JSON array of regular expressions, e.g. ["corp-[0-9a-f]{32}"]`}
		}
	}
	red, err := redact.New(patterns)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envRedact, err)
	}
	h := o.logHandler
	if h == nil {
		h = slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level})
	}
	logger := slog.New(redact.NewHandler(h, red))
	opts := memory.Options{Logger: logger, Redact: red.String}
	if opts.FileMapping, err = fileMapping(e.getenv(envFileTools)); err != nil {
		return nil, err
	}
	cs := &cliStore{dir: dir, logger: logger, red: red}
	if o.llm {
		cfg, err := llmConfig(e.getenv)
		if err != nil {
			return nil, err
		}
		if cfg.URL != "" {
			if opts.LLM, err = compaction.NewLLM(cfg); err != nil {
				return nil, fmt.Errorf("llm summarizer: %w", err)
			}
			cs.llm = true
		}
	}
	st, err := openStore(context.Background(), dir, logger, o.create)
	if errors.Is(err, postgres.ErrNoStore) {
		return nil, fmt.Errorf("%w (nothing saved there yet, or a wrong --store / %s)", err, envStore)
	}
	if err != nil {
		return nil, err
	}
	cs.store = st
	cs.svc = memory.New(st, opts)
	return cs, nil
}

// storeExists checks that a local store's directory is there, for the commands that do not
// create it. A database URL is not checked here: opening it says whether it can be reached
// and whether it holds a store (openStore without create).
func storeExists(dir string) error {
	if isURLStore(dir) {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no store at %s (nothing saved yet, or a wrong --store / %s)", dir, envStore)
	case err == nil && !fi.IsDir():
		return fmt.Errorf("%s is not a store directory but a file (check --store / %s)", dir, envStore)
	case err == nil && !looksLikeStore(dir):
		return fmt.Errorf("%s is not a sessionmem store: it has files but no sessions directory (check --store / %s)", dir, envStore)
	}
	return nil // another error (permission): opening the store reports it
}

// looksLikeStore reports whether dir may be opened as a store by a command that does not
// create one: it is empty (an empty store), or it has the sessions directory or the index
// every store has from its first open on. Anything else (a project, a home directory named by a wrong --store)
// would get a store's files written into it, so it is refused. A directory that cannot be read
// is left to opening the store, which says why.
func looksLikeStore(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "sessions")); err == nil && fi.IsDir() {
		return true
	}
	if _, err := os.Stat(filepath.Join(dir, "index.jsonl")); err == nil {
		return true
	}
	f, err := os.Open(dir)
	if err != nil {
		return true
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && (err == nil || errors.Is(err, io.EOF))
}

// close closes the store; a failure to seal is reported, since it may mean lost durability.
func (c *cliStore) close(e *env) {
	c.svc.Close() // writes the state snapshots of long sessions this command read from their logs
	if err := c.store.Close(); err != nil {
		fmt.Fprintf(e.stderr, "sessionmem: %v\n", err)
	}
}

// sessionError rewords the service's errors for people at a terminal: the hints of the MCP
// tools name tools, the command line has commands.
func sessionError(id string, err error) error {
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return fmt.Errorf("no session %q; run 'sessionmem list' to see session ids", id)
	case errors.Is(err, memory.ErrInvalid):
		var me *memory.Error
		if errors.As(err, &me) {
			return fmt.Errorf("%s", me.Msg)
		}
	}
	if me := (*memory.Error)(nil); id != "" && errors.As(err, &me) && mentions(me.Msg, id) {
		// memory's error names the session and says what to do; a wrapper naming the session
		// again ("export ID: session ID is damaged ...") would only repeat it.
		return me
	}
	return err
}

// sessionDetail is msg, an error's text, for a line that names session id already ("ID:
// detail"). The store's errors start with the session they are about ("session ID: record at
// offset 843: ..."), and a layer that wraps one may name it again ("read source session ID:
// session ID: ..."): the leading mentions are dropped (the line makes them) and a repeated one
// is said once.
func sessionDetail(id, msg string) string {
	p := "session " + id + ": "
	for strings.HasPrefix(msg, p) {
		msg = msg[len(p):]
	}
	for strings.Contains(msg, p+p) {
		msg = strings.ReplaceAll(msg, p+p, p)
	}
	return msg
}

// aboutSession is err's text for a line about session id that does not name it yet:
// "session ID: detail", or the detail alone when it names the session itself ("session ID is
// damaged beyond automatic repair; ...").
func aboutSession(id string, err error) string {
	d := sessionDetail(id, err.Error())
	if mentions(d, id) {
		return d
	}
	return "session " + id + ": " + d
}

// mentions reports whether text holds session id as a whole id (s-1 is not in s-10).
func mentions(text, id string) bool {
	idRune := func(s string, i int) bool {
		if i < 0 || i >= len(s) {
			return false
		}
		c := s[i]
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	for off := 0; ; {
		i := strings.Index(text[off:], id)
		if i < 0 || id == "" {
			return false
		}
		i += off
		if !idRune(text, i-1) && !idRune(text, i+len(id)) {
			return true
		}
		off = i + 1
	}
}

// checkIDArg validates a session id argument before anything is opened.
// parseID parses the flags and the one session id argument of a command. After --help it
// returns flag.ErrHelp, which helpOrErr turns into success.
func (c *cliFlags) parseID(e *env, args []string) (string, error) {
	pos, err := c.parse(e, args)
	if err != nil {
		return "", err
	}
	return checkIDArg(c, e, pos)
}

func checkIDArg(c *cliFlags, e *env, pos []string) (string, error) {
	switch len(pos) {
	case 0:
		return "", c.usageError(e, "missing session id (see 'sessionmem list')")
	case 1:
	default:
		return "", c.usageError(e, "expected one session id, got %d arguments: %s", len(pos), strings.Join(pos, " "))
	}
	if !storage.ValidID(pos[0]) {
		return "", c.usageError(e, "%q is not a session id (ids use letters, digits, '.', '_' and '-')", clipRunes(pos[0], 80))
	}
	return pos[0], nil
}

// writeJSON writes v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// ago says how long before now t was, in one short word ("5m ago").
func ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < -time.Minute:
		return "in future"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 60*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	case d < 2*365*24*time.Hour:
		return fmt.Sprintf("%dmo ago", int(d/(30*24*time.Hour)))
	}
	return fmt.Sprintf("%dy ago", int(d/(365*24*time.Hour)))
}

// stamp formats t for people, in the local zone, to the minute.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(cliLocation()).Format("2006-01-02 15:04")
}

// stampSeconds formats t for people, in the local zone, to the second, with the zone.
func stampSeconds(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(cliLocation()).Format("2006-01-02 15:04:05 MST")
}

// compactCount formats a count with a k/M suffix (45210 → 45.2k).
func compactCount(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n)
	case n < 1_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + "k"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + "M"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// thousands formats n with thousands separators (45210 → 45,210).
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// byteSize formats a byte count in binary units (1536 → 1.5 KiB).
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// clean makes text from sessions safe to print on a terminal: escape sequences and other
// control characters (except newline and tab) and invisible or bidirectional formatting
// characters are dropped, so a transcript cannot drive the terminal or hide text.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if unsafeRune(r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return -1
		}
		return r
	}, s)
}

func unsafeRune(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	if unicode.IsControl(r) {
		return true
	}
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0xFEFF:
		return true
	}
	return false
}

// cleanLine cleans s, folds its whitespace runs to single spaces and cuts it to n runes.
func cleanLine(s string, n int) string {
	return clipRunes(strings.Join(strings.Fields(clean(s)), " "), n)
}

// clipRunes cuts s to at most n runes, marking a cut with "…".
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	i := 0
	for j := range s {
		if i == n-1 {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// progress prints a one-line, self-overwriting status on a terminal and nothing elsewhere.
type progress struct {
	w       io.Writer
	on      bool
	last    time.Time
	printed bool
}

func newProgress(e *env) *progress {
	return &progress{w: e.stderr, on: isTerminal(e.stderr)}
}

// update shows "label done/total" at most ten times a second.
func (p *progress) update(label string, done, total int) {
	if !p.on {
		return
	}
	now := time.Now()
	if done != total && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	fmt.Fprintf(p.w, "\r\x1b[K%s %d/%d", label, done, total)
	p.printed = true
}

// done clears the status line.
func (p *progress) done() {
	if p.on && p.printed {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.printed = false
	}
}

// plural formats a count and a noun ("1 message", "2 messages").
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return thousands(int64(n)) + " " + noun + "s"
}
