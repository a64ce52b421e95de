package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// noPGStore is the refusal of database u, which holds no store, as main prints it; hint is
// what the command adds about where the URL came from.
func noPGStore(t *testing.T, u, prefix, hint string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return "sessionmem: " + prefix + "no sessionmem store in database " + strings.TrimPrefix(p.Path, "/") +
		" at 127.0.0.1:" + strconv.Itoa(pgtest.Shared(t).Port) + " (" + hint + ")\n"
}

// TestCLIPostgresNoStore: the commands that only read or change what is stored refuse a
// database without sessionmem's tables (a --store or SESSIONMEM_STORE naming the wrong
// database), exit 1, say which database, and create nothing in it; so does migrate --from.
// serve, import and hook create the tables, after which the same commands work; a schema newer
// than this build is still the newer-format error.
func TestCLIPostgresNoStore(t *testing.T) {
	c := pgtest.Shared(t)
	if c.Dir == "" {
		t.Skip("an external server: the message names its host, not 127.0.0.1")
	}
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // import and hook keep their checkpoints there
	empty := c.NewDatabase(t)
	want := noPGStore(t, empty, "", "nothing saved there yet, or a wrong --store / SESSIONMEM_STORE")
	eachNonCreating(t, func(t *testing.T, cmd string, withStore func(string) []string) {
		// Bounded: a ui that opened the database would serve until stopped.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		r := runCLIContext(ctx, t, "", withStore(empty)...)
		if r.code != 1 || r.stderr != want || r.stdout != "" {
			t.Fatalf("exit %d\nstdout: %q\nstderr: %q\nwant:   %q", r.code, r.stdout, r.stderr, want)
		}
		if n := pgtest.Tables(t, empty); n != 0 {
			t.Fatalf("%s created %d tables in the database", cmd, n)
		}
	})
	t.Run("migrate from it", func(t *testing.T) {
		to := filepath.Join(t.TempDir(), "copy")
		r := runCLI(t, "", "migrate", "--from", empty, "--to", to)
		want := noPGStore(t, empty, "--from: ", "nothing saved there yet, or a wrong --from URL")
		if r.code != 1 || r.stderr != want || r.stdout != "" {
			t.Fatalf("exit %d\nstdout: %q\nstderr: %q\nwant:   %q", r.code, r.stdout, r.stderr, want)
		}
		if n := pgtest.Tables(t, empty); n != 0 {
			t.Fatalf("migrate created %d tables in its source", n)
		}
		if _, err := os.Stat(to); !os.IsNotExist(err) {
			t.Fatalf("migrate created its destination although the source was refused (%v)", err)
		}
	})
}

// TestCLIPostgresCreatesStore: serve, import, hook and migrate --to create sessionmem's tables
// in an empty database, after which the commands that only read work on it.
func TestCLIPostgresCreatesStore(t *testing.T) {
	c := pgtest.Shared(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // import and hook keep their checkpoints there
	pi := copyFixture(t, "pi.jsonl", t.TempDir(), "s.jsonl")
	codex := copyFixture(t, "codex.jsonl", t.TempDir(), "rollout.jsonl")
	store := func(args ...string) func(string) []string {
		return func(db string) []string { return append(args, "--store", db) }
	}
	for _, tt := range []struct {
		name, stdin string
		args        func(db string) []string
		sessions    int
	}{
		{"serve", "", store("serve"), 0}, // stdin at its end: the server stops at once
		{"import", "", store("import", "--pi", pi), 1},
		{"hook", hookPayload(t, map[string]string{"session_id": "x", "transcript_path": codex, "hook_event_name": "Stop"}), store("hook", "codex"), 1},
		{"migrate to it", "", func(db string) []string { return []string{"migrate", "--from", t.TempDir(), "--to", db} }, 0},
	} {
		t.Run(tt.name+" creates it", func(t *testing.T) {
			db := c.NewDatabase(t)
			r := runCLI(t, tt.stdin, tt.args(db)...)
			r.must(t)
			noSecret(t, r.stdout+r.stderr)
			if n := pgtest.Tables(t, db); n == 0 {
				t.Fatalf("%s created no tables", tt.name)
			}
			if got := listJSON(t, db); len(got) != tt.sessions {
				t.Fatalf("sessions listed = %d, want %d", len(got), tt.sessions)
			}
			for _, args := range [][]string{{"stats"}, {"verify"}, {"search", "build"}} {
				runCLI(t, "", append(args, "--store", db)...).must(t)
			}
		})
	}
}

// TestCLIPostgresNewerSchema: a schema newer than this build is the newer-format error for a
// command that reads, one that saves and migrate's source, not "no sessionmem store".
func TestCLIPostgresNewerSchema(t *testing.T) {
	c := pgtest.Shared(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	pi := copyFixture(t, "pi.jsonl", t.TempDir(), "s.jsonl")
	imported := c.NewDatabase(t)
	runCLI(t, "", "import", "--pi", pi, "--store", imported).must(t)
	conn, err := pgx.Connect(context.Background(), imported)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), "UPDATE sessionmem_schema SET version = $1", postgres.SchemaVersion+1)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"list", "--store", imported}, {"import", "--pi", pi, "--store", imported},
		{"migrate", "--from", imported, "--to", t.TempDir()},
	} {
		r := runCLI(t, "", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "sessionmem schema has format version "+strconv.Itoa(postgres.SchemaVersion+1)) ||
			!strings.Contains(r.stderr, "upgrade sessionmem") || strings.Contains(r.stderr, "no sessionmem store") {
			t.Fatalf("%s: exit %d, stderr %q; want the newer-format error", args[0], r.code, r.stderr)
		}
	}
}
