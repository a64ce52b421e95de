package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// The same on PostgreSQL: its disk full (SQLSTATE 53100) on a real tablespace that is full,
// and a read-only database (25006).

// pgExec runs statements on the database at u.
func pgExec(t *testing.T, u string, stmts ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // cleanups run it too
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%.60s: %w", s, err)
		}
	}
	return nil
}

func dbName(t *testing.T, u string) string {
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(p.Path, "/")
}

// randomText is incompressible text (base64 of random bytes), so what stores it needs room.
func randomText(n int) string {
	b := make([]byte, n*3/4)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// TestFullDiskPostgres puts the store's tables in a tablespace on a small tmpfs, fills it,
// and checks what TestFullDisk checks of the local store.
func TestFullDiskPostgres(t *testing.T) {
	if os.Getenv(pgtest.EnvURL) != "" {
		t.Skip("the tablespace is a tmpfs on this machine: needs the tests' own cluster")
	}
	opts := "size=24m,mode=0700"
	if pgUser, err := user.Lookup("postgres"); err == nil && os.Geteuid() == 0 {
		opts += ",uid=" + pgUser.Uid + ",gid=" + pgUser.Gid // pgtest runs the server as postgres when we are root
	}
	dir := mountTmpfs(t, opts)
	c := pgtest.Shared(t)
	ts := fmt.Sprintf("sessionmem_tiny_%d", time.Now().UnixNano())
	if err := pgExec(t, c.URL("postgres"), "CREATE TABLESPACE "+ts+" LOCATION '"+dir+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pgExec(t, c.URL("postgres"), "DROP TABLESPACE IF EXISTS "+ts); err != nil {
			t.Errorf("drop tablespace: %v", err)
		}
	})
	db := c.NewDatabase(t)
	if err := pgExec(t, c.URL("postgres"), "ALTER DATABASE "+dbName(t, db)+" SET default_tablespace = "+ts); err != nil {
		t.Fatal(err)
	}

	srv := serveInProcess(t, db)
	msg := func(id, text string) string { return fmt.Sprintf(`{"id":%q,"role":"user","content":%q}`, id, text) }
	sid := srv.ok("session_save", `{"working_dir":"/p","messages":[`+msg("m0", "first zzfull")+`,`+msg("m1", "second")+`]}`).Get("session_id").String()

	// Fill the tablespace with a table of incompressible rows, stored out of line uncompressed.
	if err := pgExec(t, db, "CREATE TABLE filler (b bytea)", "ALTER TABLE filler ALTER b SET STORAGE EXTERNAL"); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		err := pgExec(t, db, "INSERT INTO filler SELECT decode('"+strings.Repeat("ab", 1<<20)+"' || md5(random()::text), 'hex')")
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "53100" {
			break
		}
		if err != nil || i > 1000 {
			t.Fatalf("fill the tablespace: %v", err)
		}
	}
	// The rows above are all alike: make sure the last pages are full too.
	for n := 256 << 10; n >= 8<<10; n /= 2 {
		for pgExec(t, db, fmt.Sprintf("INSERT INTO filler SELECT decode('%s', 'base64')", base64.StdEncoding.EncodeToString([]byte(randomText(n))))) == nil {
		}
	}

	big := msg("big", randomText(1<<20))
	checkFullError(t, "a save", srv.tool("session_save", fmt.Sprintf(`{"session_id":%q,"messages":[%s]}`, sid, big)), dir)
	for _, m := range srv.ok("session_resume", fmt.Sprintf(`{"session_id":%q,"max_tokens":1000000}`, sid)).Get("messages").Array() {
		if id := m.Get("id").String(); id != "m0" && id != "m1" {
			t.Errorf("a refused save stored %s", id)
		}
	}
	srv.ok("session_list", `{}`)
	srv.ok("session_search", `{"query":"zzfull"}`)
	if log := srv.stderr.String(); !strings.Contains(log, "53100") {
		t.Errorf("the log does not have the details of the failed call:\n%s", log)
	}

	if err := pgExec(t, db, "DROP TABLE filler"); err != nil {
		t.Fatal(err)
	}
	for try, want := range []int64{1, 0} {
		if n := srv.ok("session_save", fmt.Sprintf(`{"session_id":%q,"messages":[%s]}`, sid, big)).Get("saved").Int(); n != want {
			t.Errorf("save after freeing space (try %d): saved %d, want %d", try, n, want)
		}
	}
	if n := srv.ok("session_resume", fmt.Sprintf(`{"session_id":%q,"max_tokens":1000000}`, sid)).Get("messages.#").Int(); n != 3 {
		t.Errorf("%d messages after the save, want 3", n)
	}
}

// TestReadOnlyPostgres: on a database whose transactions are read-only, a save is refused with
// a tool error saying the store is read-only and what to do, naming nothing of the server's;
// reads keep working.
func TestReadOnlyPostgres(t *testing.T) {
	c := pgtest.Shared(t)
	db := c.NewDatabase(t)
	srv := serveInProcess(t, db)
	sid := srv.ok("session_save", `{"working_dir":"/p","messages":[{"id":"m0","role":"user","content":"first zzro"}]}`).Get("session_id").String()
	srv.close()
	if err := pgExec(t, c.URL("postgres"), "ALTER DATABASE "+dbName(t, db)+" SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	srv = serveInProcess(t, db)
	for what, args := range map[string]string{
		"a save":                        fmt.Sprintf(`{"session_id":%q,"messages":[{"id":"m1","role":"user","content":"x"}]}`, sid),
		"a save that creates a session": `{"working_dir":"/q","messages":[{"role":"user","content":"x"}]}`,
	} {
		res := srv.tool("session_save", args)
		text := res.Get("content.0.text").String()
		if !res.Get("isError").Bool() || !strings.Contains(text, "the session store is read-only") || !strings.Contains(text, "nothing was saved") ||
			!strings.Contains(text, "make the store writable") || absPath.MatchString(text) || strings.Contains(text, "internal error") {
			t.Errorf("%s on a read-only database: %q", what, text)
		}
	}
	if n := srv.ok("session_resume", fmt.Sprintf(`{"session_id":%q}`, sid)).Get("messages.#").Int(); n != 1 {
		t.Errorf("resume: %d messages, want 1", n)
	}
	srv.ok("session_list", `{}`)
	srv.ok("session_search", `{"query":"zzro"}`)
	if log := srv.stderr.String(); !strings.Contains(log, "25006") {
		t.Errorf("the log does not have the details of the failed call:\n%s", log)
	}
}
