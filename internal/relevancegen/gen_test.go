package relevancegen_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionmem/sessionmem/internal/testpaths"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/transcript"
)

var regen = flag.Bool("regen", false, "rewrite testdata/relevance/sessions.jsonl.zst from the shared corpus")

// sources are the corpus files and the short session ids the fixture gives them: the
// transcript's own id cut to its prefix, short enough to read in questions.jsonl.
var sources = []struct{ file, session string }{
	{"cc-8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", "cc-8463c716"},
	{"cc-ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", "cc-ae4a77f8"},
	{"pi-before-compaction.jsonl", "pi-ffae836b"},
	{"pi-large-session.jsonl", "pi-d703a1a9"},
}

// line is one fixture line.
type line struct {
	Session    string          `json:"session"`
	WorkingDir string          `json:"working_dir"`
	Time       string          `json:"time"`
	Message    json.RawMessage `json:"message"`
}

// build converts the corpus to the fixture's JSON lines.
func build(t *testing.T, dir string) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, src := range sources {
		req, _, err := transcript.ParseFile(filepath.Join(dir, src.file), transcript.FormatAuto)
		if err != nil {
			t.Fatalf("parse %s: %v", src.file, err)
		}
		if err := appendSession(&out, src.session, req); err != nil {
			t.Fatalf("%s: %v", src.file, err)
		}
	}
	return out.Bytes()
}

// appendSession writes one session's messages in order. Compaction summaries are left out:
// the benchmark judges messages, and a summary only restates them. A message keeps the
// transcript's id when the format has one (Claude Code's uuids and API message ids); pi v1
// has none (the parser derives one from a hash), so it gets <session>-<index>, which does
// not depend on the parser. Times come from the transcript, as they are; a missing one would
// become a millisecond after the previous message (or the session's creation time).
func appendSession(out *bytes.Buffer, session string, req memory.ImportRequest) error {
	ownIDs := strings.HasPrefix(session, "cc-")
	seen := map[string]bool{}
	var last time.Time
	n := 0
	for _, it := range req.Items {
		if it.Message == nil {
			continue
		}
		m := *it.Message
		m.EntryID = ""
		if !ownIDs || m.ID == "" {
			m.ID = fmt.Sprintf("%s-%d", session, n)
		}
		if seen[m.ID] {
			return fmt.Errorf("message id %s repeats", m.ID)
		}
		seen[m.ID] = true
		n++
		ts := it.Time.UTC()
		switch {
		case !ts.IsZero():
		case last.IsZero():
			ts = req.Created.UTC()
		default:
			ts = last.Add(time.Millisecond)
		}
		last = ts
		msg, err := marshal(m)
		if err != nil {
			return err
		}
		b, err := marshal(line{Session: session, WorkingDir: req.WorkingDir,
			Time: ts.Format(time.RFC3339Nano), Message: msg})
		if err != nil {
			return err
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return nil
}

// marshal encodes v without HTML escaping, so the fixture reads as the transcripts do.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func fixturePath() string { return testpaths.Testdata("relevance", "sessions.jsonl.zst") }

func corpusOrSkip(t *testing.T) string {
	dir := testpaths.CorpusDir()
	if dir == "" {
		t.Skip("the shared corpus (../shared/corpus or $SESSIONMEM_CORPUS) is not present")
	}
	return dir
}

func TestRegenerate(t *testing.T) {
	if !*regen {
		t.Skip("run with -regen to rewrite testdata/relevance/sessions.jsonl.zst")
	}
	data := build(t, corpusOrSkip(t))
	var z bytes.Buffer
	enc, err := zstd.NewWriter(&z, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(fixturePath()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixturePath(), z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d bytes (%d uncompressed)", fixturePath(), z.Len(), len(data))
}

// TestFixtureCurrent checks that the committed fixture is what converting the corpus gives
// now, so a change to the transcript parsers that would move the judged ids is noticed.
func TestFixtureCurrent(t *testing.T) {
	if *regen {
		t.Skip("regenerating")
	}
	want := build(t, corpusOrSkip(t))
	f, err := os.Open(fixturePath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	got, err := io.ReadAll(dec)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gs, ws := bufio.NewScanner(bytes.NewReader(got)), bufio.NewScanner(bytes.NewReader(want))
	gs.Buffer(nil, 64<<20)
	ws.Buffer(nil, 64<<20)
	for i := 1; ; i++ {
		g, w := gs.Scan(), ws.Scan()
		if !g || !w || !bytes.Equal(gs.Bytes(), ws.Bytes()) {
			t.Fatalf("the fixture differs from the corpus's conversion at line %d; "+
				"regenerate it (go test ./internal/relevancegen/ -run TestRegenerate -regen) "+
				"only if the judged message ids in questions.jsonl still hold", i)
		}
	}
}
