package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCLIStats(t *testing.T) {
	store := seedStore(t)
	r := runCLI(t, "", "stats", "--json", "--store", store).must(t)
	var st storeStats
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Sessions != 2 || st.Messages != 9 || st.Compactions != 0 || st.Unreadable != 0 {
		t.Fatalf("stats = %+v", st)
	}
	if st.RawBytes < 6000 || st.SessionBytes <= 0 || st.StoreBytes < st.SessionBytes || st.Ratio <= 1 {
		t.Fatalf("sizes = %+v (the repeated tool output must compress)", st)
	}
	r = runCLI(t, "", "stats", "--store", store).must(t)
	for _, want := range []string{"Sessions      2\n", "Messages      9\n", "Raw JSONL     ", "On disk       ", "Ratio         "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stats lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.stderr != "" {
		t.Errorf("stats wrote to stderr off a terminal: %q", r.stderr)
	}
}

func TestCLIVerify(t *testing.T) {
	for _, tt := range cliVerifyCases() {
		t.Run(tt.name, func(t *testing.T) { runCLIVerifyCase(t, tt) })
	}
}

// cliVerifyCase is a damage done to a seeded store (to sess-alpha) and what verify must say.
type cliVerifyCase struct {
	name     string
	damage   func(t *testing.T, store string)
	repair   bool
	wantCode int
	want     []string // in stdout
	wantErr  string   // in stderr ("" means stderr must be empty)
	cut      int64    // bytes --repair must cut from the damaged file (sess-alpha)
	suffix   string   // that file
}

// cliVerifyCases are TestCLIVerify's cases.
func cliVerifyCases() []cliVerifyCase {
	garbage := []byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07}
	return []cliVerifyCase{
		{"clean store", nil, false, 0,
			[]string{"Checked 2 sessions: 2 ok, 0 torn (to repair), 0 damaged.\n"}, "", 0, ""},
		{"torn end is reported, not cut, without --repair", func(t *testing.T, store string) {
			appendBytes(t, sessionFile(store, seedAlpha, ".zst"), garbage)
		}, false, 0, []string{"WARNING   sess-alpha: torn end of sealed log (7 bytes at offset ",
			"Checked 2 sessions: 1 ok, 1 torn (to repair), 0 damaged.\n", "Run 'sessionmem verify --repair'"}, "", 0, ".zst"},
		{"torn end is repaired", func(t *testing.T, store string) {
			appendBytes(t, sessionFile(store, seedAlpha, ".zst"), garbage)
		}, true, 0, []string{"REPAIRED  sess-alpha: cut torn end of sealed log (7 bytes at offset ",
			"Checked 2 sessions: 1 ok, 1 repaired, 0 damaged.\n"}, "", 7, ".zst"},
		{"torn tail line is repaired", func(t *testing.T, store string) {
			// A session at rest is its .zst alone; one being written has a tail too.
			p := sessionFile(store, seedAlpha, ".tail.jsonl")
			if _, err := os.Stat(p); os.IsNotExist(err) {
				if err := os.WriteFile(p, []byte("{\"v\":2,\"tail\":\"sess-alpha\"}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			appendBytes(t, p, []byte(`{"seq":99,"type":"mess`))
		}, true, 0, []string{"REPAIRED  sess-alpha: cut torn end of tail (22 bytes at offset ",
			"1 ok, 1 repaired, 0 damaged"}, "", 22, ".tail.jsonl"},
		{"damage in a frame", flipLastFrame, false, 1,
			[]string{"DAMAGED   sess-alpha: last record at offset ", "1 ok, 0 torn (to repair), 1 damaged", "restore those sessions"},
			"1 damaged sessions", 0, ".zst"},
		{"damage in a frame is not cut by --repair", flipLastFrame, true, 1,
			[]string{"DAMAGED   sess-alpha", "1 ok, 0 repaired, 1 damaged"}, "1 damaged sessions", 0, ".zst"},
		{"newer format is not checked", func(t *testing.T, store string) {
			p := sessionFile(store, seedAlpha, ".tail.jsonl")
			if err := os.WriteFile(p, []byte("{\"v\":9,\"tail\":\"sess-alpha\"}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, true, 1, []string{"NEWER     sess-alpha: tail has format version 9",
			"Checked 2 sessions: 1 ok, 0 repaired, 0 damaged, 1 written by a newer sessionmem (not checked).\n"},
			"1 sessions not checked: upgrade sessionmem", 0, ".tail.jsonl"},
	}
}

// runCLIVerifyCase damages a fresh seeded store as tt says, runs verify and checks its exit
// code, output, the bytes cut, and that the store reads back afterwards.
func runCLIVerifyCase(t *testing.T, tt cliVerifyCase) {
	store := seedStore(t)
	var path string
	var before int64
	if tt.damage != nil {
		tt.damage(t, store)
		path = sessionFile(store, seedAlpha, tt.suffix)
		before = fileSize(t, path)
	}
	args := []string{"verify", "--store", store}
	if tt.repair {
		args = append(args, "--repair")
	}
	r := runCLI(t, "", args...)
	if r.code != tt.wantCode {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.wantCode, r.stdout, r.stderr)
	}
	for _, w := range tt.want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
		}
	}
	if tt.wantErr == "" && r.stderr != "" || !strings.Contains(r.stderr, tt.wantErr) {
		t.Errorf("stderr = %q, want %q", r.stderr, tt.wantErr)
	}
	if path != "" {
		if got, want := fileSize(t, path), before-tt.cut; got != want {
			t.Fatalf("%s: %d bytes after verify, want %d", filepath.Base(path), got, want)
		}
	}
	if tt.wantCode == 0 {
		// Whatever was cut, the session reads back and checks clean now.
		runCLI(t, "", "show", seedAlpha, "--store", store).must(t)
		r := runCLI(t, "", "verify", "--store", store).must(t)
		if tt.repair && !strings.Contains(r.stdout, "2 ok") {
			t.Fatalf("after repair:\n%s", r.stdout)
		}
	}
	// The other session stays readable.
	runCLI(t, "", "show", seedBeta, "--store", store).must(t)
}

// sessionFile is the path of a local store's session file.
func sessionFile(store, id, suffix string) string { return filepath.Join(store, "sessions", id+suffix) }

// flipLastFrame damages sess-alpha's last sealed record in the middle of its frame.
func flipLastFrame(t *testing.T, store string) {
	t.Helper()
	zst := sessionFile(store, seedAlpha, ".zst")
	b, err := os.ReadFile(zst)
	if err != nil {
		t.Fatal(err)
	}
	// The last bytes belong to the last compressed frame; flip some in its middle.
	for i := len(b) - 40; i < len(b)-30; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(zst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCLIPrune(t *testing.T) {
	// Prune reads serve's retention settings when no flag gives a limit: none here.
	t.Setenv(envMaxSessions, "")
	t.Setenv(envMaxAge, "")
	// The seeded sessions are dated around cliTestNow, months before the real clock retention
	// uses, so both are "old".
	t.Run("dry run lists and keeps", func(t *testing.T) {
		store := seedStore(t)
		r := runCLI(t, "", "prune", "--max-sessions", "1", "--dry-run", "--store", store).must(t)
		if got, want := r.stdout, "  sess-alpha\nWould delete 1 sessions; kept 1.\n"; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
		if got := listJSON(t, store); len(got) != 2 {
			t.Fatalf("dry run deleted: %+v", got)
		}
	})
	t.Run("max sessions", func(t *testing.T) {
		store := seedStore(t)
		r := runCLI(t, "", "prune", "--max-sessions", "1", "--yes", "--store", store).must(t)
		if got, want := r.stdout, "  sess-alpha\nDeleted 1 sessions; kept 1.\n"; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
		if got := listJSON(t, store); len(got) != 1 || got[0].ID != seedBeta {
			t.Fatalf("left: %+v", got)
		}
	})
	t.Run("max age in days", func(t *testing.T) {
		store := seedStore(t)
		runCLI(t, "", "prune", "--max-age", "30d", "--yes", "--store", store).must(t)
		if got := listJSON(t, store); len(got) != 0 {
			t.Fatalf("left: %+v", got)
		}
	})
	t.Run("protect keeps recent sessions", func(t *testing.T) {
		store := seedStore(t)
		r := runCLI(t, "", "prune", "--max-age", "1h", "--protect", "100000h", "--yes", "--store", store).must(t)
		if !strings.Contains(r.stdout, "Nothing to delete; kept 2 (2 over a limit but in use).") {
			t.Fatalf("stdout = %q", r.stdout)
		}
	})
	t.Run("asks on a terminal", func(t *testing.T) {
		fakeTerminal(t)
		store := seedStore(t)
		r := runCLI(t, "no\n", "prune", "--max-sessions", "1", "--store", store)
		if r.code != 1 || !strings.Contains(r.stderr, "Delete these 1 sessions? [y/N]") || !strings.Contains(r.stdout, "Would delete 1") {
			t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
		}
		runCLI(t, "y\n", "prune", "--max-sessions", "1", "--store", store).must(t)
		if got := listJSON(t, store); len(got) != 1 {
			t.Fatalf("left: %+v", got)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no limit", []string{"prune", "--yes"}, "give a limit"},
		{"bad age", []string{"prune", "--max-age", "soon", "--yes"}, "want a duration"},
		{"pipe without yes", []string{"prune", "--max-age", "9d"}, "pass --yes"},
		{"negative count", []string{"prune", "--max-sessions", "-2", "--yes"}, "--max-sessions must be"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", append(tt.args, "--store", t.TempDir())...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
		})
	}
}

// TestCLIPruneLimitsFromEnvironment: prune applies serve's retention settings
// (SESSIONMEM_MAX_SESSIONS, SESSIONMEM_MAX_AGE) when its flags do not give a limit, says so on
// stderr, and a flag wins over its variable.
func TestCLIPruneLimitsFromEnvironment(t *testing.T) {
	const fromEnv = "Limits from the environment: "
	tests := []struct {
		name       string
		maxSess    string // SESSIONMEM_MAX_SESSIONS
		maxAge     string // SESSIONMEM_MAX_AGE
		args       []string
		code       int
		wantOut    string // all of stdout
		wantErr    string // in stderr; "" means stderr must be empty
		notInError string
	}{
		{"max sessions", "1", "", nil, 0, "  sess-alpha\nWould delete 1 sessions; kept 1.\n",
			fromEnv + "SESSIONMEM_MAX_SESSIONS=1 (a flag overrides each).\n", ""},
		{"max age", "", "30d", nil, 0, "  sess-beta\n  sess-alpha\nWould delete 2 sessions; kept 0.\n",
			fromEnv + "SESSIONMEM_MAX_AGE=30d (a flag overrides each).\n", ""},
		{"both", "1", "30d", nil, 0, "  sess-beta\n  sess-alpha\nWould delete 2 sessions; kept 0.\n",
			fromEnv + "SESSIONMEM_MAX_SESSIONS=1, SESSIONMEM_MAX_AGE=30d (a flag overrides each).\n", ""},
		{"flag wins", "1", "", []string{"--max-sessions", "5"}, 0, "Nothing to delete; kept 2.\n", "", ""},
		{"a flag of 0 lifts its variable", "1", "30d", []string{"--max-age", "0"}, 0, "  sess-alpha\nWould delete 1 sessions; kept 1.\n",
			fromEnv + "SESSIONMEM_MAX_SESSIONS=1 (a flag", "MAX_AGE"},
		{"a flag wins over a bad variable", "", "soon", []string{"--max-age", "30d"}, 0, "  sess-beta\n  sess-alpha\nWould delete 2 sessions; kept 0.\n", "", ""},
		{"bad variable", "", "soon", nil, 2, "", `SESSIONMEM_MAX_AGE="soon": want a duration such as 90d`, ""},
		{"bad count", "many", "", nil, 2, "", `SESSIONMEM_MAX_SESSIONS="many": want a number of sessions`, ""},
		{"no limit anywhere", "", "", nil, 2, "", "give a limit: --max-sessions N and/or --max-age D (or set SESSIONMEM_MAX_SESSIONS / SESSIONMEM_MAX_AGE, as for serve)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envMaxSessions, tt.maxSess)
			t.Setenv(envMaxAge, tt.maxAge)
			store := seedStore(t)
			r := runCLI(t, "", append([]string{"prune", "--dry-run", "--store", store}, tt.args...)...)
			if r.code != tt.code || r.stdout != tt.wantOut {
				t.Fatalf("exit %d, want %d\nstdout: %q\nwant:   %q\nstderr: %q", r.code, tt.code, r.stdout, tt.wantOut, r.stderr)
			}
			if (tt.wantErr == "" && r.stderr != "") || !strings.Contains(r.stderr, tt.wantErr) ||
				(tt.notInError != "" && strings.Contains(r.stderr, tt.notInError)) {
				t.Fatalf("stderr: %q\nwant in it: %q", r.stderr, tt.wantErr)
			}
		})
	}
	t.Run("deletes by the variable", func(t *testing.T) {
		t.Setenv(envMaxSessions, "1")
		store := seedStore(t)
		runCLI(t, "", "prune", "--yes", "--store", store).must(t)
		if got := listJSON(t, store); len(got) != 1 || got[0].ID != seedBeta {
			t.Fatalf("left: %+v", got)
		}
	})
}
