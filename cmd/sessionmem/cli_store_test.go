package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// nonCreating are the command lines (without --store) of the commands that only read or change
// what is stored, which must refuse a missing store and create nothing.
var nonCreating = [][]string{
	{"list"}, {"list", "--json"}, {"show", seedAlpha}, {"search", "build"}, {"export", seedAlpha},
	{"stats"}, {"verify"}, {"reindex"}, {"redact", "--dry-run"}, {"prune", "--max-age", "9d", "--dry-run"},
	{"compact", seedAlpha}, {"delete", "--yes", seedAlpha}, {"ui", "--addr", "127.0.0.1:0"},
}

// eachNonCreating runs check in a subtest for every command line of nonCreating, twice: with
// the store given by --store and by SESSIONMEM_STORE. withStore returns the command line for
// a store (setting the variable in the subtest's environment for the second way).
func eachNonCreating(t *testing.T, check func(t *testing.T, cmd string, withStore func(store string) []string)) {
	for _, args := range nonCreating {
		for _, viaEnv := range []bool{false, true} {
			name := strings.Join(args, " ")
			if viaEnv {
				name += " via " + envStore
			}
			t.Run(name, func(t *testing.T) {
				check(t, args[0], func(store string) []string {
					a := append([]string{}, args...)
					if viaEnv {
						t.Setenv(envStore, store)
						return a
					}
					return append(a, "--store", store)
				})
			})
		}
	}
}

// TestCLIMissingStore: the commands that only read or change what is stored refuse a store
// directory that is not there (a mistyped --store or SESSIONMEM_STORE) and leave no
// directory behind; the commands that save create it, 0700, as serve does.
func TestCLIMissingStore(t *testing.T) {
	eachNonCreating(t, func(t *testing.T, cmd string, withStore func(string) []string) {
		store := filepath.Join(t.TempDir(), "typo")
		r := runCLI(t, "", withStore(store)...)
		want := "sessionmem: no store at " + store + " (nothing saved yet, or a wrong --store / SESSIONMEM_STORE)\n"
		if r.code != 1 || r.stderr != want || r.stdout != "" {
			t.Fatalf("exit %d\nstdout: %q\nstderr: %q\nwant:   %q", r.code, r.stdout, r.stderr, want)
		}
		if _, err := os.Stat(store); !os.IsNotExist(err) {
			t.Fatalf("%s created the missing store (%v)", cmd, err)
		}
	})
	t.Run("a file is no store", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "notes.txt")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, "", "list", "--store", file)
		if r.code != 1 || !strings.Contains(r.stderr, file+" is not a store directory but a file") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("a directory of other files is no store", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"list"}, {"search", "x"}, {"stats"}, {"reindex"}, {"verify"}} {
			r := runCLI(t, "", append(args, "--store", dir)...)
			if r.code != 1 || !strings.Contains(r.stderr, dir+" is not a sessionmem store") {
				t.Fatalf("%s: exit %d, stderr %q", args[0], r.code, r.stderr)
			}
		}
		// migrate only reads its source: the same refusal for --from.
		r := runCLI(t, "", "migrate", "--from", dir, "--to", filepath.Join(t.TempDir(), "copy"))
		if r.code != 1 || !strings.Contains(r.stderr, "--from "+dir+": not a sessionmem store") {
			t.Fatalf("migrate: exit %d, stderr %q", r.code, r.stderr)
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 1 {
			t.Fatalf("the directory holds %d entries (%v), want go.mod alone", len(ents), err)
		}
	})
	t.Run("an existing empty directory is an empty store", func(t *testing.T) {
		r := runCLI(t, "", "list", "--store", t.TempDir()).must(t)
		if r.stdout != "No sessions found.\n" {
			t.Fatalf("stdout %q", r.stdout)
		}
	})

	pi := copyFixture(t, "pi.jsonl", t.TempDir(), "s.jsonl")
	codex := copyFixture(t, "codex.jsonl", t.TempDir(), "rollout.jsonl")
	writers := []struct {
		name  string
		stdin string
		args  []string
	}{
		{"import", "", []string{"import", "--pi", pi}},
		{"hook", hookPayload(t, map[string]string{"session_id": "x", "transcript_path": codex, "hook_event_name": "Stop"}), []string{"hook", "codex"}},
	}
	for _, tt := range writers {
		t.Run(tt.name+" creates it", func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "new", "store")
			r := runCLI(t, tt.stdin, append(tt.args, "--store", store)...).must(t)
			fi, err := os.Stat(store)
			if err != nil || !fi.IsDir() || r.stderr != "" {
				t.Fatalf("store not created: %v (stderr %q)", err, r.stderr)
			}
			if got := listJSON(t, store); len(got) != 1 {
				t.Fatalf("sessions saved = %d, want 1", len(got))
			}
			if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700 {
				t.Errorf("store mode = %v, want 0700", fi.Mode().Perm())
			}
		})
	}
}

func TestSessionDetail(t *testing.T) {
	const id = "s-1"
	tests := []struct {
		msg, detail, about string
	}{
		{"session s-1: record at offset 9: checksum mismatch", "record at offset 9: checksum mismatch", "session s-1: record at offset 9: checksum mismatch"},
		{"session s-1: session s-1: record at offset 9", "record at offset 9", "session s-1: record at offset 9"},
		{"read source session s-1: session s-1: record at offset 9", "read source session s-1: record at offset 9", "read source session s-1: record at offset 9"},
		{"session s-1 is damaged beyond automatic repair; run 'sessionmem verify'", "session s-1 is damaged beyond automatic repair; run 'sessionmem verify'",
			"session s-1 is damaged beyond automatic repair; run 'sessionmem verify'"},
		{"disk full", "disk full", "session s-1: disk full"},
		{"session s-10: other", "session s-10: other", "session s-1: session s-10: other"},
	}
	for _, tt := range tests {
		if got := sessionDetail(id, tt.msg); got != tt.detail {
			t.Errorf("sessionDetail(%q) = %q, want %q", tt.msg, got, tt.detail)
		}
		if got := aboutSession(id, errors.New(tt.msg)); got != tt.about {
			t.Errorf("aboutSession(%q) = %q, want %q", tt.msg, got, tt.about)
		}
	}
}

// TestCLISessionNamedOnce: the commands' lines about a damaged session name it once (twice
// for migrate, whose store error says "read source session ID"), never "session ID: session
// ID:" as the error they print already names it.
func TestCLISessionNamedOnce(t *testing.T) {
	store := seedStore(t)
	flipLastFrame(t, store)
	tests := []struct {
		args []string
		code int
		max  int // mentions of the session on one line
		want string
	}{
		{[]string{"stats"}, 0, 1, "sessionmem stats: session sess-alpha: record at offset "},
		{[]string{"verify"}, 1, 1, "DAMAGED   sess-alpha: last record at offset "},
		{[]string{"redact", "--dry-run"}, 1, 1, "sessionmem redact: session sess-alpha is damaged beyond automatic repair"},
		{[]string{"export", seedAlpha}, 1, 1, "sessionmem: session sess-alpha is damaged beyond automatic repair"},
		{[]string{"export", seedAlpha, "-o", filepath.Join(t.TempDir(), "x.jsonl")}, 1, 1, "sessionmem: session sess-alpha is damaged beyond automatic repair"},
		{[]string{"show", seedAlpha}, 1, 1, "sessionmem: session sess-alpha is damaged beyond automatic repair"},
		{[]string{"compact", seedAlpha}, 1, 1, "sessionmem: session sess-alpha is damaged beyond automatic repair"},
		{[]string{"migrate", "--from", store, "--to", t.TempDir()}, 1, 2, "NOT COPIED  sess-alpha: read source session sess-alpha: record at offset "},
	}
	for _, tt := range tests {
		name := tt.args[0]
		if len(tt.args) > 2 && tt.args[0] == "export" {
			name += " to a file"
		}
		t.Run(name, func(t *testing.T) {
			args := tt.args
			if args[0] != "migrate" {
				args = append(args, "--store", store)
			}
			r := runCLI(t, "", args...)
			out := r.stdout + r.stderr
			if r.code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, want %d\noutput:\n%s\nwant in it: %q", r.code, tt.code, out, tt.want)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, " level=") {
					continue // the store's log: the session is an attribute, the error names it too
				}
				if n := strings.Count(line, seedAlpha); n > tt.max || strings.Contains(line, "session sess-alpha: session sess-alpha") {
					t.Errorf("the session is named %d times in %q", n, line)
				}
			}
		})
	}
}
