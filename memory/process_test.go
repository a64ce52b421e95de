package memory

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/local"
)

// The tests here run real OS processes: the test binary re-executes itself with
// SESSIONMEM_CHILD set, and the child saves into the store the parent opened.

func TestMain(m *testing.M) {
	if role := os.Getenv("SESSIONMEM_CHILD"); role != "" {
		os.Exit(child(role))
	}
	os.Exit(m.Run())
}

// child saves messages one call at a time and prints each acknowledged message id.
func child(role string) int {
	dir, session, prefix := os.Getenv("SESSIONMEM_DIR"), os.Getenv("SESSIONMEM_SESSION"), os.Getenv("SESSIONMEM_PREFIX")
	n := 0
	fmt.Sscan(os.Getenv("SESSIONMEM_N"), &n)
	store, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer store.Close()
	s := New(store, Options{})
	for i := 0; n == 0 || i < n; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		req := SaveRequest{SessionID: session, Messages: []Message{user(id, strings.Repeat("payload ", 40))}}
		if role == "creator" {
			req = SaveRequest{WorkingDir: fmt.Sprintf("/w/%s", prefix), Messages: []Message{user(id, "x")}}
		}
		if _, err := s.Save(context.Background(), req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(id)
	}
	return 0
}

func startChild(t *testing.T, role, dir, session, prefix string, n int) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SESSIONMEM_CHILD="+role, "SESSIONMEM_DIR="+dir, "SESSIONMEM_SESSION="+session,
		"SESSIONMEM_PREFIX="+prefix, fmt.Sprintf("SESSIONMEM_N=%d", n))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

func TestTwoProcessesSaveToOneSession(t *testing.T) {
	dir := t.TempDir()
	store, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s := New(store, Options{})
	r := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("start", "go")}})
	const n = 150
	var acked []string
	var cmds []*exec.Cmd
	var outs []*bufio.Scanner
	for _, p := range []string{"a", "b"} {
		cmd, out := startChild(t, "saver", dir, r.SessionID, p, n)
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	// This process saves too, while the children run.
	for i := range 50 {
		id := fmt.Sprintf("parent-%d", i)
		mustSave(t, s, SaveRequest{SessionID: r.SessionID, Messages: []Message{user(id, "p")}})
		acked = append(acked, id)
	}
	for i, cmd := range cmds {
		for outs[i].Scan() {
			acked = append(acked, outs[i].Text())
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	checkExactlyOnce(t, s, r.SessionID, acked, 1+50+2*n)
	// The index agrees with the log.
	sess, _ := s.Get(t.Context(), r.SessionID)
	if sess.MessageCount != 1+50+2*n {
		t.Errorf("index message_count = %d", sess.MessageCount)
	}
}

func TestTwoProcessesCreateSessions(t *testing.T) {
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for _, p := range []string{"a", "b"} {
		cmd, _ := startChild(t, "creator", dir, "", p, 40)
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	store, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s := New(store, Options{})
	for _, p := range []string{"a", "b"} {
		l, err := s.List(t.Context(), ListRequest{WorkingDir: "/w/" + p, Limit: 100})
		if err != nil || len(l.Sessions) != 40 {
			t.Fatalf("%s: %v, %d sessions, want 40", p, err, len(l.Sessions))
		}
	}
}

// listAgrees checks that s lists session id with as many messages as a full resume returns
// (an uncompacted, unbranched session) and returns that number.
func listAgrees(t *testing.T, s *Service, id string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		res, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 100000, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		n += len(res.Messages)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	l, err := s.List(t.Context(), ListRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, sess := range l.Sessions {
		if sess.ID == id {
			if sess.MessageCount != n {
				t.Fatalf("session_list shows %d messages, session_resume returns %d", sess.MessageCount, n)
			}
			return n
		}
	}
	t.Fatalf("session %s not listed", id)
	return 0
}

// Four processes save into one session at once; as soon as they are done, a process that was
// running all along lists exactly what a resume returns.
func TestListingAgreesAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	store, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s := New(store, Options{})
	r := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("start", "go")}})
	const per = 50
	var cmds []*exec.Cmd
	var outs []*bufio.Scanner
	for _, p := range []string{"a", "b", "c", "d"} {
		cmd, out := startChild(t, "saver", dir, r.SessionID, p, per)
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		for outs[i].Scan() {
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	if n := listAgrees(t, s, r.SessionID); n != 1+4*per {
		t.Fatalf("resume returns %d messages, want %d", n, 1+4*per)
	}
}

func TestKillNineLosesNoAcknowledgedSave(t *testing.T) {
	dir := t.TempDir()
	store, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	s := New(store, Options{})
	r := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("start", "go")}})
	store.Close()
	// A process that keeps running through the crash and the restart.
	bystander, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer bystander.Close()
	cmd, out := startChild(t, "saver", dir, r.SessionID, "k", 0)
	acked := []string{"start"}
	deadline := time.Now().Add(400 * time.Millisecond)
	for out.Scan() {
		acked = append(acked, out.Text())
		if time.Now().After(deadline) && len(acked) > 20 {
			break
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	// Lines acknowledged after our last read are fine to lose from this list, not from disk.
	for out.Scan() {
		acked = append(acked, out.Text())
	}
	_ = cmd.Wait()
	store, err = local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s = New(store, Options{})
	checkExactlyOnce(t, s, r.SessionID, acked, -1)
	// The restarted process, and the one that ran all along, list what a resume returns.
	n := listAgrees(t, s, r.SessionID)
	if m := listAgrees(t, New(bystander, Options{}), r.SessionID); m != n {
		t.Fatalf("the running process resumes %d messages, the restarted one %d", m, n)
	}
	// And the session still takes writes.
	mustSave(t, s, SaveRequest{SessionID: r.SessionID, Messages: []Message{user("after-crash", "x")}})
	listAgrees(t, s, r.SessionID)
}

// checkExactlyOnce asserts every acked id is stored exactly once (and, when total >= 0, that
// the session holds exactly total messages).
func checkExactlyOnce(t *testing.T, s *Service, session string, acked []string, total int) {
	t.Helper()
	tr, err := s.Transcript(t.Context(), session)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, m := range tr.Messages {
		count[m.ID]++
	}
	for _, id := range acked {
		if count[id] != 1 {
			t.Errorf("acknowledged message %s stored %d times", id, count[id])
		}
	}
	for id, c := range count {
		if c != 1 {
			t.Errorf("message %s stored %d times", id, c)
		}
	}
	if total >= 0 && len(tr.Messages) != total {
		t.Errorf("session holds %d messages, want %d", len(tr.Messages), total)
	}
}
