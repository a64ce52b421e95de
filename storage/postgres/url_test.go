package postgres

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessionmem/sessionmem/storage"
)

// TestCheckURL: a URL that pgx and net/url would read differently (an unencoded '@', '/', '#'
// or '?' in the user information) is refused before anything connects, saying how to encode
// the password and without quoting it; every URL accepted is read alike by both parsers.
func TestCheckURL(t *testing.T) {
	// pgx fills in what a URL leaves out from the environment: keep it out of the comparison.
	for _, k := range []string{"PGUSER", "PGPASSWORD", "PGHOST", "PGPORT", "PGDATABASE", "PGSERVICE"} {
		t.Setenv(k, "")
	}
	t.Setenv("PGPASSFILE", "/nonexistent/pgpass")
	for _, tc := range []struct {
		url, want string // want: "" accepted, else in the error
		secrets   []string
	}{
		{"postgres://sm:s3cretpw@127.0.0.1:55432/sm?sslmode=disable", "", nil},
		{"postgresql://sm:p%40ss%2Fw%3Ard%23x%3F@db.example/sm", "", nil},
		{"POSTGRES://sm:s3cretpw@127.0.0.1/sm", "", nil},
		{"Postgresql://sm@db/sm?password=s3cretpw", "", nil},
		{"postgres:///sm?host=/var/run/postgresql", "", nil},
		{"postgres://h1,h2:5433/sm?target_session_attrs=read-write", "", nil},
		{"postgres://sm:hunter2@Tr0ub4dorSecret@127.0.0.1:55432/sm?sslmode=disable", "must percent-encode '@' as %40", []string{"hunter2", "Tr0ub4dorSecret"}},
		{"postgres://sm:p@zz:w/qk@db/sm", "must percent-encode '@' as %40", []string{"zz:w", "qk"}},
		{"postgres://sm:pa/ss@db/sm", "'/' as %2F", []string{"pa/ss"}},
		{"postgres://sm:12/secretish@db/sm", "'/' as %2F", []string{"secretish"}},
		{"postgres://sm:pa#zzqk@db/sm", "%23", []string{"pa#zz", "zzqk"}},
		{"postgres://sm:12#zzqk@db/sm", "%23", []string{"zzqk"}},
		{"postgres://sm:pa?zzqk@db/sm", "%3F", []string{"zzqk"}},
		{"postgres://db?password=s3c@retpw", "%3F", []string{"s3c", "retpw"}},
		{"postgres://sm:s3cretpw@db:notaport/sm", `invalid port ":notaport"`, []string{"s3cretpw"}},
		{"postgres://", "names no host or database", nil},
		{"postgres:sm@db", "", nil}, // not scheme://: a keyword/value string to pgx, not checked
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckURL(tc.url)
			if tc.want != "" {
				if !errors.Is(err, ErrMalformedURL) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "postgres://user:password@host") {
					t.Fatalf("CheckURL = %v; want ErrMalformedURL saying %q and how to write the URL", err, tc.want)
				}
				for _, s := range tc.secrets {
					for _, text := range []string{err.Error(), Redact(tc.url)} {
						if strings.Contains(text, s) {
							t.Fatalf("%q shows %q", text, s)
						}
					}
				}
				// New refuses it the same way, before connecting.
				if _, err := New(tc.url, Options{}); !errors.Is(err, ErrMalformedURL) {
					t.Fatalf("New = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckURL = %v, want nil", err)
			}
			if _, _, ok := splitScheme(tc.url); ok {
				samePasswords(t, tc.url)
			}
		})
	}
}

// samePasswords checks that net/url (the labels) and pgx (the connection) read the same user,
// password and host from raw.
func samePasswords(t *testing.T, raw string) {
	t.Helper()
	norm := NormalizeURL(raw)
	cfg, err := pgconn.ParseConfig(norm)
	if err != nil {
		t.Fatalf("pgx cannot parse %s: %v", Redact(raw), err)
	}
	u, err := url.Parse(norm)
	if err != nil {
		t.Fatal(err)
	}
	if u.User != nil {
		pw, ok := u.User.Password()
		if !ok {
			pw = u.Query().Get("password")
		}
		if u.User.Username() != cfg.User || pw != cfg.Password {
			t.Fatalf("net/url reads user %q password %q, pgx %q %q", u.User.Username(), pw, cfg.User, cfg.Password)
		}
	}
	if h := u.Hostname(); h != "" && !strings.Contains(h, ",") && h != cfg.Host {
		t.Fatalf("net/url reads host %q, pgx %q", h, cfg.Host)
	}
}

// TestMalformedURLNoConnection: the URL QA found (a password holding '@') fails at once with
// the malformed-URL error, never a DNS lookup or connection error quoting the password.
func TestMalformedURLNoConnection(t *testing.T) {
	raw := "postgres://sm:hunter2@Tr0ub4dorSecret@127.0.0.1:1/sm?sslmode=disable"
	start := time.Now()
	_, err := Open(context.Background(), raw, Options{})
	if !errors.Is(err, ErrMalformedURL) || errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("open: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("open took %v: it tried to connect", d)
	}
	for _, s := range []string{"hunter2", "Tr0ub4dor"} {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("error shows %q: %v", s, err)
		}
	}
	if got := Redact(raw); got != "postgres://…" {
		t.Fatalf("Redact = %q", got)
	}
}

func TestRedactText(t *testing.T) {
	for in, want := range map[string]string{
		"cannot parse `postgres://sm:hunter2@Tr0ub4dor@h/db`: bad": "cannot parse `postgres://sm:xxxxx@h/db`: bad",
		"dial postgresql://u:p:w@h:5432/db failed":                 "dial postgresql://u:xxxxx@h:5432/db failed",
		"host=h user=u password=s3cret dbname=d":                   "host=h user=u password=xxxxx dbname=d",
		"host=h password='s3 cret' dbname=d":                       "host=h password=xxxxx dbname=d",
		"postgres://h/db?sslmode=require&sslpassword=k3y&x=1":      "postgres://h/db?sslmode=require&sslpassword=xxxxx&x=1",
		"postgres://h:5432/db is unreachable":                      "postgres://h:5432/db is unreachable",
		"lookup sm@h: no such host (the password was mysecret)":    "lookup sm@h: no such host (the password was xxxxx)",
	} {
		if got := RedactText(in, "mysecret"); got != want {
			t.Errorf("RedactText(%q) = %q, want %q", in, got, want)
		}
	}
}
