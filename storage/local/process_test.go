package local

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

const (
	helperEnv     = "STORAGE_TEST_HELPER"
	helperDirEnv  = "STORAGE_TEST_DIR"
	helperNameEnv = "STORAGE_TEST_NAME"
	helperNEnv    = "STORAGE_TEST_N"
)

// TestHelperProcess is not a test: the multi-process tests re-run the test binary with it as
// the only test, in a child process that appends and prints "ack <session> <seq> <tag>" for
// every acknowledged record.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for the multi-process tests")
	}
	dir, name := os.Getenv(helperDirEnv), os.Getenv(helperNameEnv)
	n, _ := strconv.Atoi(os.Getenv(helperNEnv))
	s, err := Open(dir, Options{SealRecords: 8})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	appendOne := func(id string, i int) {
		size := 1 + i%3
		recs := make([]storage.Record, size)
		for k := range recs {
			recs[k] = storage.Record{Kind: "message", Data: fmt.Appendf(nil, `{"tag":"%s-%d-%d","pad":"%s"}`, name, i, k, strings.Repeat("x", i%50))}
		}
		err := s.updateW(context.Background(), id, func(w *Writer) error {
			out, err := w.Append(recs, storage.Meta{Name: id, Messages: int(w.LastSeq()) + size})
			if err != nil {
				return err
			}
			var b strings.Builder
			for k, r := range out {
				fmt.Fprintf(&b, "ack %s %d %s-%d-%d\n", id, r.Seq, name, i, k)
			}
			os.Stdout.WriteString(b.String())
			return nil
		})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
	}
	switch mode {
	case "append":
		for i := range n {
			appendOne("shared", i)
			appendOne(name, i)
		}
	case "loop":
		for i := 0; ; i++ {
			appendOne("k", i)
		}
	case "crash-before-index":
		for i := range n {
			appendOne("k", i)
		}
		testHookBeforeIndex = killSelf
		appendOne("k", n)
	}
	if err := s.Close(); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
}

// killSelf ends this process as kill -9 would (TerminateProcess on Windows): no deferred call,
// no Close.
func killSelf() {
	p, _ := os.FindProcess(os.Getpid())
	p.Kill()
}

// killedByKill reports whether a child ended by Process.Kill: SIGKILL on Unix; on Windows, where
// no signal is recorded, the exit code 1 that Kill's TerminateProcess gives it.
func killedByKill(ps *os.ProcessState) bool {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return true
	}
	return runtime.GOOS == "windows" && ps.ExitCode() == 1
}

func helperCmd(ctx context.Context, t *testing.T, mode, dir, name string, n int) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDirEnv+"="+dir, helperNameEnv+"="+name, helperNEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	return cmd
}

type ack struct {
	id  string
	seq uint64
	tag string
}

func parseAck(line string) (ack, bool) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "ack" {
		return ack{}, false
	}
	seq, err := strconv.ParseUint(f[2], 10, 64)
	return ack{f[1], seq, f[3]}, err == nil
}

// checkAcked verifies that session id holds exactly seqs 1..n, that every acknowledged record
// is there with its tag, and returns n.
func checkAcked(t *testing.T, s *Store, id string, acks []ack) uint64 {
	t.Helper()
	tags := map[uint64]string{}
	seen := map[string]bool{}
	var n uint64
	err := s.viewR(t.Context(), id, func(r *Reader) error {
		for rec, err := range r.Records(1) {
			if err != nil {
				return err
			}
			n++
			if rec.Seq != n {
				t.Fatalf("%s: seq %d at position %d", id, rec.Seq, n)
			}
			var v struct{ Tag string }
			if err := json.Unmarshal(rec.Data, &v); err != nil {
				t.Fatalf("%s: record %d: %v", id, n, err)
			}
			if seen[v.Tag] {
				t.Fatalf("%s: tag %s stored twice", id, v.Tag)
			}
			seen[v.Tag] = true
			tags[rec.Seq] = v.Tag
		}
		if r.LastSeq() != n {
			t.Fatalf("%s: LastSeq %d, %d records", id, r.LastSeq(), n)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	for _, a := range acks {
		if a.id == id && tags[a.seq] != a.tag {
			t.Fatalf("%s: acknowledged seq %d (%s) holds %q", id, a.seq, a.tag, tags[a.seq])
		}
	}
	return n
}

func TestMultiProcessAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	for _, id := range []string{"shared", "p0", "p1", "p2"} {
		mustCreate(t, s, id)
	}
	s.Close()
	const n = 40
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	for _, name := range []string{"p0", "p1", "p2"} {
		wg.Go(func() {
			out, err := helperCmd(t.Context(), t, "append", dir, name, n).Output()
			if err != nil {
				t.Errorf("helper %s: %v\n%s", name, err, out)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, l := range strings.Split(string(out), "\n") {
				if a, ok := parseAck(l); ok {
					acks = append(acks, a)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	calls := 0
	s2 := mustOpen(t, dir, Options{Summarize: func(storage.Header, iter.Seq2[storage.Record, error]) (storage.Meta, error) {
		calls++
		return storage.Meta{}, nil
	}})
	if calls != 0 {
		t.Fatalf("index incomplete after clean exits: %d sessions re-summarized", calls)
	}
	count := map[string]int{}
	for _, a := range acks {
		count[a.id]++
	}
	per := 0
	for i := range n {
		per += 1 + i%3
	}
	if count["shared"] != 3*per {
		t.Fatalf("shared: %d acks, want %d", count["shared"], 3*per)
	}
	list, err := s2.List(context.Background(), storage.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]uint64{}
	for _, m := range list {
		last[m.ID] = m.LastSeq
		if m.Name != m.ID || uint64(m.Messages) != m.LastSeq {
			t.Errorf("index meta of %s: %+v", m.ID, m)
		}
	}
	for _, id := range []string{"shared", "p0", "p1", "p2"} {
		got := checkAcked(t, s2, id, acks)
		if got != uint64(count[id]) || last[id] != got {
			t.Fatalf("%s: %d records, %d acks, index LastSeq %d", id, got, count[id], last[id])
		}
	}
}

// countRecords is a Summarize that counts records as messages, so listings carry a count.
func countRecords(h storage.Header, recs iter.Seq2[storage.Record, error]) (storage.Meta, error) {
	n := 0
	for _, err := range recs {
		if err != nil {
			return storage.Meta{}, err
		}
		n++
	}
	return storage.Meta{Name: h.ID, Messages: n}, nil
}

// TestKill9BeforeIndexLine: a process killed between an append's fsync and its index line
// leaves the index one append behind; the next Open finds the sizes stale and summarises the
// session again, so the restarted process, and one that ran all along, list what a read
// returns.
func TestKill9BeforeIndexLine(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	mustCreate(t, s, "k")
	s.Close()
	bystander := mustOpen(t, dir, Options{Summarize: countRecords})
	cmd := helperCmd(t.Context(), t, "crash-before-index", dir, "c", 10)
	out, err := cmd.Output()
	if !killedByKill(cmd.ProcessState) {
		t.Fatalf("child was not killed: %v\n%s", err, out)
	}
	var acks []ack
	for _, l := range strings.Split(string(out), "\n") {
		if a, ok := parseAck(l); ok {
			acks = append(acks, a)
		}
	}
	var read uint64
	if err := bystander.viewR(context.Background(), "k", func(r *Reader) error { read = r.LastSeq(); return nil }); err != nil {
		t.Fatal(err)
	}
	if m, _ := bystander.Get(context.Background(), "k"); m.LastSeq >= read {
		t.Fatalf("the crash left the index at last_seq %d with %d records: the hook did not fire in the window", m.LastSeq, read)
	}
	restarted := mustOpen(t, dir, Options{Summarize: countRecords})
	n := checkAcked(t, restarted, "k", acks)
	if n != read {
		t.Fatalf("%d records after restart, %d before", n, read)
	}
	for name, st := range map[string]*Store{"restarted": restarted, "bystander": bystander} {
		l, err := st.List(context.Background(), storage.ListQuery{})
		if err != nil || len(l) != 1 || l[0].LastSeq != n || l[0].Messages != int(n) {
			t.Fatalf("%s process lists %+v (%v); %d records", name, l, err, n)
		}
	}
}

func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	mustCreate(t, s, "k")
	s.Close()
	var acks []ack
	for round, killAfter := range []int{5, 23, 61, 40} {
		cmd := helperCmd(t.Context(), t, "loop", dir, fmt.Sprintf("r%d", round), 0)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		got := 0
		killed := false
		for sc.Scan() {
			a, ok := parseAck(sc.Text())
			if !ok {
				continue
			}
			acks = append(acks, a)
			got++
			if got == killAfter && !killed {
				cmd.Process.Kill()
				killed = true
			}
		}
		err = cmd.Wait()
		if !killedByKill(cmd.ProcessState) {
			t.Fatalf("round %d: child was not killed: %v", round, err)
		}
		s := mustOpen(t, dir, Options{})
		n := checkAcked(t, s, "k", acks)
		if n < uint64(len(acks)) {
			t.Fatalf("round %d: %d records, %d acknowledged", round, n, len(acks))
		}
		m, err := s.Get(context.Background(), "k")
		if err != nil || m.LastSeq != n {
			t.Fatalf("round %d: index LastSeq %d, %d records (%v)", round, m.LastSeq, n, err)
		}
		s.Close()
		time.Sleep(time.Millisecond)
	}
}
