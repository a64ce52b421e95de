package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// testDocs indexes records {"text":..., "role":..., "files":[...]}: kind "summary" as a
// summary, every other kind with a text as a message.
func testDocs(h storage.Header, rec storage.Record) []fts.Doc {
	text := gjson.GetBytes(rec.Data, "text").String()
	if text == "" {
		return nil
	}
	d := fts.Doc{SessionID: h.ID, Seq: rec.Seq, EntryID: fmt.Sprintf("e%d", rec.Seq), Kind: fts.KindMessage,
		Role: gjson.GetBytes(rec.Data, "role").String(), Time: h.Created.Add(time.Duration(rec.Seq) * time.Second), Text: text}
	if rec.Kind == "summary" {
		d.Kind, d.Role = fts.KindSummary, ""
	}
	for _, f := range gjson.GetBytes(rec.Data, "files").Array() {
		d.Files = append(d.Files, f.String())
	}
	return []fts.Doc{d}
}

func searchOpts() Options { return Options{Docs: testDocs, IdleSeal: -1} }

func appendText(t testing.TB, s *Store, id string, texts ...string) []storage.Record {
	t.Helper()
	recs := make([]storage.Record, len(texts))
	for i, x := range texts {
		recs[i] = storage.Record{Kind: "message", Data: fmt.Appendf(nil, `{"text":%q,"role":"user"}`, x)}
	}
	var out []storage.Record
	err := s.Update(context.Background(), id, func(w storage.Writer) error {
		var err error
		out, err = w.Append(recs, storage.Meta{Name: "n-" + id})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustParse(t testing.TB, q string) *fts.Query {
	t.Helper()
	p, err := fts.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitHits searches until want hits come back (or fails after d), returning the last result.
func waitHits(t testing.TB, s *Store, q storage.SearchQuery, want int, d time.Duration) storage.SearchResult {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		res, err := s.Search(context.Background(), q)
		if err == nil && len(res.Hits) == want {
			return res
		}
		if err != nil && !errors.Is(err, storage.ErrSearchUnavailable) {
			t.Fatalf("Search: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %d hits, want %d (err %v)", d, len(res.Hits), want, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSearchFindsSavesDeletesAndNames(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, searchOpts())
	ctx := context.Background()
	mustCreate(t, s, "a")
	mustCreate(t, s, "b")
	appendText(t, s, "a", "the zebrafish quokka met", "nothing here")
	appendText(t, s, "b", "a quokka alone")
	res := waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "quokka")}, 2, time.Second)
	for _, h := range res.Hits {
		if h.SessionName != "n-"+h.SessionID || h.Kind != fts.KindMessage || h.Role != "user" {
			t.Errorf("hit %+v", h)
		}
	}
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "+quokka +zebrafish")}, 1, time.Second)
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "quokka zebrafish")}, 2, time.Second)
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "quokka"), SessionID: "b"}, 1, time.Second)
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	res = waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "quokka")}, 1, 0)
	if res.Hits[0].SessionID != "b" {
		t.Fatalf("after delete: %+v", res.Hits)
	}
	// Created again under the same id: the old incarnation's entries stay gone.
	mustCreate(t, s, "a")
	appendText(t, s, "a", "fresh quokka")
	res = waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "quokka"), SessionID: "a"}, 1, time.Second)
	if res.Hits[0].Seq != 1 {
		t.Fatalf("recreated: %+v", res.Hits)
	}
	if _, err := s.Search(ctx, storage.SearchQuery{Match: mustParse(t, "quokka"), Cursor: "bogus"}); !errors.Is(err, fts.ErrBadQuery) {
		t.Fatalf("bad cursor: %v", err)
	}
}

func TestSearchRewriteDropsOldText(t *testing.T) {
	s := mustOpen(t, t.TempDir(), searchOpts())
	mustCreate(t, s, "a")
	appendText(t, s, "a", "token sk-live-abcdef secret", "plain")
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "abcdef")}, 1, time.Second)
	_, err := s.Rewrite(context.Background(), "a", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		out := make([][]byte, len(recs))
		out[0] = []byte(`{"text":"token [REDACTED] secret","role":"user"}`)
		return h, out, storage.Meta{Name: "n-a"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "abcdef")}, 0, 2*time.Second)
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "redacted")}, 1, 2*time.Second)
}

// TestSearchCatchUpAndRebuild: a store written without an index gets one at the next open
// (catch-up); a deleted or garbled index is rebuilt, Search answering ErrSearchUnavailable
// meanwhile rather than partial results.
func TestSearchCatchUpAndRebuild(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		mustCreate(t, s, id)
		appendText(t, s, id, "common words here", fmt.Sprintf("unique%d marker", i))
	}
	if _, err := s.Search(context.Background(), storage.SearchQuery{Match: mustParse(t, "common")}); !errors.Is(err, storage.ErrSearchUnavailable) {
		t.Fatalf("no index: %v", err)
	}
	s.Close()
	q := storage.SearchQuery{Match: mustParse(t, "marker"), Limit: 100}
	check := func(what string) {
		t.Helper()
		s := mustOpen(t, dir, searchOpts())
		waitHits(t, s, q, n, 10*time.Second)
		st, err := s.SearchStats(context.Background())
		if err != nil || st.Docs != 2*n || st.Rebuilding {
			t.Fatalf("%s: stats %+v %v", what, st, err)
		}
		if err := s.VerifyIndex(context.Background()); err != nil {
			t.Fatalf("%s: verify: %v", what, err)
		}
		s.Close()
	}
	check("catch-up")
	if err := os.RemoveAll(filepath.Join(dir, searchDirName)); err != nil {
		t.Fatal(err)
	}
	check("deleted")
	files, _ := filepath.Glob(filepath.Join(dir, searchDirName, "fts-*.db"))
	if len(files) != 1 {
		t.Fatalf("index files %v", files)
	}
	garble(t, files[0])
	check("garbled")
}

func garble(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < len(b); i += 7 {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSearchDeletedWhileIndexDirGone(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, searchOpts())
	mustCreate(t, s, "a")
	appendText(t, s, "a", "alpha beta")
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "alpha")}, 1, time.Second)
	// The directory removed under a running store: the next look rebuilds it. The index's
	// own goroutines (a merge, the syncer) may make a file in it while it is being removed,
	// as they may under a user's rm -r: remove again until it is gone, as the user would.
	var err error
	for range 50 {
		if err = os.RemoveAll(filepath.Join(dir, searchDirName)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "alpha")}, 1, 5*time.Second)
}

func TestSearchReindex(t *testing.T) {
	s := mustOpen(t, t.TempDir(), searchOpts())
	for i := range 5 {
		id := fmt.Sprintf("s%d", i)
		mustCreate(t, s, id)
		appendText(t, s, id, "reindex me", "again")
	}
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "reindex")}, 5, time.Second)
	var calls int
	err := s.Reindex(context.Background(), func(storage.ReindexProgress) { calls++ })
	if err != nil || calls != 5 {
		t.Fatalf("Reindex: %v after %d progress calls", err, calls)
	}
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "reindex")}, 5, 0)
	// Without a progress function too (it once waited for itself for ever).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Reindex(ctx, nil); err != nil {
		t.Fatalf("Reindex without progress: %v", err)
	}
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "reindex")}, 5, 0)
}

// TestReindexReadsSessionsAtOnce: a rebuild reads several sessions at once, each in several
// chunks, and indexes every record once; one cancelled part way (its readers blocked on
// chunks nobody takes) returns, and the next rebuild completes.
func TestReindexReadsSessionsAtOnce(t *testing.T) {
	s := mustOpen(t, t.TempDir(), searchOpts())
	const sessions, per = 6, chunkRecords + chunkRecords/2
	for i := range sessions {
		id := fmt.Sprintf("p%d", i)
		mustCreate(t, s, id)
		texts := make([]string, per)
		for j := range texts {
			texts[j] = fmt.Sprintf("word%d in session%d", j, i)
		}
		appendText(t, s, id, texts...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := s.Reindex(ctx, func(p storage.ReindexProgress) {
		if p.Sessions == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Reindex cancelled after two sessions: %v", err)
	}
	var calls []int
	if err := s.Reindex(context.Background(), func(p storage.ReindexProgress) { calls = append(calls, p.Sessions) }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(calls) != "[1 2 3 4 5 6]" {
		t.Fatalf("progress %v", calls)
	}
	st, err := s.SearchStats(context.Background())
	if err != nil || st.Docs != sessions*per || st.Sessions != sessions || st.Rebuilding {
		t.Fatalf("after the rebuild: %+v, %v", st, err)
	}
	for _, w := range []string{"word0", fmt.Sprintf("word%d", chunkRecords), fmt.Sprintf("word%d", per-1)} {
		waitHits(t, s, storage.SearchQuery{Match: mustParse(t, w)}, sessions, 0)
	}
}

const searchHelperEnv = "STORAGE_SEARCH_HELPER"

// TestSearchHelperProcess is not a test: a child process for the multi-process search
// tests. It opens the store with the index and, for each line "save ID TEXT" on stdin,
// appends TEXT and prints "saved" once Append returned. "exit" closes the store.
func TestSearchHelperProcess(t *testing.T) {
	if os.Getenv(searchHelperEnv) == "" {
		t.Skip("helper process for the multi-process search tests")
	}
	s, err := Open(os.Getenv(helperDirEnv), searchOpts())
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		switch f[0] {
		case "create":
			if err := s.Create(context.Background(), storage.Header{ID: f[1], WorkingDir: "/w"}, storage.Meta{}); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Println("created")
		case "save":
			err := s.Update(context.Background(), f[1], func(w storage.Writer) error {
				_, err := w.Append([]storage.Record{{Kind: "message", Data: fmt.Appendf(nil, `{"text":%q}`, f[2])}}, storage.Meta{})
				return err
			})
			if err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Println("saved")
		case "exit":
			s.Close()
			os.Exit(0)
		}
	}
}

type child struct {
	cmd *exec.Cmd
	in  *os.File
	out *bufio.Scanner
}

func startChild(t *testing.T, dir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSearchHelperProcess$")
	cmd.Env = append(os.Environ(), searchHelperEnv+"=1", helperDirEnv+"="+dir)
	pr, pw, _ := os.Pipe()
	cmd.Stdin = pr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	c := &child{cmd: cmd, in: pw, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c.expect(t, "ready")
	return c
}

func (c *child) send(t *testing.T, line string, want string) {
	t.Helper()
	fmt.Fprintln(c.in, line)
	c.expect(t, want)
}

func (c *child) expect(t *testing.T, want string) {
	t.Helper()
	for c.out.Scan() {
		if l := c.out.Text(); l == want {
			return
		} else if strings.HasPrefix(l, "error") {
			t.Fatalf("child: %s", l)
		}
	}
	t.Fatalf("child ended before %q", want)
}

// TestSearchFreshAcrossProcesses: what a child process saved is found by this one within
// a second of the save returning.
func TestSearchFreshAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	s := mustOpen(t, dir, searchOpts())
	c := startChild(t, dir)
	c.send(t, "create x", "created")
	var worst time.Duration
	for i := range 5 {
		word := fmt.Sprintf("fresh%dword", i)
		c.send(t, "save x "+word, "saved")
		start := time.Now()
		waitHits(t, s, storage.SearchQuery{Match: mustParse(t, word)}, 1, time.Second)
		worst = max(worst, time.Since(start))
	}
	t.Logf("slowest: found %v after the save returned", worst)
}

// TestSearchKilledWriterCaughtUp: a writer killed right after its saves returned (its queue
// never flushed) loses nothing: the other process's syncer, or the next open, indexes it,
// before that process's first search answers.
func TestSearchKilledWriterCaughtUp(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	// An index that is not empty, so that the next open catches up rather than rebuilds.
	s := mustOpen(t, dir, searchOpts())
	mustCreate(t, s, "k")
	appendText(t, s, "k", "indexed before")
	s.Close()
	c := startChild(t, dir)
	for i := range 20 {
		c.send(t, fmt.Sprintf("save k killed%d", i), "saved")
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()
	// The first search, made as soon as the store is open (a CLI command), finds them all:
	// it waits for the catch-up the open began.
	s = mustOpen(t, dir, searchOpts())
	for i := range 20 {
		waitHits(t, s, storage.SearchQuery{Match: mustParse(t, fmt.Sprintf("killed%d", i))}, 1, 0)
	}
	// And while this process runs: a writer killed now is caught up by the syncer.
	c = startChild(t, dir)
	c.send(t, "save k latecomer", "saved")
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "latecomer")}, 1, 3*time.Second)
}

// TestSearchKilledRebuildFinished: a rebuild killed half-way leaves the marker; the next
// process finishes it, and search answers ErrSearchUnavailable until then.
func TestSearchKilledRebuildFinished(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, searchOpts())
	mustCreate(t, s, "a")
	appendText(t, s, "a", "before the crash")
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "crash")}, 1, time.Second)
	s.Close()
	// What a killed rebuild leaves: the marker, an index missing sessions.
	os.WriteFile(filepath.Join(dir, searchDirName, rebuildName), nil, 0o600)
	files, _ := filepath.Glob(filepath.Join(dir, searchDirName, "fts-*.db"))
	for _, f := range files {
		removeDB(f)
	}
	s = mustOpen(t, dir, searchOpts())
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "crash")}, 1, 5*time.Second)
	if _, err := os.Stat(filepath.Join(dir, searchDirName, rebuildName)); !os.IsNotExist(err) {
		t.Fatalf("marker left: %v", err)
	}
}

func removeDB(p string) {
	os.Remove(p + "-wal")
	os.Remove(p + "-shm")
	os.Remove(p)
}

// TestSearchIndexHoldsNoText: the index is contentless; the text's words are terms of the
// inverted index, but no sentence of it is stored (secrets never reach it: the store
// indexes what it keeps, already redacted; memory tests that).
func TestSearchIndexHoldsNoText(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, searchOpts())
	mustCreate(t, s, "a")
	appendText(t, s, "a", "the quick brown fox jumps over the lazy dog")
	waitHits(t, s, storage.SearchQuery{Match: mustParse(t, "fox")}, 1, time.Second)
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, searchDirName, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("quick brown")) {
			t.Fatalf("%s holds the text", f)
		}
	}
}

// TestSearchCloseFlushes: what was saved just before Close is indexed by Close, at once.
func TestSearchCloseFlushes(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, searchOpts())
	mustCreate(t, s, "a")
	for i := range 50 {
		appendText(t, s, "a", fmt.Sprintf("closing%d words", i))
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
	// Reopened with the syncer unable to help (it waits a poll before indexing): the index
	// already has everything.
	s = mustOpen(t, dir, searchOpts())
	res, err := s.Search(context.Background(), storage.SearchQuery{Match: mustParse(t, "words"), Limit: 100})
	if err != nil || len(res.Hits) != 50 {
		t.Fatalf("after close: %d hits, %v", len(res.Hits), err)
	}
}
