package postgres

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// TestNoCreate: a NoCreate store on a database or schema without sessionmem's tables fails to
// open with ErrNoStore, naming the database, the schema and the host but not the password,
// and creates nothing; on one whose tables a store without the option created it works, and a
// newer schema is still the newer-format error.
func TestNoCreate(t *testing.T) {
	c := pgtest.Shared(t)
	host := "at 127.0.0.1:" + strconv.Itoa(c.Port)
	ctx := context.Background()
	dbName := func(u string) string {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(p.Path, "/")
	}
	// setting gives a URL a query parameter (search_path), replacing one it has.
	setting := func(u, k, v string) string {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		q := p.Query()
		q.Set(k, v)
		p.RawQuery = q.Encode()
		return p.String()
	}
	tests := []struct {
		name string
		url  func(t *testing.T) (u, want string) // want: the error text, "" for no error
		// prepare runs on u before the NoCreate open: "" leaves it empty.
		prepare string
		newer   bool
	}{
		{name: "empty database", url: func(t *testing.T) (string, string) {
			u := newDB(t)
			return u, "no sessionmem store in database " + dbName(u) + " " + host
		}},
		{name: "empty schema", url: func(t *testing.T) (string, string) {
			u := newSchema(t)
			p, _ := url.Parse(u)
			return u, "no sessionmem store in database " + dbName(u) + " (schema " + p.Query().Get("search_path") + ") " + host
		}},
		{name: "search_path names no schema", url: func(t *testing.T) (string, string) {
			u := setting(newDB(t), "search_path", "no_such_schema")
			return u, "no sessionmem store in database " + dbName(u) + " (its search_path names no existing schema) " + host
		}},
		{name: "unix socket", url: func(t *testing.T) (string, string) {
			if c.Dir == "" {
				t.Skip("an external server: its socket directory is unknown")
			}
			u := setting(setting(newDB(t), "host", c.Dir), "port", strconv.Itoa(c.Port))
			return u, "no sessionmem store in database " + dbName(u) + " on the local socket in " + c.Dir
		}},
		{name: "a store", prepare: "create", url: func(t *testing.T) (string, string) { return newSchema(t), "" }},
		{name: "a newer store", prepare: "newer", newer: true, url: func(t *testing.T) (string, string) { return newSchema(t), "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, want := tt.url(t)
			if tt.prepare != "" {
				prepareStore(t, u, tt.prepare == "newer")
			}
			before := pgtest.Tables(t, u)
			s, err := Open(ctx, u, Options{NoCreate: true})
			switch {
			case tt.newer:
				if !errors.Is(err, storage.ErrNewerFormat) || errors.Is(err, ErrNoStore) {
					t.Fatalf("Open: %v, want the newer-format error", err)
				}
			case want != "":
				checkNoStore(t, u, err, want, c.Password)
			default:
				if err != nil {
					t.Fatalf("Open of a store: %v", err)
				}
				defer s.Close()
				if ms, err := s.List(ctx, storage.ListQuery{}); err != nil || len(ms) != 1 || ms[0].ID != "a" {
					t.Fatalf("List: %+v, %v", ms, err)
				}
			}
			if after := pgtest.Tables(t, u); after != before {
				t.Fatalf("tables: %d before the NoCreate open, %d after", before, after)
			}
		})
	}
}

// prepareStore creates a store holding session "a" on u, its schema marked one version newer
// than this build's when newer.
func prepareStore(t *testing.T, u string, newer bool) {
	t.Helper()
	ctx := context.Background()
	s := openStore(t, u, Options{})
	defer s.Close()
	if err := s.Create(ctx, storage.Header{ID: "a", WorkingDir: "/w"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	if newer {
		if _, err := s.pool.Exec(ctx, "UPDATE sessionmem_schema SET version = $1", SchemaVersion+1); err != nil {
			t.Fatal(err)
		}
	}
}

// checkNoStore checks a NoCreate open's refusal of u: err is want, wrapping ErrNoStore, without
// password, nothing was created, and a store made with New fails its calls the same way and
// creates nothing either.
func checkNoStore(t *testing.T, u string, err error, want, password string) {
	t.Helper()
	if !errors.Is(err, ErrNoStore) || err.Error() != want {
		t.Fatalf("Open: %v\nwant %q (wrapping ErrNoStore)", err, want)
	}
	if strings.Contains(err.Error(), password) {
		t.Fatalf("the password is in %q", err)
	}
	if n := pgtest.Tables(t, u); n != 0 {
		t.Fatalf("%d tables after the refused open, want none", n)
	}
	s, err := New(u, Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.List(context.Background(), storage.ListQuery{}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("List: %v, want ErrNoStore", err)
	}
	if n := pgtest.Tables(t, u); n != 0 {
		t.Fatalf("%d tables after List, want none", n)
	}
}
