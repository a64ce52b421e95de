package ftsindex

// Tests with real processes: the test binary runs itself as a helper (TestMain) that opens
// the same index directory and writes to it.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

const helperEnv = "FTSINDEX_TEST_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		if err := runHelper(role, os.Args[len(os.Args)-2:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper starts this test binary as a helper process with a role and two arguments.
func helper(t *testing.T, role, dir, arg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", dir, arg)
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	cmd.Stderr = os.Stderr
	return cmd
}

// crashDoc is doc seq of session k in the crash and race tests: about 800 bytes of text.
func crashDoc(k, seq int) fts.Doc {
	id := fmt.Sprintf("c%d", k)
	text := fmt.Sprintf("crash marker s%dn%d %s", k, seq, strings.Repeat(fmt.Sprintf("filler%d words of text ", seq%50), 30))
	return fts.Doc{SessionID: id, Seq: uint64(seq), EntryID: fmt.Sprintf("%s-e%d", id, seq), Kind: fts.KindMessage,
		Role: "user", Time: t0.Add(time.Duration(seq) * time.Second), Text: text}
}

func crashSession(k int) Session {
	return Session{ID: fmt.Sprintf("c%d", k), Created: t0, WorkingDir: "/w/crash"}
}

const crashSessions, crashDocs = 6, 240

func runHelper(role string, args []string) error {
	ctx := context.Background()
	dir := args[0]
	ix, err := Open(ctx, dir, Options{})
	if err != nil {
		return err
	}
	defer ix.Close()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch role {
	case "writer": // one doc per Index call; reports when each call returned
		n, _ := strconv.Atoi(args[1])
		for i := 1; i <= n; i++ {
			d := doc("fresh", uint64(i), "user", fmt.Sprintf("freshness probe%d", i))
			if _, err := ix.Index(ctx, Batch{Session: sess("fresh"), From: uint64(i), Through: uint64(i), Docs: []fts.Doc{d}}); err != nil {
				return err
			}
			fmt.Fprintf(out, "%d %d\n", i, time.Now().UnixNano())
			out.Flush()
			time.Sleep(20 * time.Millisecond)
		}
	case "crasher": // indexes every crash session in batches of 7, forever, until killed
		for round := 0; ; round++ {
			for k := 0; k < crashSessions; k++ {
				p, err := ix.Progress(ctx, fmt.Sprintf("c%d", k))
				if err != nil {
					return err
				}
				from := int(p.Through) + 1
				if from > crashDocs {
					continue
				}
				to := min(from+6, crashDocs)
				var docs []fts.Doc
				for s := from; s <= to; s++ {
					docs = append(docs, crashDoc(k, s))
				}
				if _, err := ix.Index(ctx, Batch{Session: crashSession(k), From: uint64(from), Through: uint64(to), Docs: docs}); err != nil {
					return err
				}
				fmt.Fprintf(out, "batch %d %d %d\n", k, from, to)
				out.Flush()
			}
		}
	case "racer": // indexes every crash doc with batch boundaries from the seed, ignoring progress
		seed, _ := strconv.Atoi(args[1])
		for k := 0; k < crashSessions; k++ {
			for from := 1; from <= crashDocs; {
				to := min(from+1+(from*seed)%13, crashDocs)
				var docs []fts.Doc
				for s := from; s <= to; s++ {
					docs = append(docs, crashDoc(k, s))
				}
				if _, err := ix.Index(ctx, Batch{Session: crashSession(k), From: uint64(from), Through: uint64(to), Docs: docs}); err != nil {
					return err
				}
				from = to + 1
			}
		}
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	return nil
}

// TestFreshnessAcrossProcesses: a doc indexed by another process is found by this one's
// Search well within the contract's 1 s after the other's Index call returned.
func TestFreshnessAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	ix := openTest(t, dir)
	const n = 30
	cmd := helper(t, "writer", dir, strconv.Itoa(n))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	sc := bufio.NewScanner(stdout)
	var lags []time.Duration
	for sc.Scan() {
		var i int
		var at int64
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &i, &at); err != nil {
			t.Fatalf("helper said %q", sc.Text())
		}
		q := Query{Match: mustParse(t, fmt.Sprintf("probe%d", i))}
		for {
			res, err := ix.Search(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) == 1 {
				lags = append(lags, time.Since(time.Unix(0, at)))
				break
			}
			if time.Since(time.Unix(0, at)) > time.Second {
				t.Fatalf("doc %d not found 1 s after the other process indexed it", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if len(lags) != n {
		t.Fatalf("%d of %d docs seen", len(lags), n)
	}
	slices.Sort(lags)
	t.Logf("found by the other process after: median %v, max %v", lags[n/2], lags[n-1])
}

// TestCrashWhileIndexing kills an indexing process (SIGKILL) in the middle of its work,
// then checks that the index holds exactly the docs its progress claims, catches up, and
// finds every doc exactly once. Repeated to hit different moments.
func TestCrashWhileIndexing(t *testing.T) {
	dir := t.TempDir()
	for round := 0; round < 3; round++ {
		cmd := helper(t, "crasher", dir, "")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it commit some batches (more each round), then kill it mid-stride.
		sc := bufio.NewScanner(stdout)
		for i := 0; i < 10+round*15 && sc.Scan(); i++ {
		}
		time.Sleep(time.Duration(round*3) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		ix, err := Open(t.Context(), dir, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		checkCrashIndex(t, ix, false)
		ix.Close()
	}
	// Catch up everything from the progress, as a store would on start.
	ix := openTest(t, dir)
	for k := 0; k < crashSessions; k++ {
		p, err := ix.Progress(t.Context(), fmt.Sprintf("c%d", k))
		if err != nil {
			t.Fatal(err)
		}
		var docs []fts.Doc
		for s := int(p.Through) + 1; s <= crashDocs; s++ {
			docs = append(docs, crashDoc(k, s))
		}
		if len(docs) > 0 {
			if _, err := ix.Index(t.Context(), Batch{Session: crashSession(k), From: p.Through + 1, Through: crashDocs, Docs: docs}); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkCrashIndex(t, ix, true)
}

// checkCrashIndex verifies the crash sessions: every doc up to a session's progress is
// found exactly once, none beyond it exists (a batch commits whole or not at all), and with
// complete set every session is fully indexed.
func checkCrashIndex(t *testing.T, ix *Index, complete bool) {
	t.Helper()
	if err := ix.Verify(t.Context()); err != nil {
		t.Fatal(err)
	}
	total := 0
	for k := 0; k < crashSessions; k++ {
		p, err := ix.Progress(t.Context(), fmt.Sprintf("c%d", k))
		if err != nil {
			t.Fatal(err)
		}
		if complete && p.Through != crashDocs {
			t.Fatalf("session c%d progress %d after catch-up", k, p.Through)
		}
		got := searchAll(t, ix, Query{Match: mustParse(t, "crash"), SessionID: fmt.Sprintf("c%d", k)})
		if len(got) != int(p.Through) {
			t.Fatalf("session c%d: progress %d but %d docs", k, p.Through, len(got))
		}
		for s := 1; s <= int(p.Through); s += 37 {
			if hits := search(t, ix, Query{Match: mustParse(t, fmt.Sprintf("s%dn%d", k, s))}); len(hits) != 1 {
				t.Fatalf("doc s%dn%d found %d times", k, s, len(hits))
			}
		}
		total += len(got)
	}
	if st, _ := ix.Stats(t.Context()); st.Docs != int64(total) {
		t.Fatalf("%d docs in the index, %d accounted for", st.Docs, total)
	}
}

// searchAll pages through every hit of q.
func searchAll(t *testing.T, ix *Index, q Query) []string {
	t.Helper()
	q.Limit = MaxLimit
	if q.Text == nil {
		q.Text = textOf
	}
	var out []string
	for {
		res, err := ix.Search(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			out = append(out, h.EntryID)
		}
		if res.NextCursor == "" {
			return out
		}
		q.Cursor = res.NextCursor
	}
}

// TestRacingWriters: two processes index the same sessions at once with different batch
// boundaries (two servers catching up the same store); nothing is lost or duplicated.
func TestRacingWriters(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir).Close() // create the file before both start
	a, b := helper(t, "racer", dir, "3"), helper(t, "racer", dir, "5")
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("racer a: %v", err)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("racer b: %v", err)
	}
	checkCrashIndex(t, openTest(t, dir), true)
}
