package main

// redact: apply today's redaction to everything the store already holds.

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/sessionmem/sessionmem/memory"
)

const redactHelp = `Usage: sessionmem redact [--dry-run] [--json]

Apply the current redaction rules (and SESSIONMEM_REDACT_PATTERNS) to everything the store
already holds, and rewrite what they change: every record of every session (message text
and ids, tool calls and output, summaries, file lists, every name a session ever had, model
changes), session headers (working_dir), the listing index (only each session's current line
is kept) and the import checkpoints under <store>/imports. Run it after upgrading sessionmem
or adding a pattern: what is written from now on is redacted anyway, this cleans what older
versions or rules let through. Each session is rewritten atomically under its lock, so it is
safe while servers and hooks use the store. Running it again changes nothing.

Flags:
  --dry-run     only report what would be rewritten
  --json        print the report as JSON
  --store DIR   store directory (default $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem,
                else ~/.local/share/sessionmem)
`

func redactCommand() command {
	return command{name: "redact", summary: "re-apply redaction to everything already stored", run: runRedact}
}

// redactReport is what redact prints.
type redactReport struct {
	Sessions    int               `json:"sessions"`
	Rewritten   []string          `json:"rewritten"`
	Failed      map[string]string `json:"failed"`
	ImportState int               `json:"import_state_rewritten"`
	DryRun      bool              `json:"dry_run"`
}

func runRedact(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("redact", redactHelp)
	dry := c.Bool("dry-run", false, "")
	asJSON := c.Bool("json", false, "")
	pos, err := c.parse(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	if len(pos) > 0 {
		return c.usageError(e, "unexpected argument %q", pos[0])
	}
	cs, err := openCLIStore(e, *c.store, openOptions{})
	if err != nil {
		return err
	}
	defer cs.close(e)
	prog := newProgress(e)
	done, rewritten := 0, 0
	rep, n, err := redactStored(ctx, cs.svc, cs.dir, cs.red, *dry, func(_ string, changed bool, err error) {
		done++
		if changed && err == nil {
			rewritten++
		}
		prog.update("redacting sessions", done, done)
	})
	prog.done()
	if ierr := interrupted(ctx, "redact interrupted after checking %s (%s). Run it again to finish; "+
		"what is already redacted is left as it is.", plural(done, "session"), redactedSoFar(rewritten, *dry)); ierr != nil {
		return ierr
	}
	if errors.Is(err, memory.ErrCannotRewrite) {
		return fmt.Errorf("this store cannot rewrite sessions in place; export and import them instead")
	}
	if err != nil {
		return err
	}
	out := redactReport{Sessions: rep.Sessions, Rewritten: rep.Changed, Failed: map[string]string{}, ImportState: n, DryRun: *dry}
	if out.Rewritten == nil {
		out.Rewritten = []string{}
	}
	for id, err := range rep.Failed {
		out.Failed[id] = cs.svc.RedactText(err.Error())
	}
	if *asJSON {
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		verb := "rewrote"
		if *dry {
			verb = "would rewrite"
		}
		for _, id := range out.Rewritten {
			fmt.Fprintf(e.stdout, "  %s\n", id)
		}
		ids := make([]string, 0, len(out.Failed))
		for id := range out.Failed {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			fmt.Fprintf(e.stderr, "sessionmem redact: %s\n", aboutSession(id, errors.New(out.Failed[id])))
		}
		fmt.Fprintf(e.stdout, "Checked %s: %s %s, %d failed; %s %s.\n", plural(out.Sessions, "session"), verb,
			plural(len(out.Rewritten), "session"), len(out.Failed), verb, plural(n, "import checkpoint"))
	}
	if len(out.Failed) > 0 {
		return errors.New("some sessions could not be redacted (see above); run 'sessionmem verify'")
	}
	return nil
}

// redactedSoFar words how many sessions an interrupted redact rewrote.
func redactedSoFar(n int, dry bool) string {
	if dry {
		return "a dry run: nothing was rewritten"
	}
	return plural(n, "session") + " rewritten, each one whole"
}
