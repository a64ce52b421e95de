package transcript

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/local"

	"github.com/sessionmem/sessionmem/memory"
)

var fixtures = []string{"claude-code-a.jsonl", "claude-code-b.jsonl", "pi-v1.jsonl", "pi-v2.jsonl", "pi-v3.jsonl", "codex-rollout.jsonl"}

func newService(t *testing.T, dir string) *memory.Service {
	t.Helper()
	store, err := local.Open(dir, local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return memory.New(store, memory.Options{})
}

// transcriptCounts counts what a stored session holds, in rawCounts terms.
func transcriptCounts(t *testing.T, svc *memory.Service, id string) (rawCounts, memory.Transcript) {
	t.Helper()
	tr, err := svc.Transcript(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]memory.ImportItem, len(tr.Messages))
	for i := range tr.Messages {
		items[i].Message = &tr.Messages[i]
	}
	return parsedCounts(memory.ImportRequest{Items: items}), tr
}

func checkStored(t *testing.T, svc *memory.Service, id string, raw rawCounts) {
	t.Helper()
	got, _ := transcriptCounts(t, svc, id)
	if a, b := sorted(got.callIDs), sorted(raw.callIDs); !slices.Equal(a, b) {
		t.Errorf("stored tool calls: %d, want %d", len(a), len(b))
	}
	if a, b := sorted(got.resultIDs), sorted(raw.resultIDs); !slices.Equal(a, b) {
		t.Errorf("stored tool results: %d, want %d", len(a), len(b))
	}
	if a, b := len(got.prompts), len(raw.prompts); a != b {
		t.Errorf("stored user prompts: %d, want %d", a, b)
	}
	for _, p := range raw.prompts {
		if !slices.ContainsFunc(got.prompts, func(s string) bool { return strings.Contains(s, p) }) {
			t.Errorf("prompt %.60q not stored", p)
		}
	}
}

func TestImportFixtures(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // the time goes to fsync; overlap it
			ctx := t.Context()
			dir := t.TempDir()
			svc := newService(t, filepath.Join(dir, "store"))
			path := filepath.Join("..", "testdata", "transcripts", name)
			want, _, err := ParseFile(path, FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			im := &Importer{Svc: svc, StateDir: filepath.Join(dir, "imports")}
			res, err := im.ImportFile(ctx, path, FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Created || res.Added != len(want.Items) || res.SessionID != want.SessionID {
				t.Errorf("first import = %+v; want created, %d added to %s", res, len(want.Items), want.SessionID)
			}
			checkStored(t, svc, res.SessionID, countRaw(t, path, res.Format))
			// Again, with the checkpoint: nothing to parse, nothing added.
			res, err = im.ImportFile(ctx, path, FormatAuto)
			if err != nil || res.Added != 0 || res.Stats.Lines != 0 {
				t.Errorf("second import = %+v, %v; want nothing read or added", res, err)
			}
			// Again without any checkpoint: the ids alone keep it idempotent.
			res, err = (&Importer{Svc: svc}).ImportFile(ctx, path, FormatAuto)
			if err != nil || res.Added != 0 || res.Created {
				t.Errorf("stateless re-import = %+v, %v; want nothing added", res, err)
			}
			sess, err := svc.Get(ctx, want.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if sess.WorkingDir != want.WorkingDir || sess.Model != want.Model {
				t.Errorf("session = %q %q, want %q %q", sess.WorkingDir, sess.Model, want.WorkingDir, want.Model)
			}
		})
	}
}

// TestImportGrowing appends a transcript in pieces, importing after each, as Watch does; the
// store must end up exactly as after one import of the whole file.
func TestImportGrowing(t *testing.T) {
	for _, name := range fixtures {
		for _, hold := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/hold", false: "/nohold"}[hold], func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				dir := t.TempDir()
				data, err := os.ReadFile(filepath.Join("..", "testdata", "transcripts", name))
				if err != nil {
					t.Fatal(err)
				}
				// The reference: one import of the whole file.
				ref := newService(t, filepath.Join(dir, "ref"))
				refRes, err := (&Importer{Svc: ref}).ImportFile(ctx, filepath.Join("..", "testdata", "transcripts", name), FormatAuto)
				if err != nil {
					t.Fatal(err)
				}
				svc := newService(t, filepath.Join(dir, "store"))
				im := &Importer{Svc: svc, StateDir: filepath.Join(dir, "imports")}
				path := filepath.Join(dir, name)
				// Cut points: a third, half (inside a line), two thirds, the end.
				cuts := []int{len(data) / 3, len(data)/2 + 7, 2 * len(data) / 3, len(data)}
				total, calls := 0, 0
				for _, cut := range cuts {
					if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
						t.Fatal(err)
					}
					res, err := im.importFile(ctx, path, mustDetect(t, name), hold && cut < len(data))
					if err != nil {
						t.Fatalf("cut %d: %v", cut, err)
					}
					total += res.Added
					calls += res.Stats.ToolCalls
				}
				got, gotTr := transcriptCounts(t, svc, refRes.SessionID)
				want, wantTr := transcriptCounts(t, ref, refRes.SessionID)
				if !slices.Equal(sorted(got.callIDs), sorted(want.callIDs)) || !slices.Equal(sorted(got.resultIDs), sorted(want.resultIDs)) {
					t.Errorf("tool calls/results differ from a whole import")
				}
				if hold || !strings.HasPrefix(name, "claude") {
					// Without holding back, a Claude Code message cut in two stays two messages.
					if total != refRes.Added {
						t.Errorf("added %d in pieces, %d at once", total, refRes.Added)
					}
					if a, b := messagesJSON(t, gotTr), messagesJSON(t, wantTr); a != b {
						t.Errorf("stored messages differ from a whole import")
						for i := range min(len(gotTr.Messages), len(wantTr.Messages)) {
							if x, y := mustJSON(t, gotTr.Messages[i].ID), mustJSON(t, wantTr.Messages[i].ID); x != y {
								t.Fatalf("message %d: %s vs %s", i, x, y)
							}
						}
						t.Fatalf("%d vs %d messages; summary %.80q vs %.80q", len(gotTr.Messages), len(wantTr.Messages), summaryText(gotTr.Summary), summaryText(wantTr.Summary))
					}
				}
			})
		}
	}
}

// messagesJSON is a transcript's messages without the server-assigned entry ids, and its
// summary text. The file lists memory appends to an imported summary are left out: memory
// works them out from the tool calls of the same Import call only, so they depend on how the
// file was cut (see the report to the lead).
func messagesJSON(t *testing.T, tr memory.Transcript) string {
	msgs := slices.Clone(tr.Messages)
	for i := range msgs {
		msgs[i].EntryID = ""
	}
	return mustJSON(t, msgs) + summaryText(tr.Summary)
}

func TestExportRoundTrip(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dir := t.TempDir()
			svc := newService(t, filepath.Join(dir, "a"))
			res, err := (&Importer{Svc: svc}).ImportFile(ctx, filepath.Join("..", "testdata", "transcripts", name), FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			var first bytes.Buffer
			if err := Export(ctx, svc, res.SessionID, &first); err != nil {
				t.Fatal(err)
			}
			exp := filepath.Join(dir, "export.jsonl")
			if err := os.WriteFile(exp, first.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			if f, err := Detect(exp); f != FormatSessionmem {
				t.Fatalf("Detect(export) = %q, %v", f, err)
			}
			// Into the same store: nothing new.
			again, err := (&Importer{Svc: svc}).ImportFile(ctx, exp, FormatAuto)
			if err != nil || again.Added != 0 || again.SessionID != res.SessionID {
				t.Errorf("re-import of the export into its own store = %+v, %v; want nothing added", again, err)
			}
			// Into a fresh store, then out again: the same bytes.
			fresh := newService(t, filepath.Join(dir, "b"))
			res2, err := (&Importer{Svc: fresh}).ImportFile(ctx, exp, FormatSessionmem)
			if err != nil {
				t.Fatal(err)
			}
			var second bytes.Buffer
			if err := Export(ctx, fresh, res2.SessionID, &second); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first.Bytes(), second.Bytes()) {
				a, b := strings.Split(first.String(), "\n"), strings.Split(second.String(), "\n")
				for i := range min(len(a), len(b)) {
					if a[i] != b[i] {
						t.Fatalf("exports differ at line %d:\n%.400s\n%.400s", i+1, a[i], b[i])
					}
				}
				t.Fatalf("exports differ in length: %d vs %d lines", len(a), len(b))
			}
			// The resumable context survives too.
			r1, err1 := svc.Resume(ctx, memory.ResumeRequest{SessionID: res.SessionID, MaxTokens: 1 << 24})
			r2, err2 := fresh.Resume(ctx, memory.ResumeRequest{SessionID: res.SessionID, MaxTokens: 1 << 24})
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if r1.Summary != r2.Summary || len(r1.Messages) != len(r2.Messages) {
				t.Errorf("resume: %d messages after %d-byte summary, after round trip %d and %d", len(r1.Messages), len(r1.Summary), len(r2.Messages), len(r2.Summary))
			}
		})
	}
}

func TestPiCompactionKeeps(t *testing.T) {
	ctx := t.Context()
	svc := newService(t, t.TempDir())
	res, err := (&Importer{Svc: svc}).ImportFile(ctx, filepath.Join("..", "testdata", "transcripts", "pi-v2.jsonl"), FormatPi)
	if err != nil {
		t.Fatal(err)
	}
	r, err := svc.Resume(ctx, memory.ResumeRequest{SessionID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	// pi keeps from the entry d1b2c3d4 (the ls result) on: it and everything after.
	if len(r.Messages) == 0 || r.Messages[0].EntryID != "d1b2c3d4" {
		t.Fatalf("resume starts at %+v, want entry d1b2c3d4", r.Messages[:min(1, len(r.Messages))])
	}
	if !strings.HasPrefix(r.Summary, "The user asked for a file list") {
		t.Errorf("summary = %.60q", r.Summary)
	}
}

func TestImportErrors(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	svc := newService(t, filepath.Join(dir, "store"))
	im := &Importer{Svc: svc, StateDir: filepath.Join(dir, "imports")}
	text := filepath.Join(dir, "notes.jsonl")
	os.WriteFile(text, []byte("just text\n"), 0o600)
	newer := filepath.Join(dir, "newer.jsonl")
	os.WriteFile(newer, []byte(`{"type":"sessionmem_export","version":9,"session":{"id":"x"}}`+"\n"), 0o600)
	tests := []struct {
		name, path string
		format     Format
		want       error
	}{
		{"missing file", filepath.Join(dir, "nope.jsonl"), FormatAuto, fs.ErrNotExist},
		{"unknown format", text, FormatAuto, ErrUnknownFormat},
		{"bad format name", text, Format("word"), ErrUnknownFormat},
		{"newer export", newer, FormatAuto, ErrUnsupportedVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := im.ImportFile(ctx, tt.path, tt.format)
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if l, _ := svc.List(ctx, memory.ListRequest{}); len(l.Sessions) != 0 {
		t.Errorf("failed imports stored %d sessions", len(l.Sessions))
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	touch := func(rel string) string {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte("{}\n"), 0o600)
		return p
	}
	cc := []string{touch("claude/-home-a/1b.jsonl"), touch("claude/-home-b/2c.jsonl")}
	touch("claude/-home-a/agent-x.jsonl")
	touch("claude/-home-a/1b/subagents/agent-y.jsonl")
	touch("claude/-home-a/notes.txt")
	codex := []string{touch("codex/2025/09/01/rollout-2025-09-01T10-00-00-abc.jsonl")}
	touch("codex/history.jsonl")
	pi := []string{touch("pi/--srv-app--/2025-12-10T09-00-00-000Z_x.jsonl")}
	tests := []struct {
		kind Format
		root string
		want []string
	}{
		{FormatClaudeCode, "claude", cc},
		{FormatCodex, "codex", codex},
		{FormatPi, "pi", pi},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			got, err := Discover(tt.kind, filepath.Join(root, tt.root))
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Discover = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if _, err := Discover(FormatPi, filepath.Join(root, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: err = %v, want fs.ErrNotExist", err)
	}
}

func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := t.TempDir()
	svc := newService(t, filepath.Join(dir, "store"))
	im := &Importer{Svc: svc, StateDir: filepath.Join(dir, "imports")}
	data, err := os.ReadFile(filepath.Join("..", "testdata", "transcripts", "claude-code-a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := Parse(bytes.NewReader(data), FormatClaudeCode, ParseOptions{})
	watched := filepath.Join(dir, "sessions")
	os.MkdirAll(watched, 0o700)
	path := filepath.Join(watched, "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mu sync.Mutex
	added := 0
	var errs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A file counts as quiet (its last message complete) once unchanged for two intervals:
		// 200 ms, well above the writer's pauses (30 ms), which a loaded machine (CI runs the
		// packages in parallel, and a write can stall behind another test's fsync) stretches.
		// With 20 ms (quiet 40 ms) a pause of 25 ms plus a stall once let the watcher import a
		// message before its last lines were written: one message stored as two.
		im.Watch(ctx, []string{watched}, 100*time.Millisecond, func(r ImportResult, err error) {
			mu.Lock()
			defer mu.Unlock()
			added += r.Added
			if err != nil {
				errs = append(errs, err)
			}
		})
	}()
	// Write the transcript the way an agent does: line by line, in bursts.
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, l := range lines {
		f.Write(l)
		if i%15 == 0 {
			time.Sleep(30 * time.Millisecond) // the watcher polls in the middle of the file
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := added
		mu.Unlock()
		if n >= len(want.Items) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if len(errs) > 0 {
		t.Fatalf("watch errors: %v", errs)
	}
	got, _ := transcriptCounts(t, svc, want.SessionID)
	if a, b := sorted(got.callIDs), sorted(parsedCounts(want).callIDs); !slices.Equal(a, b) {
		t.Errorf("watched import has %d tool calls, want %d", len(a), len(b))
	}
	if added != len(want.Items) {
		t.Errorf("watch added %d items, want %d (no message split or repeated)", added, len(want.Items))
	}
}

// TestImportProcesses runs several processes importing the same transcripts into one store at
// once: each item must be stored exactly once.
func TestImportProcesses(t *testing.T) {
	if os.Getenv("TRANSCRIPT_HELPER_STORE") != "" {
		return // inside a helper: see TestHelperImport
	}
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	state := filepath.Join(dir, "imports")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	outs := make([][]byte, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperImport$")
			st := state
			if i == 2 {
				st = "" // one process without checkpoints: ids alone
			}
			cmd.Env = append(os.Environ(), "TRANSCRIPT_HELPER_STORE="+store, "TRANSCRIPT_HELPER_STATE="+st)
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
	}
	svc := newService(t, store)
	for _, name := range fixtures {
		if name == "pi-v3.jsonl" {
			continue // same session as pi-v2
		}
		req, _, _ := ParseFile(filepath.Join("..", "testdata", "transcripts", name), FormatAuto)
		_, tr := transcriptCounts(t, svc, req.SessionID)
		ids := map[string]int{}
		for _, m := range tr.Messages {
			ids[m.ID]++
		}
		n := 0
		for _, it := range req.Items {
			if it.Message != nil {
				n++
				if ids[it.Message.ID] != 1 {
					t.Errorf("%s: message %s stored %d times", name, it.Message.ID, ids[it.Message.ID])
				}
			}
		}
		if len(tr.Messages) != n {
			t.Errorf("%s: %d messages stored, want %d", name, len(tr.Messages), n)
		}
	}
}

// TestHelperImport is the body of TestImportProcesses' helper processes.
func TestHelperImport(t *testing.T) {
	store := os.Getenv("TRANSCRIPT_HELPER_STORE")
	if store == "" {
		t.Skip("helper process only")
	}
	svc := newService(t, store)
	im := &Importer{Svc: svc, StateDir: os.Getenv("TRANSCRIPT_HELPER_STATE")}
	for _, name := range fixtures {
		if name == "pi-v3.jsonl" {
			continue
		}
		if _, err := im.ImportFile(t.Context(), filepath.Join("..", "testdata", "transcripts", name), FormatAuto); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCorpus imports the four shared real transcripts, when present.
func TestCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		t.Skip("no corpus at " + corpusDir)
	}
	svc := newService(t, t.TempDir()) // one store for all: imports run side by side
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			im := &Importer{Svc: svc}
			res, err := im.ImportFile(t.Context(), f, FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			checkStored(t, svc, res.SessionID, countRaw(t, f, res.Format))
			again, err := (&Importer{Svc: svc}).ImportFile(t.Context(), f, FormatAuto)
			if err != nil || again.Added != 0 {
				t.Errorf("second import = %+v, %v; want nothing added", again, err)
			}
			if res.Stats.Unparsable != 0 || len(res.Stats.Unknown) != 0 {
				t.Errorf("stats: %d unparsable, unknown %v", res.Stats.Unparsable, res.Stats.Unknown)
			}
		})
	}
}

// A session deleted after an import (sessionmem delete, prune) stays deleted while its file is
// unchanged; once its agent goes on with it, the next import brings back the whole session,
// not a session of the new lines only (which it used to make).
func TestImportAfterDelete(t *testing.T) {
	for _, name := range []string{"claude-code-a.jsonl", "pi-v2.jsonl", "codex-rollout.jsonl"} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			data, err := os.ReadFile(filepath.Join("..", "testdata", "transcripts", name))
			if err != nil {
				t.Fatal(err)
			}
			ref := newService(t, filepath.Join(dir, "ref"))
			refRes, err := (&Importer{Svc: ref}).ImportFile(ctx, filepath.Join("..", "testdata", "transcripts", name), FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			svc := newService(t, filepath.Join(dir, "store"))
			im := &Importer{Svc: svc, StateDir: filepath.Join(dir, "imports")}
			path := filepath.Join(dir, name)
			cut := bytes.LastIndexByte(data[:len(data)/2], '\n') + 1
			if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := im.ImportFile(ctx, path, FormatAuto); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Delete(ctx, refRes.SessionID); err != nil {
				t.Fatal(err)
			}
			if res, err := im.ImportFile(ctx, path, FormatAuto); err != nil || res.Added != 0 {
				t.Fatalf("unchanged file after delete: added %d, %v", res.Added, err)
			}
			if _, err := svc.Get(ctx, refRes.SessionID); !errors.Is(err, memory.ErrNotFound) {
				t.Fatalf("deleted session came back from an unchanged file: %v", err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := im.ImportFile(ctx, path, FormatAuto)
			if err != nil || !res.Created || res.Added != refRes.Added {
				t.Fatalf("grown file after delete: created %v, added %d (a whole import adds %d), %v", res.Created, res.Added, refRes.Added, err)
			}
			_, gotTr := transcriptCounts(t, svc, refRes.SessionID)
			_, wantTr := transcriptCounts(t, ref, refRes.SessionID)
			if a, b := messagesJSON(t, gotTr), messagesJSON(t, wantTr); a != b {
				t.Fatalf("re-imported session differs from a whole import: %d vs %d messages", len(gotTr.Messages), len(wantTr.Messages))
			}
		})
	}
}
