package main

// stats and verify: the commands about the store as a whole.
//
// storage exposes no stats or verify API yet, so both work through what it does offer:
// Store.List for the counts, Store.View + Reader.Records (which decodes and checksums every
// frame) for raw sizes and integrity, Store.Update (which repairs a torn end left by a crash
// and logs what it cut) for --repair, and the store's directory layout (sessions/<id>.zst) to
// find sessions the index does not list, such as damaged ones.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
)

const statsHelp = `Usage: sessionmem stats [--json]

Summarize the store: sessions, messages, compactions, the size of the session logs as plain
JSONL (what storage would hold uncompressed) against the bytes on disk, and the ratio.
Reads every session, so it takes a while on a large store (progress shows on a terminal).

Flags:
  --json        print the numbers as JSON
  --store DIR   store directory (default $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem,
                else ~/.local/share/sessionmem)
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
	metas, err := cs.store.List(nil)
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	st := storeStats{Store: cs.dir, Sessions: len(metas)}
	prog := newProgress(e)
	for i, m := range metas {
		if err := ctx.Err(); err != nil {
			prog.done()
			return err
		}
		prog.update("reading sessions", i, len(metas))
		st.Messages += m.Messages
		st.Compactions += m.Compactions
		err := cs.store.View(ctx, m.ID, func(r *storage.Reader) error {
			for rec, err := range r.Records(1) {
				if err != nil {
					return err
				}
				st.Records++
				st.RawBytes += int64(len(rec.Data)) + 1 // the line and its newline
			}
			return nil
		})
		if err != nil {
			st.Unreadable++
			prog.done()
			fmt.Fprintf(e.stderr, "sessionmem stats: session %s: %v (run 'sessionmem verify')\n", m.ID, err)
		}
	}
	prog.done()
	if st.StoreBytes, st.SessionBytes, err = diskUsage(cs.dir); err != nil {
		return err
	}
	if st.SessionBytes > 0 {
		st.Ratio = float64(st.RawBytes) / float64(st.SessionBytes)
	}
	if *asJSON {
		return writeJSON(e.stdout, st)
	}
	w := e.stdout
	fmt.Fprintf(w, "Store         %s\n", clean(st.Store))
	fmt.Fprintf(w, "Sessions      %s\n", thousands(int64(st.Sessions)))
	fmt.Fprintf(w, "Messages      %s\n", thousands(int64(st.Messages)))
	fmt.Fprintf(w, "Compactions   %s\n", thousands(int64(st.Compactions)))
	fmt.Fprintf(w, "Records       %s (every stored entry: messages, compactions, renames, ...)\n", thousands(st.Records))
	fmt.Fprintf(w, "Raw JSONL     %s (%s bytes)\n", byteSize(st.RawBytes), thousands(st.RawBytes))
	fmt.Fprintf(w, "On disk       %s in session files (%s bytes), %s with index and import state\n",
		byteSize(st.SessionBytes), thousands(st.SessionBytes), byteSize(st.StoreBytes))
	if st.SessionBytes > 0 {
		fmt.Fprintf(w, "Ratio         %.1fx (raw JSONL / session files)\n", st.Ratio)
	}
	if st.Unreadable > 0 {
		fmt.Fprintf(w, "Unreadable    %d sessions (not counted in raw size; run 'sessionmem verify')\n", st.Unreadable)
	}
	return nil
}

// diskUsage sums the sizes of the regular files under dir, and of those under dir/sessions.
func diskUsage(dir string) (all, sessions int64, err error) {
	sessDir := filepath.Join(dir, "sessions") + string(filepath.Separator)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		all += fi.Size()
		if strings.HasPrefix(path, sessDir) {
			sessions += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("measure %s: %w", dir, err)
	}
	return all, sessions, nil
}

const verifyHelp = `Usage: sessionmem verify [--repair]

Check every session file of the store: the header, every compressed frame (checksums) and
every line of the plain tail are read, and every record must decode as a sessionmem entry.
Prints the sessions with problems and a summary; exits 1 if any session is damaged.

Without --repair nothing is written. A crash can leave a torn end (a half-written last frame
or line); servers cut it off the next time they write to that session. --repair does that
now, for every session, and reports what was cut. Damage in the middle of a file is never
cut automatically: restore that session from a backup or an export.

Flags:
  --repair      cut torn ends left by crashes (takes each session's write lock in turn)
  --store DIR   store directory (default $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem,
                else ~/.local/share/sessionmem)
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
	logs := &logCollector{}
	cs, err := openCLIStore(e, *c.store, openOptions{logHandler: logs})
	if err != nil {
		return err
	}
	defer cs.close(e)
	ids, err := sessionFileIDs(cs.dir)
	if err != nil {
		return err
	}
	var ok, repaired, damaged int
	prog := newProgress(e)
	for i, id := range ids {
		if err := ctx.Err(); err != nil {
			prog.done()
			return err
		}
		prog.update("verifying", i, len(ids))
		if *repair {
			err := cs.store.Update(ctx, id, func(*storage.Writer) error { return nil })
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				prog.done()
				damaged++
				fmt.Fprintf(e.stdout, "DAMAGED   %s: %v\n", id, err)
				continue
			}
		}
		notes := logs.take(id)
		records, err := verifySession(ctx, cs.store, id)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			continue // deleted meanwhile
		case err != nil:
			prog.done()
			damaged++
			fmt.Fprintf(e.stdout, "DAMAGED   %s: %v\n", id, err)
			continue
		case len(notes) > 0:
			prog.done()
			repaired++
			label := "REPAIRED"
			if !*repair {
				label = "WARNING "
			}
			fmt.Fprintf(e.stdout, "%s  %s: %s (%d records intact)\n", label, id, strings.Join(notes, "; "), records)
		default:
			ok++
		}
	}
	prog.done()
	for _, n := range logs.rest() {
		fmt.Fprintf(e.stderr, "sessionmem verify: %s\n", n)
	}
	fmt.Fprintf(e.stdout, "Checked %d sessions: %d ok, %d repaired, %d damaged.\n", ok+repaired+damaged, ok, repaired, damaged)
	if damaged > 0 {
		if !*repair {
			fmt.Fprintln(e.stdout, "Run 'sessionmem verify --repair' to cut torn ends; damage it cannot repair needs a backup or an export.")
		}
		return fmt.Errorf("%d damaged sessions", damaged)
	}
	return nil
}

// verifySession reads every record of a session under its shared lock and decodes them as
// memory does, returning how many there are.
func verifySession(ctx context.Context, st *storage.Store, id string) (int, error) {
	n := 0
	err := st.View(ctx, id, func(r *storage.Reader) error {
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

// sessionFileIDs lists the sessions that have a file in the store, damaged ones included
// (the index leaves those out).
func sessionFileIDs(dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "sessions"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".zst"); ok && e.Type().IsRegular() && storage.ValidID(id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// logCollector is a slog.Handler that keeps storage's warnings, by session, so verify can
// report what opening and repairing found.
type logCollector struct {
	mu     sync.Mutex
	by     map[string][]string
	others []string
}

var _ slog.Handler = (*logCollector)(nil)

func (l *logCollector) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }

func (l *logCollector) Handle(_ context.Context, r slog.Record) error {
	var session string
	var attrs []string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "session" {
			session = a.Value.String()
		} else {
			attrs = append(attrs, a.Key+"="+a.Value.String())
		}
		return true
	})
	msg := strings.TrimPrefix(r.Message, "storage: ")
	if len(attrs) > 0 {
		msg += " (" + strings.Join(attrs, ", ") + ")"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if session == "" {
		l.others = append(l.others, msg)
		return nil
	}
	if l.by == nil {
		l.by = map[string][]string{}
	}
	l.by[session] = append(l.by[session], msg)
	return nil
}

func (l *logCollector) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCollector) WithGroup(string) slog.Handler      { return l }

// take returns and forgets the notes about one session.
func (l *logCollector) take(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.by[id]
	delete(l.by, id)
	return n
}

// rest returns the notes not tied to a session verify reported on.
func (l *logCollector) rest() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.others...)
	ids := make([]string, 0, len(l.by))
	for id := range l.by {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for _, n := range l.by[id] {
			out = append(out, "session "+id+": "+n)
		}
	}
	return out
}
