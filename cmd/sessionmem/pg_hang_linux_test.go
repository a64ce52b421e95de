package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// postmasterPID reads the postmaster's process id from its data directory.
func postmasterPID(t *testing.T, c *pgtest.Cluster) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestPGHungDatabase: with every PostgreSQL process stopped (SIGSTOP: a frozen host, a paused
// container), session_save and session_list answer with the unreachable error within the
// connect timeout (5 s), not after the pool pinged each idle connection and retried the
// save (25 s), and work again once the database runs.
func TestPGHungDatabase(t *testing.T) {
	c := pgtest.Own(t, pgtest.Options{})
	_, url, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, url)
	var s struct {
		SessionID string `json:"session_id"`
	}
	call(t, srv.c, "session_save", obj{"working_dir": "/p", "messages": []any{obj{"id": "first", "role": "user", "content": "hello"}}}, &s)
	// Several idle connections in the pool, each pinged before reuse.
	for i := range 4 {
		call(t, srv.c, "session_list", obj{}, nil)
		call(t, srv.c, "session_save", saveArgs(s.SessionID, "warm-"+strconv.Itoa(i)), nil)
	}
	pid := postmasterPID(t, c)
	pids := append(childPIDs(t, pid), pid)
	cont := func() {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGCONT)
		}
	}
	defer cont()
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // idle long enough to be pinged
	for i, name := range []string{"session_save", "session_list", "session_save"} {
		args := obj{}
		if name == "session_save" {
			args = saveArgs(s.SessionID, "hung-"+strconv.Itoa(i))
		}
		res, d, err := tool(srv.c, name, args)
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "database is unreachable") {
			t.Fatalf("%s while hung: %v %q", name, err, resultText(res))
		}
		// 5 s to connect, and slack for a loaded machine.
		if d > 7*time.Second {
			t.Errorf("%s while hung answered after %v", name, d)
		}
	}
	cont()
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, _, err := tool(srv.c, "session_save", saveArgs(s.SessionID, "after"))
		if err == nil && !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("saves still fail 15 s after the database resumed: %v %s", err, resultText(res))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// childPIDs lists the processes whose parent is pid (/proc/*/stat).
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	ents, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile(e)
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndex(s, ")")+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			c, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
			out = append(out, c)
		}
	}
	return out
}
