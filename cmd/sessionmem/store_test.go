package main

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// A URL is never taken for a directory, and its password never shows in an error.
func TestResolveStoreURLs(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		env        func(string) string
		want       string // "" = accepted as given
	}{
		{"postgres flag", "postgres://user:s3cretpw@db.example:5432/mem", envOf("HOME", "/h"), ""},
		{"postgresql env", "", envOf(envStore, "postgresql://u:s3cretpw@h/db?sslmode=disable", "HOME", "/h"), ""},
		{"bad postgres URL", "postgres://u:s3cretpw@h:port/db", envOf("HOME", "/h"), "malformed PostgreSQL URL"},
		{"@ in password", "postgres://u:s3cretpw@x@h/db", envOf("HOME", "/h"), "percent-encode '@' as %40"},
		{"other scheme", "s3://key:s3cretpw@bucket/x", envOf("HOME", "/h"), "unknown store URL scheme s3://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			loc, err := resolveStore(tc.flag, tc.env)
			if tc.want == "" {
				given := tc.flag
				if given == "" {
					given = tc.env(envStore)
				}
				if err != nil || loc != given {
					t.Fatalf("resolveStore = %q, %v; want the URL as given", loc, err)
				}
			} else {
				var ce *configError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want a config error saying %q", err, tc.want)
				}
				if strings.Contains(err.Error(), "s3cretpw") {
					t.Fatalf("password in error: %v", err)
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("a directory was created: %v", ents)
			}
		})
	}
}

func TestStoreLabel(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/.local/share/sessionmem":                "/home/me/.local/share/sessionmem",
		"postgres://user:pw@host:5432/db?sslmode=disable": "postgres://user:xxxxx@host:5432/db?sslmode=disable",
		"postgres://host/db?user=u&password=pw":           "postgres://host/db?password=xxxxx&user=u",
		"postgresql://user@host/db":                       "postgresql://user@host/db",
		"postgres://us er:p%zz@host/db":                   "postgres://…",
	} {
		if got := storeLabel(in); got != want {
			t.Errorf("storeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
