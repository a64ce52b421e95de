package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// TestPGStoreURLRefused: real processes given a store URL that cannot be used as written (a
// password holding an unencoded '@', '/' or '#', a port that is no number, no host at all)
// exit 2 with one line saying how to write it, before any connection attempt, and nothing
// they print holds a part of the password. serve refuses it the same way at start.
func TestPGStoreURLRefused(t *testing.T) {
	port := strconv.Itoa(pgtest.Shared(t).Port)
	for _, tc := range []struct {
		name, url, want string
		secrets         []string
	}{
		{"two @", "postgres://sm:hunter2@Tr0ub4dorSecret@127.0.0.1:" + port + "/sm?sslmode=disable",
			"must percent-encode '@' as %40", []string{"hunter2", "Tr0ub4dor"}},
		{"@ and / in password", "postgres://sm:p@zq:w/rk@127.0.0.1:" + port + "/sm", "must percent-encode '@' as %40", []string{"zq:w", "rk@"}},
		{"# in password", "postgres://sm:pa#zqrk@127.0.0.1:" + port + "/sm", "%23", []string{"zqrk"}},
		{"port not a number", "postgres://sm:s3cretpw@127.0.0.1:notaport/sm", `invalid port ":notaport"`, []string{"s3cretpw"}},
		{"empty", "postgres://", "names no host or database", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{
				{"list", "--store", tc.url},
				{"migrate", "--from", t.TempDir(), "--to", tc.url},
				{"serve", "--store", tc.url},
				{"list"}, // SESSIONMEM_STORE
			} {
				cmd := exec.Command(binary(t), args...)
				cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), envStore+"="+tc.url)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 2 {
					t.Fatalf("%v: %v, want exit 2; stderr:\n%s", args, err, stderr.String())
				}
				out := stdout.String() + stderr.String()
				lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
				if len(lines) != 1 || !strings.Contains(out, tc.want) || !strings.Contains(out, "malformed PostgreSQL URL") {
					t.Fatalf("%v: want one line saying %q:\n%s", args, tc.want, out)
				}
				for _, s := range tc.secrets {
					if strings.Contains(out, s) {
						t.Fatalf("%v: output shows %q:\n%s", args, s, out)
					}
				}
			}
		})
	}
}

// TestPGSchemeAnyCase: POSTGRES:// and Postgresql:// are PostgreSQL URLs all the way through.
func TestPGSchemeAnyCase(t *testing.T) {
	u := pgtest.Shared(t).NewDatabase(t)
	// serve creates the tables (list refuses a database without them), here with the scheme
	// in capitals too.
	runCLI(t, "", "serve", "--store", "POSTGRES://"+strings.TrimPrefix(u, "postgres://")).must(t)
	for _, scheme := range []string{"POSTGRES://", "Postgresql://"} {
		loc := scheme + strings.TrimPrefix(u, "postgres://")
		r := runCLI(t, "", "list", "--store", loc).must(t)
		noSecret(t, r.stdout+r.stderr)
	}
}

// TestPGServerMisconfigured: a server whose URL has a wrong password, or names a database that
// does not exist, starts, and every tool call says what is wrong and what to fix, not that
// the database is unreachable or to retry; nothing it says or logs holds the password.
func TestPGServerMisconfigured(t *testing.T) {
	c := pgtest.Shared(t)
	good := c.NewDatabase(t)
	wrong := strings.Replace(good, c.Password, "wrong-password-123", 1)
	noDB := good[:strings.LastIndex(good, "/")] + "/no_such_db?sslmode=disable"
	for _, tc := range []struct{ name, url, secret, want, fix string }{
		{"wrong password", wrong, "wrong-password-123", "password authentication failed", "check the user name and password"},
		{"no database", noDB, c.Password, `database "no_such_db" does not exist`, "create the database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, tc.url)
			for _, call := range []struct {
				name string
				args obj
			}{
				{"session_save", obj{"working_dir": "/p", "messages": []any{obj{"id": "x", "role": "user", "content": "hi"}}}},
				{"session_list", obj{}},
				{"session_search", obj{"query": "hi"}},
			} {
				res, d, err := tool(srv.c, call.name, call.args)
				text := resultText(res)
				if err != nil || !res.IsError || d > 5*time.Second {
					t.Fatalf("%s: %v %q after %v", call.name, err, text, d)
				}
				if !strings.Contains(text, tc.want) || !strings.Contains(text, tc.fix) || strings.Contains(text, tc.secret) {
					t.Errorf("%s: want %q and %q, no password: %s", call.name, tc.want, tc.fix, text)
				}
				for _, bad := range []string{"unreachable", "retry in a few seconds", "stores nothing twice"} {
					if strings.Contains(text, bad) {
						t.Errorf("%s: says %q: %s", call.name, bad, text)
					}
				}
			}
			if logs := srv.logs(); !strings.Contains(logs, "refused the connection") || strings.Contains(logs, tc.secret) {
				t.Fatalf("server logs (want the refusal, never the password):\n%s", logs)
			}
		})
	}
}
