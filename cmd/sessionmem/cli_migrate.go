package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/storecopy"
)

const migrateHelp = `Usage: sessionmem migrate --from DIR|URL --to DIR|URL

Copy every session of one store into another: a local directory into a PostgreSQL database,
a database into a directory, or between two of either. Each session keeps its id, creation
time, working directory, parent and metadata, and its records byte for byte with their
sequence numbers, so clients resume and continue the copies as if nothing had moved.

The copy is idempotent and resumable: run it again after an interruption (or after the source
received more messages) and it copies only what is missing, completing half-copied sessions.
A session that exists in both stores but is not the same one (another session under the
same id, or records that differ) is reported and left alone; migrate then exits 1.

Servers may keep running on the source meanwhile; stop them (or run migrate again) before
switching them to the destination, so the last messages are copied too.

Flags:
  --from DIR|URL   the store to copy from (it must exist: nothing is created there)
  --to DIR|URL     the store to copy into (a directory is created if missing; a database's
                   tables are created on first use)

Examples:
  sessionmem migrate --from ~/.local/share/sessionmem --to 'postgres://mem@db:5432/mem?sslmode=require'
  sessionmem migrate --from "$SESSIONMEM_STORE" --to ./backup-store
`

func migrateCommand() command {
	return command{name: "migrate", summary: "copy a store into another (directory or PostgreSQL), resumably", run: runMigrate}
}

func runMigrate(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("migrate", migrateHelp)
	from := c.String("from", "", "")
	to := c.String("to", "", "")
	pos, err := c.parse(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	switch {
	case len(pos) > 0:
		return c.usageError(e, "unexpected argument %q", pos[0])
	case *c.store != "":
		return c.usageError(e, "migrate takes --from and --to, not --store")
	case *from == "" || *to == "":
		return c.usageError(e, "pass both --from and --to (a directory or a postgres:// URL each)")
	}
	noEnv := func(k string) string {
		if k == envStore {
			return ""
		}
		return e.getenv(k)
	}
	src, err := resolveStore(*from, noEnv)
	if err != nil {
		return err
	}
	dst, err := resolveStore(*to, noEnv)
	if err != nil {
		return err
	}
	if src == dst {
		return c.usageError(e, "--from and --to name the same store")
	}
	// The source is only read: a wrong --from must not get a store written into it, neither
	// a local store's files into a directory of others nor sessionmem's tables into a
	// database (the copy would then say it copied 0 sessions, hiding the mistake).
	if !isURLStore(src) {
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			return fmt.Errorf("--from %s: not a store directory", src)
		}
		if !looksLikeStore(src) {
			return fmt.Errorf("--from %s: not a sessionmem store: it has files but no sessions directory", src)
		}
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srcStore, err := openStore(ctx, src, logger, false)
	if errors.Is(err, postgres.ErrNoStore) {
		return fmt.Errorf("--from: %w (nothing saved there yet, or a wrong --from URL)", err)
	}
	if err != nil {
		return err
	}
	defer closeStore(e, srcStore)
	dstStore, err := openStore(ctx, dst, logger, true)
	if err != nil {
		return err
	}
	defer closeStore(e, dstStore)

	prog := newProgress(e)
	opts := storecopy.Options{Key: memory.RecordKey, Barrier: memory.RecordBarrier,
		Progress: func(done, total int, _ string) { prog.update("copying sessions", done, total) }}
	res, err := storecopy.Copy(ctx, dstStore, srcStore, opts)
	prog.done()
	for _, f := range res.Failed {
		fmt.Fprintf(e.stdout, "NOT COPIED  %s: %s\n", f.ID, sessionDetail(f.ID, f.Err.Error()))
	}
	fmt.Fprintf(e.stdout, "%s → %s: %s, %s copied (%d created, %d completed, %d already up to date)",
		storeLabel(src), storeLabel(dst), plural(res.Sessions, "session"), plural(int(res.Records), "record"),
		res.Created, res.Completed-res.Created, res.UpToDate)
	if len(res.Failed) > 0 {
		fmt.Fprintf(e.stdout, ", %d not copied", len(res.Failed))
	}
	fmt.Fprintln(e.stdout, ".")
	switch {
	case err != nil:
		if ierr := interrupted(ctx, "migrate interrupted; what was copied (above) is complete. Run the same command "+
			"again to resume: it copies only what is missing."); ierr != nil {
			return ierr
		}
		return fmt.Errorf("migrate stopped (run it again to resume): %w", err)
	case len(res.Failed) > 0:
		conflicts := 0
		for _, f := range res.Failed {
			if errors.Is(f.Err, storecopy.ErrConflict) {
				conflicts++
			}
		}
		return fmt.Errorf("%d sessions not copied (%d conflicts with sessions already in the destination)", len(res.Failed), conflicts)
	}
	return nil
}

func closeStore(e *env, st storage.Store) {
	if err := st.Close(); err != nil {
		fmt.Fprintf(e.stderr, "sessionmem: %v\n", err)
	}
}
