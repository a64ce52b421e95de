package main

// stats and verify: the commands about the store as a whole.
//
// stats works through Store.List for the counts, Store.View + Reader.Records for raw sizes and
// storage.Sizer for the sizes in storage.
// verify uses Store.IDs (every session file, including those List skips) and Store.Verify,
// then decodes each intact session's records as memory does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"strings"

	"github.com/sessionmem/sessionmem/internal/buildinfo"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
)

const statsHelp = `Usage: sessionmem stats [--json]

Summarize the store: sessions, messages, compactions, the size of the session logs as plain
JSONL (what storage would hold uncompressed) against the bytes on disk, and the ratio.
Reads every session, so it takes a while on a large store (progress shows on a terminal).

Flags:
  --json        print the numbers as JSON
  --store LOC   store directory or PostgreSQL URL (postgres://...) (default $SESSIONMEM_STORE,
                else $XDG_DATA_HOME/sessionmem, else ~/.local/share/sessionmem)
`

func statsCommand() command {
	return command{name: "stats", summary: "count sessions and messages, compare raw and on-disk size", run: runStats}
}

// storeStats is what stats reports.
type storeStats struct {
	Store        string  `json:"store"`
	Sessions     int     `json:"sessions"`
	Messages     int     `json:"messages"`
	Compactions  int     `json:"compactions"`
	Records      int64   `json:"records"`
	RawBytes     int64   `json:"raw_bytes"`
	SessionBytes int64   `json:"session_file_bytes"`
	StoreBytes   int64   `json:"store_bytes"`
	Ratio        float64 `json:"ratio"`
	Unreadable   int     `json:"unreadable_sessions"`
}

func runStats(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("stats", statsHelp)
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
	read := 0
	var metas []storage.Meta
	// stopped is stats' report when a signal stopped it (nil otherwise).
	stopped := func() error {
		at := fmt.Sprintf("after reading %d of %d sessions", read, len(metas))
		if metas == nil {
			at = "before reading any session"
		}
		return interrupted(ctx, "stats interrupted %s; it only reads, so nothing changed. Run it again for the figures.", at)
	}
	metas, err = cs.store.List(ctx, storage.ListQuery{})
	if err != nil {
		if ierr := stopped(); ierr != nil {
			return ierr
		}
		return fmt.Errorf("list sessions: %w", err)
	}
	st := storeStats{Store: storeLabel(cs.dir), Sessions: len(metas)}
	prog := newProgress(e)
	for i, m := range metas {
		if ctx.Err() != nil {
			break
		}
		prog.update("reading sessions", i, len(metas))
		st.Messages += m.Messages
		st.Compactions += m.Compactions
		err := cs.store.View(ctx, m.ID, func(r storage.Reader) error {
			for rec, err := range r.Records(1) {
				if err != nil {
					return err
				}
				st.Records++
				st.RawBytes += int64(len(rec.Data)) + 1 // the line and its newline
			}
			return nil
		})
		if err != nil && ctx.Err() != nil {
			break // stopped by the signal, not a damaged session
		}
		read++
		if err != nil {
			st.Unreadable++
			prog.done()
			fmt.Fprintf(e.stderr, "sessionmem stats: %s (run 'sessionmem verify')\n", aboutSession(m.ID, err))
		}
	}
	prog.done()
	if err := stopped(); err != nil {
		return err
	}
	sz, measured := cs.store.(storage.Sizer)
	if measured {
		size, err := sz.Size(ctx)
		if err != nil {
			return err
		}
		st.StoreBytes, st.SessionBytes = size.Total, size.Sessions
	}
	if st.SessionBytes > 0 {
		st.Ratio = float64(st.RawBytes) / float64(st.SessionBytes)
	}
	if *asJSON {
		return writeJSON(e.stdout, st)
	}
	printStats(e.stdout, st, measured, isURLStore(cs.dir))
	return nil
}

// printStats writes stats' table; measured says the store reported its size, db that it is
// a database (whose size is of tables, not files).
func printStats(w io.Writer, st storeStats, measured, db bool) {
	fmt.Fprintf(w, "Store         %s\n", clean(st.Store))
	fmt.Fprintf(w, "Sessions      %s\n", thousands(int64(st.Sessions)))
	fmt.Fprintf(w, "Messages      %s\n", thousands(int64(st.Messages)))
	fmt.Fprintf(w, "Compactions   %s\n", thousands(int64(st.Compactions)))
	fmt.Fprintf(w, "Records       %s (every stored entry: messages, compactions, renames, ...)\n", thousands(st.Records))
	fmt.Fprintf(w, "Raw JSONL     %s (%s bytes)\n", byteSize(st.RawBytes), thousands(st.RawBytes))
	switch {
	case !measured:
		fmt.Fprintln(w, "Size          not measured (this store cannot measure its size)")
	case db:
		fmt.Fprintf(w, "In database   %s in the records table (%s bytes, TOAST and index included), %s with every sessionmem table\n",
			byteSize(st.SessionBytes), thousands(st.SessionBytes), byteSize(st.StoreBytes))
		if st.SessionBytes > 0 {
			fmt.Fprintf(w, "Ratio         %.1fx (raw JSONL / records table)\n", st.Ratio)
		}
	default:
		fmt.Fprintf(w, "On disk       %s in session files (%s bytes), %s with index and import state\n",
			byteSize(st.SessionBytes), thousands(st.SessionBytes), byteSize(st.StoreBytes))
		if st.SessionBytes > 0 {
			fmt.Fprintf(w, "Ratio         %.1fx (raw JSONL / session files)\n", st.Ratio)
		}
	}
	if st.Unreadable > 0 {
		fmt.Fprintf(w, "Unreadable    %d sessions (not counted in raw size; run 'sessionmem verify')\n", st.Unreadable)
	}
}

const verifyHelp = `Usage: sessionmem verify [--repair]

Check every session file of the store: the header, every compressed frame (checksums) and
every line of the plain tail are read, and every record must decode as a sessionmem entry.
Prints the sessions with problems and a summary; exits 1 if any session is damaged (or was
written by a newer sessionmem, so this one cannot check it).

It also checks the full-text search index of a local store and reports its size against
the session files'; a damaged index is rebuilt from the sessions (it holds nothing else).

Without --repair nothing is written. A crash can leave a torn end (a half-written last frame
or line); servers cut it off the next time they write to that session. --repair does that
now, for every session, and reports what was cut. Damage in the middle of a file is never
cut automatically: restore that session from a backup or an export.

On a PostgreSQL store verify reads every chunk of records (zstd checksums, sizes, sequence
numbers without gaps, valid JSON) and the session rows' bookkeeping; a transaction is
stored whole or not at all, so there is never a torn end and --repair changes nothing.

Flags:
  --repair      cut torn ends left by crashes (takes each session's write lock in turn)
  --store LOC   store directory or PostgreSQL URL (postgres://...) (default $SESSIONMEM_STORE,
                else $XDG_DATA_HOME/sessionmem, else ~/.local/share/sessionmem)
`

func verifyCommand() command {
	return command{name: "verify", summary: "check every session file; --repair cuts torn ends", run: runVerify}
}

func runVerify(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("verify", verifyHelp)
	repair := c.Bool("repair", false, "")
	pos, err := c.parse(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	if len(pos) > 0 {
		return c.usageError(e, "unexpected argument %q (verify checks the whole store)", pos[0])
	}
	// verify reports on every session itself, so storage's per-session warnings (a damaged
	// session skipped at open, a torn end cut) would only repeat it on stderr.
	logs := sessionLogFilter{slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})}
	cs, err := openCLIStore(e, *c.store, openOptions{logHandler: logs})
	if err != nil {
		return err
	}
	defer cs.close(e)
	// Which build checked: a report of NEWER sessions means something only beside it.
	fmt.Fprintf(e.stdout, "Verifying with sessionmem %s.\n", buildinfo.Read().Short())
	ids, err := cs.store.IDs(ctx)
	if err != nil {
		return fmt.Errorf("list session files: %w", err)
	}
	var ok, repaired, damaged, newer int
	prog := newProgress(e)
	report := func(label, id, msg string) {
		prog.done()
		// The line names the session: the store's text need not ("session ID: ...", and
		// "session ID tail has format version 9").
		msg = strings.TrimPrefix(sessionDetail(id, msg), "session "+id+" ")
		fmt.Fprintf(e.stdout, "%-8s  %s: %s\n", label, id, msg)
	}
	stopped := func(checked int) error {
		prog.done()
		done := "nothing was changed"
		if *repair {
			done = "the torn ends found so far were cut, nothing else was changed"
		}
		return interrupted(ctx, "verify interrupted after %d of %d sessions (%d ok, %d torn, %d damaged so far); %s. "+
			"Run it again to check every session.", checked, len(ids), ok, repaired, damaged, done)
	}
	for i, id := range ids {
		if err := stopped(i); err != nil {
			return err
		}
		prog.update("verifying", i, len(ids))
		rep, err := cs.store.Verify(ctx, id, *repair)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			continue // deleted meanwhile
		case err != nil && ctx.Err() != nil:
			return stopped(i)
		case err != nil:
			damaged++ // could not be checked; not known to be intact
			report("DAMAGED", id, err.Error())
			continue
		case rep.NewerFormat() != nil:
			newer++
			report("NEWER", id, problemDetails(rep, storage.ProblemNewerFormat))
			continue
		case rep.Damaged() != nil:
			damaged++
			report("DAMAGED", id, problemDetails(rep, storage.ProblemDamaged))
			continue
		}
		records, err := verifySession(ctx, cs.store, id)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			continue
		case err != nil && ctx.Err() != nil:
			return stopped(i)
		case err != nil:
			damaged++
			report("DAMAGED", id, err.Error())
		case rep.Torn():
			repaired++
			label := "REPAIRED"
			if !*repair {
				label = "WARNING"
			}
			report(label, id, fmt.Sprintf("%s (%d records intact)", problemDetails(rep, storage.ProblemTorn), records))
		default:
			ok++
		}
	}
	prog.done()
	verifySearchIndex(ctx, e, cs.store)
	if err := stopped(len(ids)); err != nil {
		return err // during the index check: every session was checked, but not reported
	}
	return verifySummary(e, verifyCounts{ok: ok, torn: repaired, damaged: damaged, newer: newer}, *repair)
}

// verifyCounts is how many sessions verify found in each state.
type verifyCounts struct{ ok, torn, damaged, newer int }

// verifySummary prints verify's last lines and returns its error (damaged or unchecked
// sessions).
func verifySummary(e *env, c verifyCounts, repair bool) error {
	// Without --repair nothing was cut: those sessions are torn, to be repaired.
	tornLabel := "repaired"
	if !repair {
		tornLabel = "torn (to repair)"
	}
	fmt.Fprintf(e.stdout, "Checked %d sessions: %d ok, %d %s, %d damaged", c.ok+c.torn+c.damaged+c.newer, c.ok, c.torn, tornLabel, c.damaged)
	if c.newer > 0 {
		fmt.Fprintf(e.stdout, ", %d written by a newer sessionmem (not checked)", c.newer)
	}
	fmt.Fprintln(e.stdout, ".")
	if c.torn > 0 && !repair {
		fmt.Fprintln(e.stdout, "Run 'sessionmem verify --repair' to cut torn ends (servers also cut them on their next write).")
	}
	if c.damaged > 0 {
		fmt.Fprintln(e.stdout, "Damage is never cut: restore those sessions from a backup or an export.")
	}
	var errs []error
	if c.damaged > 0 {
		errs = append(errs, fmt.Errorf("%d damaged sessions", c.damaged))
	}
	if c.newer > 0 {
		errs = append(errs, fmt.Errorf("%d sessions not checked: upgrade sessionmem", c.newer))
	}
	return errors.Join(errs...)
}

// problemDetails is what the store says of rep's problems of kind, in the order found: where
// a crash left torn ends and, once repaired, what was cut; what is damaged; what a newer
// version wrote.
func problemDetails(rep storage.VerifyReport, kind storage.ProblemKind) string {
	var parts []string
	for _, p := range rep.Problems {
		if p.Kind == kind {
			parts = append(parts, p.Detail)
		}
	}
	return strings.Join(parts, "; ")
}

// verifySession reads every record of a session under its shared lock and decodes them as
// memory does, returning how many there are.
func verifySession(ctx context.Context, st storage.Store, id string) (int, error) {
	n := 0
	err := st.View(ctx, id, func(r storage.Reader) error {
		var recs iter.Seq2[storage.Record, error] = func(yield func(storage.Record, error) bool) {
			for rec, err := range r.Records(1) {
				if err == nil {
					n++
				}
				if !yield(rec, err) {
					return
				}
			}
		}
		_, err := memory.Summarize(r.Header(), recs)
		if err == nil && uint64(n) != r.LastSeq() {
			err = fmt.Errorf("read %d records, expected %d", n, r.LastSeq())
		}
		return err
	})
	return n, err
}

// sessionLogFilter drops log records about one session (they carry a "session" attribute)
// and passes the rest on.
type sessionLogFilter struct{ slog.Handler }

func (f sessionLogFilter) Handle(ctx context.Context, r slog.Record) error {
	about := false
	r.Attrs(func(a slog.Attr) bool {
		about = a.Key == "session"
		return !about
	})
	if about {
		return nil
	}
	return f.Handler.Handle(ctx, r)
}

func (f sessionLogFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return sessionLogFilter{f.Handler.WithAttrs(as)}
}

func (f sessionLogFilter) WithGroup(name string) slog.Handler {
	return sessionLogFilter{f.Handler.WithGroup(name)}
}
