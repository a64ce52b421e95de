package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

const pruneHelp = `Usage: sessionmem prune [--max-sessions N] [--max-age D] [--protect D] [--dry-run] [--yes]

Apply a retention policy: delete the sessions beyond the N most recently updated, and those
not updated for longer than D. Sessions updated within --protect (default 1h) count as in
use and are never deleted, nor is a session another process is writing at that moment.

On a terminal prune lists what it would delete and asks; when stdin is not a terminal
(scripts, cron) --yes is required unless --dry-run.

Without --max-sessions or --max-age, prune takes that limit from SESSIONMEM_MAX_SESSIONS or
SESSIONMEM_MAX_AGE, the retention serve applies (it says so on stderr); a flag wins over its
variable (--max-age 0 lifts the variable's limit).

Flags:
  --max-sessions N   keep at most N sessions (0: no limit; default $SESSIONMEM_MAX_SESSIONS)
  --max-age D        delete sessions idle for longer than D: 90d, 12h, 2h30m (0: no limit;
                     default $SESSIONMEM_MAX_AGE)
  --protect D        never delete sessions updated within D (default 1h)
  --dry-run          only list what would be deleted
  --yes              do not ask
  --store DIR|URL    store directory or PostgreSQL URL (postgres://...) (default
                     $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem, else
                     ~/.local/share/sessionmem)

Examples:
  sessionmem prune --max-age 90d --dry-run
  sessionmem prune --max-sessions 500 --max-age 180d --yes
`

func pruneCommand() command {
	return command{name: "prune", summary: "delete old sessions by count and age (retention)", run: runPrune}
}

// dayDuration is a time.Duration flag that also accepts whole days ("90d").
type dayDuration struct{ d time.Duration }

func (v *dayDuration) String() string { return v.d.String() }

func (v *dayDuration) Set(s string) error {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 {
			return fmt.Errorf("want a number of days such as 90d")
		}
		v.d = time.Duration(days) * 24 * time.Hour
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 90d, 12h or 30m")
	}
	v.d = d
	return nil
}

func runPrune(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("prune", pruneHelp)
	maxSessions := c.Int("max-sessions", 0, "")
	var maxAge, protect dayDuration
	protect.d = memory.DefaultRetentionProtect
	c.Var(&maxAge, "max-age", "")
	c.Var(&protect, "protect", "")
	dryRun := c.Bool("dry-run", false, "")
	yes := c.Bool("yes", false, "")
	pos, err := c.parse(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	switch {
	case len(pos) > 0:
		return c.usageError(e, "unexpected argument %q", pos[0])
	case *maxSessions < 0:
		return c.usageError(e, "--max-sessions must be 0 (no limit) or more, got %d", *maxSessions)
	}
	limits, err := pruneLimits(c, e, *maxSessions, maxAge.d)
	if err != nil {
		return err
	}
	interactive := isTerminal(e.stdin)
	if !*dryRun && !*yes && !interactive {
		return c.usageError(e, "stdin is not a terminal, so there is nobody to ask: pass --yes (or --dry-run to only list)")
	}
	cs, err := openCLIStore(e, *c.store, openOptions{})
	if err != nil {
		return err
	}
	defer cs.close(e)
	policy := memory.RetentionPolicy{MaxSessions: limits.MaxSessions, MaxAge: limits.MaxAge, Protect: protect.d, DryRun: true}
	plan, err := cs.svc.ApplyRetention(ctx, policy)
	if err != nil {
		if ierr := interrupted(ctx, "prune interrupted before deleting anything. Run the same command again."); ierr != nil {
			return ierr
		}
		return sessionError("", err)
	}
	if *dryRun || len(plan.Deleted) == 0 || !*yes {
		printRetention(e, plan, true)
	}
	if *dryRun || len(plan.Deleted) == 0 {
		return nil
	}
	if !*yes {
		ok, err := confirm(ctx, e, fmt.Sprintf("Delete these %d sessions? [y/N] ", len(plan.Deleted)), "prune")
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("nothing deleted (answer y to delete)")
		}
	}
	policy.DryRun = false
	res, err := cs.svc.ApplyRetention(ctx, policy)
	if err != nil {
		for _, id := range res.Deleted {
			fmt.Fprintf(e.stdout, "  %s\n", id)
		}
		if ierr := interrupted(ctx, "prune interrupted after deleting %d of %d sessions (each one wholly). "+
			"Run the same command again to finish.", len(res.Deleted), len(plan.Deleted)); ierr != nil {
			return ierr
		}
		return sessionError("", err)
	}
	printRetention(e, res, false)
	return nil
}

// pruneLimits are prune's limits, serve's retention settings: each from its flag when given
// (0 meaning no limit), else from SESSIONMEM_MAX_SESSIONS / SESSIONMEM_MAX_AGE, as serve reads
// them. The limits taken from the environment are said on stderr, since a prune run with only
// --yes deletes by them. No limit at all, or a bad value in the environment, is bad usage.
func pruneLimits(c *cliFlags, e *env, maxSessions int, maxAge time.Duration) (memory.RetentionPolicy, error) {
	var fromFlags [2]string
	if flagGiven(c.FlagSet, "max-sessions") {
		fromFlags[0] = strconv.Itoa(maxSessions)
	}
	if flagGiven(c.FlagSet, "max-age") {
		fromFlags[1] = maxAge.String()
	}
	var fromEnv []string
	pick := func(flagVal, env string) (string, string) {
		if flagVal != "" {
			return flagVal, ""
		}
		if v := e.getenv(env); v != "" {
			fromEnv = append(fromEnv, env+"="+v)
			return v, env
		}
		return "", env
	}
	p, err := loadRetention(pick, fromFlags[0], fromFlags[1])
	if err != nil {
		return p, c.usageError(e, "%v", err)
	}
	if !p.Enabled() {
		return p, c.usageError(e, "give a limit: --max-sessions N and/or --max-age D (or set %s / %s, as for serve)",
			envMaxSessions, envMaxAge)
	}
	if len(fromEnv) > 0 {
		fmt.Fprintf(e.stderr, "Limits from the environment: %s (a flag overrides each).\n", strings.Join(fromEnv, ", "))
	}
	return p, nil
}

func printRetention(e *env, r memory.RetentionResult, dry bool) {
	verb := "Deleted"
	if dry {
		verb = "Would delete"
	}
	for _, id := range r.Deleted {
		fmt.Fprintf(e.stdout, "  %s\n", id)
	}
	if len(r.Deleted) == 0 {
		fmt.Fprintf(e.stdout, "Nothing to delete; kept %d", r.Kept)
	} else {
		fmt.Fprintf(e.stdout, "%s %d sessions; kept %d", verb, len(r.Deleted), r.Kept)
	}
	if len(r.InUse) > 0 {
		fmt.Fprintf(e.stdout, " (%d over a limit but in use)", len(r.InUse))
	}
	fmt.Fprintln(e.stdout, ".")
}
