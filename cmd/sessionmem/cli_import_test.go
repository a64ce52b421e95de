package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Fixture sessions (cmd/sessionmem/testdata), as the transcript package names them.
const (
	ccFixtureID    = "cc-11111111-2222-3333-4444-555555555555"
	piFixtureID    = "pi-0195a3b0-1111-7000-8000-000000000001"
	codexFixtureID = "codex-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
)

// copyFixture copies testdata/name to dir/rel (creating directories) and returns the path.
func copyFixture(t testing.TB, name, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var totalRE = regexp.MustCompile(`Imported (\d+) items into (\d+) sessions \((\d+) new\) from (\d+) of (\d+) files; (\d+) unchanged`)

func TestCLIImport(t *testing.T) {
	src := t.TempDir()
	cc := copyFixture(t, "claude-code.jsonl", src, "claude/projects/-work-proj/11111111-2222-3333-4444-555555555555.jsonl")
	pi := copyFixture(t, "pi.jsonl", src, "pi/--work-other--/2026-03-02T09-00-00-000Z_0195a3b0-1111-7000-8000-000000000001.jsonl")
	codex := copyFixture(t, "codex.jsonl", src, "codex/2026/03/03/rollout-2026-03-03T08-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl")

	tests := []struct {
		name    string
		args    []string
		session string
		added   int
	}{
		{"claude code directory", []string{"--claude-code", filepath.Join(src, "claude", "projects")}, ccFixtureID, 8},
		{"pi file", []string{"--pi", pi}, piFixtureID, 4},
		{"codex directory", []string{"--codex", filepath.Join(src, "codex")}, codexFixtureID, 4},
		{"auto-detected files", []string{"--file", cc, pi, codex}, "", 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := t.TempDir()
			args := append([]string{"import", "--store", store}, tt.args...)
			r := runCLI(t, "", args...).must(t)
			m := totalRE.FindStringSubmatch(r.stdout)
			if m == nil || m[1] != itoa(tt.added) {
				t.Fatalf("first import:\n%s\nwant %d added", r.stdout, tt.added)
			}
			if tt.session != "" && (!strings.Contains(r.stdout, "+"+itoa(tt.added)) || !strings.Contains(r.stdout, tt.session+" (new)")) {
				t.Fatalf("per-file line missing:\n%s", r.stdout)
			}
			r = runCLI(t, "", args...).must(t)
			m = totalRE.FindStringSubmatch(r.stdout)
			if m == nil || m[1] != "0" || m[2] != "0" || m[4] != "0" || m[5] != m[6] {
				t.Fatalf("second import added something:\n%s", r.stdout)
			}
			if strings.Contains(r.stdout, "+") {
				t.Fatalf("second import printed per-file additions:\n%s", r.stdout)
			}
		})
	}

	t.Run("default root", func(t *testing.T) {
		t.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(src, "claude"))
		store := t.TempDir()
		r := runCLI(t, "", "import", "--claude-code", "--store", store).must(t)
		if !strings.Contains(r.stdout, ccFixtureID) {
			t.Fatalf("stdout:\n%s", r.stdout)
		}
		got := listJSON(t, store)
		if len(got) != 1 || got[0].WorkingDir != "/work/proj" || got[0].Compactions != 1 {
			t.Fatalf("sessions = %+v", got)
		}
	})
	t.Run("missing default root", func(t *testing.T) {
		t.Setenv("CODEX_HOME", filepath.Join(src, "nowhere"))
		r := runCLI(t, "", "import", "--codex", "--store", t.TempDir())
		if r.code != 1 || !strings.Contains(r.stderr, "no codex transcripts to import") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("missing path", func(t *testing.T) {
		r := runCLI(t, "", "import", "--file", filepath.Join(src, "nope.jsonl"), "--store", t.TempDir())
		if r.code != 1 || !strings.Contains(r.stderr, "nope.jsonl does not exist") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("unrecognized file fails alone", func(t *testing.T) {
		junk := filepath.Join(t.TempDir(), "junk.jsonl")
		if err := os.WriteFile(junk, []byte("{\"hello\":1}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		store := t.TempDir()
		r := runCLI(t, "", "import", "--file", junk, pi, "--store", store)
		if r.code != 1 || !strings.Contains(r.stderr, "failed  "+junk+": not a transcript sessionmem imports") ||
			strings.Count(r.stderr, junk) != 1 || !strings.Contains(r.stdout, ", 1 failed.") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if got := listJSON(t, store); len(got) != 1 || got[0].ID != piFixtureID {
			t.Fatalf("the good file was not imported: %+v", got)
		}
	})
}

func itoa(n int) string { return thousands(int64(n)) }

func TestCLIImportGrowingFile(t *testing.T) {
	dir := t.TempDir()
	full, err := os.ReadFile(filepath.Join("testdata", "claude-code.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(full), "\n")
	path := filepath.Join(dir, "11111111-2222-3333-4444-555555555555.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:6], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	runCLI(t, "", "import", "--claude-code", path, "--store", store).must(t)
	first := listJSON(t, store)[0].MessageCount
	appendBytes(t, path, []byte(strings.Join(lines[6:], "")))
	r := runCLI(t, "", "import", "--claude-code", path, "--store", store).must(t)
	if m := totalRE.FindStringSubmatch(r.stdout); m == nil || m[1] == "0" {
		t.Fatalf("re-import of the grown file:\n%s", r.stdout)
	}
	if got := listJSON(t, store)[0]; got.MessageCount <= first || got.Compactions != 1 {
		t.Fatalf("after growth: %+v (had %d messages)", got, first)
	}
}

func TestCLIExportImportRoundTrip(t *testing.T) {
	store := seedStore(t)
	runCLI(t, "", "compact", seedAlpha, "--keep-recent-tokens", "20", "--summarizer", "extractive", "--store", store).must(t)
	out := filepath.Join(t.TempDir(), "alpha.jsonl")
	r := runCLI(t, "", "export", seedAlpha, "-o", out, "--store", store).must(t)
	if r.stdout != "" || !strings.Contains(r.stderr, "Exported sess-alpha to "+out) {
		t.Fatalf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
	exported, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(exported), `{"type":"sessionmem_export"`) {
		t.Fatalf("export starts with %q", string(exported[:min(80, len(exported))]))
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Errorf("export mode = %v, want 0600", fi.Mode().Perm())
	}
	stdout := runCLI(t, "", "export", seedAlpha, "--store", store).must(t).stdout
	if stdout != string(exported) {
		t.Fatalf("stdout export differs from -o export")
	}

	fresh := t.TempDir()
	r = runCLI(t, "", "import", "--file", out, "--store", fresh).must(t)
	if !strings.Contains(r.stdout, "sess-alpha (new)") {
		t.Fatalf("import:\n%s", r.stdout)
	}
	r = runCLI(t, "", "import", "--file", out, "--store", fresh).must(t)
	if m := totalRE.FindStringSubmatch(r.stdout); m == nil || m[1] != "0" {
		t.Fatalf("second import:\n%s", r.stdout)
	}
	again := runCLI(t, "", "export", seedAlpha, "--store", fresh).must(t).stdout
	if again != string(exported) {
		t.Fatalf("export → import → export changed the bytes:\n%s\n---\n%s", exported, again)
	}
	orig, copied := listJSON(t, store, "--query", "alpha")[0], listJSON(t, fresh)[0]
	if orig.MessageCount != copied.MessageCount || orig.Compactions != copied.Compactions || orig.WorkingDir != copied.WorkingDir {
		t.Fatalf("copy = %+v, original %+v", copied, orig)
	}
}

func TestCLIImportWatch(t *testing.T) {
	dir := t.TempDir()
	path := copyFixture(t, "pi.jsonl", dir, "s.jsonl")
	store := t.TempDir()
	// Stop watching once the first import is recorded (its checkpoint file appears), not after
	// a fixed time: under load the first import alone took longer than a fixed 400 ms.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if m, _ := filepath.Glob(filepath.Join(store, "imports", "*.json")); len(m) > 0 {
				time.Sleep(100 * time.Millisecond) // a few more polls, which must add nothing
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	r := runCLIContext(ctx, t, "", "import", "--file", path, "--watch", "--interval", "20ms", "--store", store).must(t)
	if !strings.Contains(r.stdout, "+4") || !strings.Contains(r.stdout, "Stopped watching: 4 items added to 1 sessions.") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "Watching 1 path(s) every 20ms") {
		t.Fatalf("stderr: %q", r.stderr)
	}
}

// TestCLIImportWrongImporter gives each agent's transcript to the other importers: the
// import says the file is not of that kind and which importer to use, exits 1 and writes
// nothing (not even the store). The right importer still imports it, and again finds it
// unchanged.
func TestCLIImportWrongImporter(t *testing.T) {
	src := t.TempDir()
	cc := copyFixture(t, "claude-code.jsonl", src, "cc.jsonl")
	codex := copyFixture(t, "codex.jsonl", src, "codex.jsonl")
	pi := copyFixture(t, "pi.jsonl", src, "pi.jsonl")
	const (
		ccLines    = `(expected JSON lines with a "sessionId" and a "type" such as user, assistant or summary)`
		codexLines = `(expected JSON lines with a "type" such as session_meta or response_item and a "payload")`
		piLines    = `(expected a "type":"session" line with the working directory, then "type":"message" lines)`
	)
	tests := []struct {
		name, flag, file string
		want             string // the whole of stderr
	}{
		{"claude code as codex", "--codex", cc, cc + " does not look like a Codex transcript " + codexLines + "; it looks like a Claude Code transcript: try --claude-code"},
		{"claude code as pi", "--pi", cc, cc + " does not look like a pi transcript " + piLines + "; it looks like a Claude Code transcript: try --claude-code"},
		{"codex as claude code", "--claude-code", codex, codex + " does not look like a Claude Code transcript " + ccLines + "; it looks like a Codex transcript: try --codex"},
		{"codex as pi", "--pi", codex, codex + " does not look like a pi transcript " + piLines + "; it looks like a Codex transcript: try --codex"},
		{"pi as claude code", "--claude-code", pi, pi + " does not look like a Claude Code transcript " + ccLines + "; it looks like a pi transcript: try --pi"},
		{"pi as codex", "--codex", pi, pi + " does not look like a Codex transcript " + codexLines + "; it looks like a pi transcript: try --pi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			r := runCLI(t, "", "import", tt.flag, tt.file, "--store", store)
			if r.code != 1 || r.stderr != "sessionmem: "+tt.want+"\n" || r.stdout != "" {
				t.Fatalf("exit %d\nstdout: %q\nstderr: %q\nwant:   %q", r.code, r.stdout, r.stderr, "sessionmem: "+tt.want+"\n")
			}
			if _, err := os.Stat(store); !os.IsNotExist(err) {
				t.Fatalf("the refused import wrote the store (%v)", err)
			}
		})
	}
	t.Run("among right files", func(t *testing.T) {
		store := t.TempDir()
		r := runCLI(t, "", "import", "--pi", codex, pi, "--store", store)
		if r.code != 1 || !strings.Contains(r.stderr, "  failed  "+codex+" does not look like a pi transcript") ||
			!strings.Contains(r.stdout, "from 1 of 2 files; 0 unchanged, 1 failed.") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		if got := listJSON(t, store); len(got) != 1 || got[0].ID != piFixtureID {
			t.Fatalf("sessions = %+v, want the pi one alone", got)
		}
		if m, _ := filepath.Glob(filepath.Join(store, "imports", "*")); len(m) != 2 { // pi's checkpoint and its lock
			t.Fatalf("import state: %v, want the pi file's alone", m)
		}
		again := runCLI(t, "", "import", "--pi", pi, "--store", store).must(t)
		if !strings.Contains(again.stdout, "from 0 of 1 files; 1 unchanged.") {
			t.Fatalf("the right file again:\n%s", again.stdout)
		}
	})
}
