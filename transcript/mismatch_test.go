package transcript

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
)

// TestFormatMismatch gives every fixture to every importer that is not its own: the import
// fails with a FormatMismatchError guessing the right format and stores nothing (no session,
// no checkpoint), and CheckFormat, which writes nothing, says the same beforehand. Given to its
// own importer the file imports, and again is unchanged.
func TestFormatMismatch(t *testing.T) {
	own := map[string]Format{
		"claude-code-a.jsonl": FormatClaudeCode, "codex-rollout.jsonl": FormatCodex,
		"pi-v1.jsonl": FormatPi, "pi-v3.jsonl": FormatPi,
	}
	for name, format := range own {
		src := filepath.Join("..", "testdata", "transcripts", name)
		for _, given := range []Format{FormatClaudeCode, FormatCodex, FormatPi} {
			t.Run(name+" as "+string(given), func(t *testing.T) {
				dir := t.TempDir()
				svc := newService(t, filepath.Join(dir, "store"))
				state := filepath.Join(dir, "imports")
				im := &Importer{Svc: svc, StateDir: state}
				checkErr := CheckFormat(src, given)
				res, err := im.ImportFile(t.Context(), src, given)
				if given == format {
					if checkErr != nil || err != nil || res.Added == 0 {
						t.Fatalf("own format: CheckFormat %v, import %+v, %v", checkErr, res, err)
					}
					if again, err := im.ImportFile(t.Context(), src, given); err != nil || again.Added != 0 {
						t.Fatalf("unchanged re-import: %+v, %v", again, err)
					}
					return
				}
				for _, err := range []error{checkErr, err} {
					var fm *FormatMismatchError
					if !errors.As(err, &fm) || fm.Format != given || fm.Guess != format || !errors.Is(err, ErrUnknownFormat) {
						t.Fatalf("err = %v, want a mismatch of %s guessing %s", err, given, format)
					}
					want := "does not look like a " + FormatTitle(given) + " transcript (expected "
					if !strings.Contains(fm.Summary(), want) || !strings.HasSuffix(err.Error(), "it looks like a "+FormatTitle(format)+" transcript") {
						t.Fatalf("error text %q", err)
					}
				}
				if l, _ := svc.List(t.Context(), memory.ListRequest{}); len(l.Sessions) != 0 || res.Added != 0 {
					t.Fatalf("a mismatched import stored %d sessions (%+v)", len(l.Sessions), res)
				}
				if m, _ := filepath.Glob(filepath.Join(state, "*.json")); len(m) != 0 {
					t.Fatalf("a mismatched import kept a checkpoint: %v", m)
				}
			})
		}
	}
}

// TestCheckFormatUndecided: CheckFormat accuses a file only when it has lines to judge by.
func TestCheckFormatUndecided(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
	}{
		{"empty", ""},
		{"blank lines", "\n\n"},
		{"a torn first line", `{"type":"session_meta","payl`},
		{"a line longer than what is read", `{"type":"user","text":"` + strings.Repeat("x", checkBytes) + "\"}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".jsonl")
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := CheckFormat(p, FormatCodex); err != nil {
				t.Fatalf("CheckFormat = %v, want nil", err)
			}
		})
	}
	if err := CheckFormat(filepath.Join(dir, "absent.jsonl"), FormatPi); err != nil {
		t.Fatalf("a missing file: %v, want nil (the import reports it)", err)
	}
}

// TestFormatMismatchOnlyFromTheStart: lines a reader does not know, appended to a file it
// imported, are a newer version of its format, not another format: the re-import adds
// nothing and fails nothing.
func TestFormatMismatchOnlyFromTheStart(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "transcripts", "codex-rollout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rollout.jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	im := &Importer{Svc: newService(t, filepath.Join(dir, "store")), StateDir: filepath.Join(dir, "imports")}
	if _, err := im.ImportFile(t.Context(), path, FormatCodex); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"kind_from_the_future","payload":{}}` + "\n" + `{"type":"user","sessionId":"x","uuid":"y"}` + "\n")
	f.Close()
	res, err := im.ImportFile(t.Context(), path, FormatCodex)
	if err != nil || res.Added != 0 || res.Stats.Recognized != 0 || res.Stats.Foreign() != 2 {
		t.Fatalf("re-import after unknown lines: %+v, %v", res.Stats, err)
	}
}
