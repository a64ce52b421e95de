package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
	"github.com/sessionmem/sessionmem/storage/storecopy"
)

// The people commands on a PostgreSQL store: each gives exactly the output it gives on a local
// store seeded the same way, and no output or log line carries the URL's password.

// seedPG returns the URL of a fresh database holding a copy of the local store dir (entry ids
// are random, so seeding both through memory would not give the same sessions).
func seedPG(t *testing.T, dir string) string {
	t.Helper()
	u := pgtest.Shared(t).NewDatabase(t)
	ctx := context.Background()
	dst, err := postgres.Open(ctx, u, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	src, err := local.Open(dir, local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err := storecopy.Copy(ctx, dst, src, storecopy.Options{Key: memory.RecordKey, Barrier: memory.RecordBarrier})
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("seed the database: %+v, %v", res, err)
	}
	return u
}

// both runs a command line on the local and the PostgreSQL store and checks the outputs are
// the same once each store's name is replaced by STORE.
func both(t *testing.T, dir, pg string, stdin string, args ...string) cliResult {
	t.Helper()
	run := func(store string) cliResult {
		r := runCLI(t, stdin, append(args, "--store", store)...)
		for _, s := range []string{store, storeLabel(store)} {
			r.stdout = strings.ReplaceAll(r.stdout, s, "STORE")
			r.stderr = strings.ReplaceAll(r.stderr, s, "STORE")
		}
		return r
	}
	a, b := run(dir), run(pg)
	// A compaction made by a command has a random entry id and the real time (commands run
	// memory with the real clock), a little apart on the two stores.
	a.stdout, b.stdout = normalize(a.stdout), normalize(b.stdout)
	if a.code != b.code || a.stdout != b.stdout || a.stderr != b.stderr {
		t.Fatalf("%v differs between the stores:\nlocal exit %d\n%s%s\npostgres exit %d\n%s%s", args, a.code, a.stdout, a.stderr, b.code, b.stdout, b.stderr)
	}
	noSecret(t, b.stdout+b.stderr)
	return b
}

var (
	compactionRE = regexp.MustCompile(`"type":"compaction","entry_id":"[0-9a-f]+","ts":"[^"]+"`)
	realTimeRE   = regexp.MustCompile(regexp.QuoteMeta(time.Now().UTC().Format("2006-01-02")) + `[ T][0-9:.]+(Z| UTC)?`)
)

// normalize hides what differs between two stores that ran the same commands a little apart.
func normalize(s string) string {
	s = compactionRE.ReplaceAllString(s, "COMPACTION")
	// verify's report on the search index names what each backend keeps (a file beside a
	// local store); the rest of the output must agree.
	s = searchIndexRE.ReplaceAllString(s, "")
	return realTimeRE.ReplaceAllString(s, "NOW")
}

var searchIndexRE = regexp.MustCompile(`(?m)^Search index: .*\n`)

func noSecret(t *testing.T, text string) {
	t.Helper()
	if pw := pgtest.Shared(t).Password; strings.Contains(text, pw) {
		t.Fatalf("the database password appears in:\n%s", text)
	}
}

func TestCLIOnPostgres(t *testing.T) {
	t.Setenv(envLLMURL, "")
	t.Setenv(envLLMModel, "")
	t.Setenv(envLLMAPIKey, "")
	dir := seedStore(t)
	pg := seedPG(t, dir)
	both(t, dir, pg, "", "list")
	both(t, dir, pg, "", "list", "--json")
	both(t, dir, pg, "", "list", "--query", "ALPHA")
	both(t, dir, pg, "", "list", "--working-dir", "/work/beta/")
	both(t, dir, pg, "", "show", seedAlpha)
	both(t, dir, pg, "", "show", seedAlpha, "--all", "--json")
	both(t, dir, pg, "", "show", "nope")
	both(t, dir, pg, "", "compact", seedAlpha, "--keep-recent-tokens", "20")
	both(t, dir, pg, "", "show", seedAlpha)
	both(t, dir, pg, "", "compact", seedBeta, "--json")
	both(t, dir, pg, "", "export", seedAlpha)
	exported := runCLI(t, "", "export", seedAlpha, "--store", pg).must(t).stdout
	both(t, dir, pg, "", "prune", "--max-sessions", "1", "--protect", "1m", "--dry-run")
	both(t, dir, pg, "", "verify")
	both(t, dir, pg, "", "verify", "--repair")

	checkStatsOnBoth(t, dir, pg)
	checkImportIntoDatabase(t, exported)
	checkHookIntoDatabase(t)
	both(t, dir, pg, "", "delete", "--yes", seedBeta)
	both(t, dir, pg, "", "list")
	into := checkMigrateBothWays(t, dir, pg)
	checkReindexOnDatabase(t, dir, into)
}

// checkStatsOnBoth: stats gives the same counts on both stores; sizes are each store's own.
func checkStatsOnBoth(t *testing.T, dir, pg string) {
	for _, store := range []string{dir, pg} {
		r := runCLI(t, "", "stats", "--json", "--store", store).must(t)
		var st storeStats
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatal(err)
		}
		if st.Sessions != 2 || st.Messages != 9 || st.Compactions != 1 || st.SessionBytes <= 0 || st.StoreBytes < st.SessionBytes {
			t.Fatalf("stats of %s: %+v", storeLabel(store), st)
		}
		noSecret(t, r.stdout)
	}
	r := runCLI(t, "", "stats", "--store", pg).must(t)
	if !strings.Contains(r.stdout, "In database   ") || !strings.Contains(r.stdout, "Store         "+storeLabel(pg)) {
		t.Fatalf("stats:\n%s", r.stdout)
	}
}

// checkImportIntoDatabase: an export imported into a fresh database, twice (the second adds
// nothing), exports the same bytes again.
func checkImportIntoDatabase(t *testing.T, exported string) {
	file := filepath.Join(t.TempDir(), "alpha.jsonl")
	if err := os.WriteFile(file, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := pgtest.Shared(t).NewDatabase(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	r := runCLI(t, "", "import", "--file", file, "--store", fresh).must(t)
	if !strings.Contains(r.stdout, "sess-alpha (new)") {
		t.Fatalf("import:\n%s", r.stdout)
	}
	r = runCLI(t, "", "import", "--file", file, "--store", fresh).must(t)
	if m := totalRE.FindStringSubmatch(r.stdout); m == nil || m[1] != "0" {
		t.Fatalf("second import:\n%s", r.stdout)
	}
	if again := runCLI(t, "", "export", seedAlpha, "--store", fresh).must(t).stdout; again != exported {
		t.Fatalf("export → import → export changed the bytes")
	}
}

// checkHookIntoDatabase: a Claude Code Stop hook imports the transcript into the database.
func checkHookIntoDatabase(t *testing.T) {
	transcriptPath := copyFixture(t, "claude-code.jsonl", t.TempDir(), "projects/-work-proj/"+ccSession+".jsonl")
	hookDB := pgtest.Shared(t).NewDatabase(t)
	r := runCLI(t, hookPayload(t, map[string]string{"session_id": ccSession, "transcript_path": transcriptPath, "cwd": "/work/proj", "hook_event_name": "Stop"}),
		"hook", "claude-code", "--store", hookDB)
	if r.code != 0 {
		t.Fatalf("hook: exit %d, %s", r.code, r.stderr)
	}
	if got := listJSON(t, hookDB); len(got) != 1 || got[0].ID != ccFixtureID || got[0].MessageCount != 7 {
		t.Fatalf("after the hook: %+v", got)
	}
}

// checkMigrateBothWays migrates pg to a directory and that to a new database, twice (the
// second copies nothing), and returns the new database.
func checkMigrateBothWays(t *testing.T, dir, pg string) string {
	back := t.TempDir()
	r := runCLI(t, "", "migrate", "--from", pg, "--to", back).must(t)
	noSecret(t, r.stdout+r.stderr)
	if !strings.Contains(r.stdout, "1 session, ") || !strings.Contains(r.stdout, "(1 created, 0 completed, 0 already up to date)") {
		t.Fatalf("migrate to a directory:\n%s", r.stdout)
	}
	if a, b := runCLI(t, "", "export", seedAlpha, "--store", back).must(t).stdout, runCLI(t, "", "export", seedAlpha, "--store", pg).must(t).stdout; a != b {
		t.Fatalf("the migrated session exports differently")
	}
	into := pgtest.Shared(t).NewDatabase(t)
	runCLI(t, "", "migrate", "--from", back, "--to", into).must(t)
	r = runCLI(t, "", "migrate", "--from", back, "--to", into).must(t)
	if !strings.Contains(r.stdout, "0 records copied (0 created, 0 completed, 1 already up to date)") {
		t.Fatalf("second migrate:\n%s", r.stdout)
	}
	if a, b := normalize(runCLI(t, "", "show", seedAlpha, "--all", "--store", into).must(t).stdout), normalize(runCLI(t, "", "show", seedAlpha, "--all", "--store", dir).must(t).stdout); a != b {
		t.Fatalf("show differs after local → postgres → local → postgres:\n%s\n---\n%s", a, b)
	}
	return into
}

// checkReindexOnDatabase: reindex on a database builds the documents the store lacks (none
// here: every save and every migrated record wrote its own), with progress; search then
// finds the text on both stores.
func checkReindexOnDatabase(t *testing.T, dir, into string) {
	r := runCLI(t, "", "reindex", "--store", into).must(t)
	if !strings.Contains(r.stdout, "Search documents cover") || !strings.Contains(r.stderr, "reindex:") {
		t.Fatalf("reindex on PostgreSQL:\n%s\n%s", r.stdout, r.stderr)
	}
	if f := strings.Fields(r.stdout); len(f) < 6 || f[3] != f[5] {
		t.Fatalf("reindex left records without documents: %s", r.stdout)
	}
	for _, store := range []string{dir, into} {
		if r := runCLI(t, "", "search", "main file", "--json", "--store", store).must(t); !strings.Contains(r.stdout, seedAlpha) {
			t.Fatalf("search on %s does not find the seeded text:\n%s", store, r.stdout)
		}
	}
}

// TestCLIUnreachableDatabase: a wrong password, a missing database or a closed port is one
// clear line and exit 1, without the password; the first two say what to fix, not that the
// database is unreachable.
func TestCLIUnreachableDatabase(t *testing.T) {
	c := pgtest.Shared(t)
	good := c.NewDatabase(t)
	wrong := strings.Replace(good, c.Password, "wrong-password-123", 1)
	closed := strings.Replace(good, ":"+strconv.Itoa(c.Port)+"/", ":1/", 1)
	noDB := good[:strings.LastIndex(good, "/")] + "/no_such_db?sslmode=disable"
	for _, tc := range []struct {
		name, url, secret string
		want              []string
		unreachable       bool
	}{
		{"wrong password", wrong, "wrong-password-123", []string{"password authentication failed", "check the user name and password in the store URL"}, false},
		{"no database", noDB, c.Password, []string{`database "no_such_db" does not exist`, "create the database"}, false},
		{"closed port", closed, c.Password, []string{"connection refused", "unreachable"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{{"list"}, {"stats"}, {"show", "x"}, {"verify"}, {"migrate", "--from", t.TempDir(), "--to", tc.url}} {
				if args[0] != "migrate" {
					args = append(args, "--store", tc.url)
				}
				r := runCLI(t, "", args...)
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code != 1 || len(lines) != 1 || strings.Contains(r.stderr, "unreachable") != tc.unreachable {
					t.Fatalf("%v: exit %d, stderr:\n%s", args, r.code, r.stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(r.stderr, w) {
						t.Fatalf("%v: want %q in:\n%s", args, w, r.stderr)
					}
				}
				if strings.Contains(r.stdout+r.stderr, tc.secret) {
					t.Fatalf("%v: password in output:\n%s", args, r.stderr)
				}
			}
		})
	}
}
