package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/transcript"
)

const importHelp = `Usage: sessionmem import --claude-code [PATH...] | --codex [PATH...] | --pi [PATH...] | --file FILE [FILE...]
                         [--watch [--interval 2s]]

Import other agents' transcripts into the store. Each transcript becomes one session whose id
is derived from the agent's own (cc-<uuid>, codex-<uuid>, pi-<uuid>), and every message gets
an id derived from the source, so importing again adds only what is new; the byte offset
reached in each file is remembered under <store>/imports (for a PostgreSQL store, under
$XDG_STATE_HOME/sessionmem/imports on this machine), so a re-import reads only the appended
part. Interrupted (Ctrl-C), an import says how far it got and exits 130; what it stored is
whole, and the same command run again continues where it stopped.

Sources (exactly one):
  --claude-code [PATH...]   Claude Code transcripts; default ~/.claude/projects
                            ($CLAUDE_CONFIG_DIR/projects)
  --codex [PATH...]         Codex CLI rollouts; default ~/.codex/sessions ($CODEX_HOME/sessions)
  --pi [PATH...]            pi sessions; default ~/.pi/agent/sessions
                            ($PI_CODING_AGENT_SESSION_DIR, $PI_CODING_AGENT_DIR/sessions)
  --file FILE [FILE...]     files of any supported format, detected from their first lines,
                            including 'sessionmem export' output
A PATH may be a file or a directory (searched for that agent's transcripts). A file that is
not that agent's transcript is refused (nothing is written for it), with the source to use.

Flags:
  --watch           keep running and import what is appended (new sessions included) until
                    interrupted (Ctrl-C)
  --interval D      how often --watch looks for changes (default 2s)
  --store DIR|URL   store directory or PostgreSQL URL (postgres://...) (default
                    $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem, else
                    ~/.local/share/sessionmem)

Examples:
  sessionmem import --claude-code
  sessionmem import --codex ~/.codex/sessions/2026/05
  sessionmem import --file session.jsonl
  sessionmem import --claude-code --watch --interval 5s
`

func importCommand() command {
	return command{name: "import", summary: "import Claude Code, Codex, pi or exported transcripts", run: runImport}
}

// errNotAllImported reports that some files failed; each failure was printed already.
var errNotAllImported = errors.New("some transcripts were not imported (see above)")

func runImport(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("import", importHelp)
	cc := c.Bool("claude-code", false, "")
	codex := c.Bool("codex", false, "")
	pi := c.Bool("pi", false, "")
	file := c.String("file", "", "")
	watch := c.Bool("watch", false, "")
	interval := c.Duration("interval", 2*time.Second, "")
	pos, err := c.parse(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	kind, picked := transcript.FormatAuto, 0
	for _, k := range []struct {
		on bool
		f  transcript.Format
	}{{*cc, transcript.FormatClaudeCode}, {*codex, transcript.FormatCodex}, {*pi, transcript.FormatPi}, {*file != "", transcript.FormatAuto}} {
		if k.on {
			kind = k.f
			picked++
		}
	}
	switch {
	case picked == 0:
		return c.usageError(e, "say what to import: --claude-code, --codex, --pi or --file FILE")
	case picked > 1:
		return c.usageError(e, "pass only one of --claude-code, --codex, --pi and --file")
	case *interval <= 0:
		return c.usageError(e, "--interval must be positive, got %s", *interval)
	}
	intervalSet := false
	c.Visit(func(f *flag.Flag) { intervalSet = intervalSet || f.Name == "interval" })
	if intervalSet && !*watch {
		return c.usageError(e, "--interval only applies with --watch")
	}
	paths := pos
	if *file != "" {
		paths = append([]string{*file}, pos...)
	}
	if len(paths) == 0 {
		root, err := transcript.DefaultRoot(kind)
		if err != nil {
			return err
		}
		if _, err := os.Stat(root); err != nil {
			return fmt.Errorf("no %s transcripts to import: %w; pass the directory or files as arguments", kind, err)
		}
		paths = []string{root}
	}
	if *watch {
		cs, err := openCLIStore(e, *c.store, openOptions{create: true})
		if err != nil {
			return err
		}
		defer cs.close(e)
		return watchImports(ctx, cs.importEnv(e), cs.importer(e), paths, *interval)
	}
	return importPaths(ctx, e, *c.store, kind, paths)
}

// importEnv is e with stdout behind the store's redactor: the report quotes transcript
// paths, which are the user's own but may hold anything.
func (c *cliStore) importEnv(e *env) *env {
	return &env{stdin: e.stdin, stdout: &redactWriter{w: e.stdout, r: c.red}, stderr: e.stderr, getenv: e.getenv}
}

// importer is the transcript importer into the store, with its checkpoints in the store's
// import state directory.
func (c *cliStore) importer(e *env) *transcript.Importer {
	return &transcript.Importer{Svc: c.svc, StateDir: importStateDir(c.dir, e.getenv)}
}

// importPaths imports the transcripts paths name (files, and directories searched for kind's
// transcripts). A file named on the command line that is not of kind (another agent's
// transcript) is refused before the store is opened, so nothing is written for it; one such
// file alone is the command's error, said with the importer to use.
func importPaths(ctx context.Context, e *env, storeFlag string, kind transcript.Format, paths []string) error {
	files, err := expandImportPaths(kind, paths)
	if err != nil {
		return err
	}
	var tot importTotals
	named := map[string]bool{}
	for _, p := range paths {
		named[p] = true
	}
	ok := files[:0:0]
	for _, f := range files {
		// Only the files named: those found in a directory were picked by kind's file names.
		var fm *transcript.FormatMismatchError
		if named[f] && errors.As(transcript.CheckFormat(f, kind), &fm) {
			if len(files) == 1 {
				return errors.New(mismatchAdvice(fm))
			}
			tot.add(e, transcript.ImportResult{Path: f}, fm)
			continue
		}
		ok = append(ok, f)
	}
	if len(ok) == 0 {
		tot.print(e, len(files))
		return errNotAllImported
	}
	cs, err := openCLIStore(e, storeFlag, openOptions{create: true})
	if err != nil {
		return err
	}
	defer cs.close(e)
	return importFiles(ctx, cs.importEnv(e), cs.importer(e), kind, ok, &tot, len(files))
}

// mismatchAdvice is what import says of a file that is not of the format it was given as:
// what was wrong, and the source flag to import it with.
func mismatchAdvice(fm *transcript.FormatMismatchError) string {
	switch fm.Guess {
	case transcript.FormatAuto:
		return fm.Summary() + "; it is not a transcript sessionmem imports (Claude Code, Codex, pi or a sessionmem export)"
	case transcript.FormatSessionmem:
		return fm.Summary() + "; it is a sessionmem export: try --file"
	}
	return fmt.Sprintf("%s; it looks like a %s transcript: try --%s", fm.Summary(), transcript.FormatTitle(fm.Guess), fm.Guess)
}

// importFiles imports files one by one, adding to tot (which may hold files refused before),
// and prints what each added and the totals of all the command's files. A signal stops it
// between files (or in the middle of one, whose import is then left for the next run): it
// reports what was imported, and running the same command again continues, since what is
// already stored is skipped.
func importFiles(ctx context.Context, e *env, im *transcript.Importer, kind transcript.Format, files []string, tot *importTotals, all int) error {
	prog := newProgress(e)
	done := 0
	for i, f := range files {
		if ctx.Err() != nil {
			break
		}
		prog.update("importing", i, len(files))
		res, err := im.ImportFile(ctx, f, kind)
		if err != nil && ctx.Err() != nil {
			break // stopped by the signal, not a failure of this file
		}
		if err != nil || res.Added > 0 {
			prog.done()
		}
		tot.add(e, res, err)
		done++
	}
	prog.done()
	if err := interrupted(ctx, "%s", tot.interruptedReport(all-len(files)+done, all)); err != nil {
		return err
	}
	tot.print(e, all)
	if tot.failed > 0 {
		return errNotAllImported
	}
	return nil
}

// expandImportPaths turns the arguments into files: directories are searched for the kind's
// transcripts (any supported format for --file).
func expandImportPaths(kind transcript.Format, paths []string) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s does not exist", p)
			}
			return nil, err
		}
		found := []string{p}
		if fi.IsDir() {
			if found, err = transcript.Discover(kind, p); err != nil {
				return nil, err
			}
		}
		for _, f := range found {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	return files, nil
}

// importTotals counts what an import run did.
type importTotals struct {
	added, created, changed, failed int
	sessions                        map[string]bool
}

// add prints one file's outcome when it did something and counts it.
func (t *importTotals) add(e *env, res transcript.ImportResult, err error) {
	var fm *transcript.FormatMismatchError
	switch {
	case errors.As(err, &fm):
		t.failed++
		fmt.Fprintf(e.stderr, "  failed  %s\n", mismatchAdvice(fm))
		return
	case errors.Is(err, transcript.ErrUnknownFormat):
		t.failed++
		fmt.Fprintf(e.stderr, "  failed  %s: not a transcript sessionmem imports (Claude Code, Codex, pi or a sessionmem export)\n", res.Path)
		return
	case err != nil:
		t.failed++
		// The importer's errors name the file; the line says it once.
		msg := err.Error()
		if !strings.Contains(msg, res.Path) {
			msg = res.Path + ": " + msg
		}
		fmt.Fprintf(e.stderr, "  failed  %s\n", msg)
		return
	}
	if res.Added == 0 {
		return
	}
	if t.sessions == nil {
		t.sessions = map[string]bool{}
	}
	t.sessions[res.SessionID] = true
	t.added += res.Added
	t.changed++
	note := ""
	if res.Created {
		t.created++
		note = " (new)"
	}
	if res.Pinned > 0 {
		note += fmt.Sprintf(" (%d pinned)", res.Pinned)
	}
	if res.Unpinned > 0 {
		note += fmt.Sprintf(" (%d more left unpinned: over the %d-token pinned limit)", res.Unpinned, memory.MaxPinnedTokens)
	}
	fmt.Fprintf(e.stdout, "  +%-6d %s%s  %s\n", res.Added, res.SessionID, note, res.Path)
}

// interruptedReport is what an import stopped by a signal after done of files says.
func (t *importTotals) interruptedReport(done, files int) string {
	stored := "nothing was stored yet"
	if t.added > 0 {
		stored = fmt.Sprintf("%s items in %s (%d new) were imported, and what is stored is complete",
			thousands(int64(t.added)), plural(len(t.sessions), "session"), t.created)
	}
	return fmt.Sprintf("import interrupted after %d of %d files: %s. Run the same command again to continue; "+
		"what is already imported is skipped.", done, files, stored)
}

func (t *importTotals) print(e *env, files int) {
	fmt.Fprintf(e.stdout, "Imported %s items into %d sessions (%d new) from %d of %d files; %d unchanged",
		thousands(int64(t.added)), len(t.sessions), t.created, t.changed, files, files-t.changed-t.failed)
	if t.failed > 0 {
		fmt.Fprintf(e.stdout, ", %d failed", t.failed)
	}
	fmt.Fprintln(e.stdout, ".")
}

// watchImports imports paths and then what is appended to them until ctx ends.
func watchImports(ctx context.Context, e *env, im *transcript.Importer, paths []string, interval time.Duration) error {
	fmt.Fprintf(e.stderr, "Watching %d path(s) every %s; Ctrl-C stops.\n", len(paths), interval)
	var tot importTotals
	err := im.Watch(ctx, paths, interval, func(res transcript.ImportResult, err error) {
		tot.add(e, res, err)
	})
	fmt.Fprintf(e.stdout, "Stopped watching: %s items added to %d sessions.\n", thousands(int64(tot.added)), len(tot.sessions))
	return err
}
