package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// Real sessionmem processes on a real PostgreSQL: two servers writing one session, kill -9
// mid-save, the database restarting mid-run, a server started while the database is down.

// pgServer is a `sessionmem serve` process over stdio.
type pgServer struct {
	c      *client.Client
	cmd    *exec.Cmd
	stderr *syncBuffer
	log    string // --log-file
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer starts a stdio server on store and initializes a client.
func startServer(t *testing.T, store string) *pgServer {
	t.Helper()
	srv := &pgServer{stderr: &syncBuffer{}, log: filepath.Join(t.TempDir(), "server.log")}
	tr := transport.NewStdioWithOptions(binary(t), []string{"HOME=" + t.TempDir()},
		[]string{"serve", "--store", store, "--log-level", "debug", "--log-file", srv.log},
		transport.WithCommandStderrWriter(srv.stderr),
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			srv.cmd = cmd
			return cmd, nil
		}))
	srv.c = client.NewClient(tr)
	if err := srv.c.Start(context.Background()); err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() {
		srv.c.Close()
		if t.Failed() {
			// Why a server went away ("transport closed") is in its own log.
			t.Logf("server log (%s):\n%s", store, clipLog(srv.logs(), 6000))
		}
	})
	initClient(t, srv.c)
	return srv
}

// clipLog keeps the end of a long log.
func clipLog(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// logs is everything the server logged.
func (s *pgServer) logs() string {
	b, _ := os.ReadFile(s.log)
	return string(b) + s.stderr.String()
}

// tool calls a tool and returns its result (tool errors included) and how long it took.
func tool(c *client.Client, name string, args obj) (*mcp.CallToolResult, time.Duration, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	return res, time.Since(start), err
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(mcp.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprint(res.Content)
}

// storedIDs opens the database directly and returns the client ids of a session's messages
// in stored order, checking the session's invariants on the way.
func storedIDs(t *testing.T, url, session string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []string
	err = st.View(ctx, session, func(r storage.Reader) error {
		for rec, err := range r.Records(1) {
			if err != nil {
				return err
			}
			if rec.Kind == "message" {
				ids = append(ids, gjson.GetBytes(rec.Data, "message.id").String())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := st.Verify(ctx, session, false)
	if err != nil || rep.Damaged() != nil {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	m, err := st.Get(ctx, session)
	if err != nil || m.Messages != len(ids) {
		t.Fatalf("listed %d messages, stored %d (%v)", m.Messages, len(ids), err)
	}
	return ids
}

// payload is a ~2 KB message body.
var payload = strings.Repeat("The build cache is keyed on the module graph; ", 44)

func saveArgs(session, id string) obj {
	return obj{"session_id": session, "messages": []any{obj{"id": id, "role": "user", "content": id + " " + payload}}}
}

// TestPGTwoServersOneSession: two server processes append to one session at once: nothing
// lost, nothing duplicated, each writer's order kept, and list, resume and the stored
// records agree on the count.
func TestPGTwoServersOneSession(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	a, b := startServer(t, url), startServer(t, url)
	var s struct {
		SessionID string `json:"session_id"`
	}
	call(t, a.c, "session_save", obj{"working_dir": "/p", "messages": []any{obj{"id": "first", "role": "user", "content": "hello"}}}, &s)
	const perWriter = 40
	var wg sync.WaitGroup
	for _, w := range []struct {
		name string
		srv  *pgServer
	}{{"a", a}, {"b", b}, {"a2", a}, {"b2", b}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				args := obj{"session_id": s.SessionID, "messages": []any{
					obj{"id": fmt.Sprintf("%s-%03d-0", w.name, i), "role": "user", "content": payload},
					obj{"id": fmt.Sprintf("%s-%03d-1", w.name, i), "role": "assistant", "content": payload},
				}}
				res, _, err := tool(w.srv.c, "session_save", args)
				if err != nil || res.IsError {
					t.Errorf("save %s-%d: %v %s", w.name, i, err, resultText(res))
					return
				}
			}
		}()
	}
	wg.Wait()
	ids := storedIDs(t, url, s.SessionID)
	if want := 1 + 4*perWriter*2; len(ids) != want {
		t.Fatalf("stored %d messages, want %d", len(ids), want)
	}
	seen := map[string]bool{}
	last := map[string]string{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("message %s stored twice", id)
		}
		seen[id] = true
		if id == "first" {
			continue
		}
		w := id[:strings.Index(id, "-")]
		if id <= last[w] {
			t.Fatalf("writer %s: %s stored after %s", w, id, last[w])
		}
		last[w] = id
	}
	// Every server lists the same count, and resume pages through exactly that many.
	for _, srv := range []*pgServer{a, b} {
		var l struct {
			Sessions []struct {
				ID    string `json:"session_id"`
				Count int    `json:"message_count"`
			} `json:"sessions"`
		}
		call(t, srv.c, "session_list", obj{}, &l)
		if len(l.Sessions) != 1 || l.Sessions[0].Count != len(ids) {
			t.Fatalf("list: %+v, stored %d", l.Sessions, len(ids))
		}
	}
	resumed := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		args := obj{"session_id": s.SessionID, "max_tokens": 20000}
		if cursor != "" {
			args["cursor"] = cursor
		}
		var r struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
			NextCursor string `json:"next_cursor"`
		}
		call(t, b.c, "session_resume", args, &r)
		for _, m := range r.Messages {
			resumed[m.ID] = true
		}
		if cursor = r.NextCursor; cursor == "" || page > 100 {
			break
		}
	}
	if len(resumed) != len(ids) {
		t.Fatalf("resume returned %d distinct messages, stored %d", len(resumed), len(ids))
	}
}

// saver saves numbered messages one at a time until stopped, remembering which were
// acknowledged.
type saver struct {
	mu    sync.Mutex
	acked []string
	fails []time.Duration // how long each failed call took
	errs  []string
}

func (sv *saver) run(c *client.Client, session, prefix string, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		id := fmt.Sprintf("%s-%05d", prefix, i)
		res, d, err := tool(c, "session_save", saveArgs(session, id))
		sv.mu.Lock()
		switch {
		case err != nil:
			sv.mu.Unlock()
			return // the server is gone
		case res.IsError:
			sv.fails = append(sv.fails, d)
			sv.errs = append(sv.errs, resultText(res))
		default:
			sv.acked = append(sv.acked, id)
		}
		sv.mu.Unlock()
		if res.IsError {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (sv *saver) snapshot() (acked []string, fails []time.Duration, errs []string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return append([]string(nil), sv.acked...), append([]time.Duration(nil), sv.fails...), append([]string(nil), sv.errs...)
}

func missing(acked, stored []string) []string {
	have := map[string]bool{}
	for _, id := range stored {
		have[id] = true
	}
	var out []string
	for _, id := range acked {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out
}

// TestPGKill9MidSave: a server killed with SIGKILL while saving loses no acknowledged message.
func TestPGKill9MidSave(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	first := startServer(t, url)
	var s struct {
		SessionID string `json:"session_id"`
	}
	call(t, first.c, "session_save", obj{"working_dir": "/p", "messages": []any{obj{"id": "first", "role": "user", "content": "hello"}}}, &s)
	var all []string
	for round := range 4 {
		srv := startServer(t, url)
		sv := &saver{}
		done := make(chan struct{})
		go func() { sv.run(srv.c, s.SessionID, fmt.Sprintf("r%d", round), nil); close(done) }()
		// Killed while saving: after its first acknowledged save (a loaded machine, or the
		// race detector, can take longer than the pause below to get there), then a pause
		// that differs per round.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			if acked, _, _ := sv.snapshot(); len(acked) > 0 || time.Now().After(deadline) {
				break
			}
		}
		time.Sleep(time.Duration(100+round*170) * time.Millisecond)
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-done
		acked, _, _ := sv.snapshot()
		if len(acked) == 0 {
			t.Fatalf("round %d: nothing was saved before the kill", round)
		}
		all = append(all, acked...)
		stored := storedIDs(t, url, s.SessionID)
		if lost := missing(all, stored); len(lost) > 0 {
			t.Fatalf("round %d: %d acknowledged messages lost: %v", round, len(lost), lost)
		}
		t.Logf("round %d: %d acknowledged, %d stored in all", round, len(acked), len(stored))
	}
	// The session still takes saves from a surviving server.
	res, _, err := tool(first.c, "session_save", saveArgs(s.SessionID, "after-kills"))
	if err != nil || res.IsError {
		t.Fatalf("save after the kills: %v %s", err, resultText(res))
	}
}

// TestPGRestartMidRun: the database restarts while a server saves: calls during the outage are
// tool errors that say so, each within seconds; saves work again within 15 s of the database
// coming back, without restarting the server; nothing acknowledged is lost; the password
// appears in no log line and no tool output.
func TestPGRestartMidRun(t *testing.T) {
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
	sv := &saver{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { sv.run(srv.c, s.SessionID, "m", stop); close(done) }()
	time.Sleep(500 * time.Millisecond)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	downAt := time.Now()
	time.Sleep(3 * time.Second)
	// Other tools fail fast too.
	for _, name := range []string{"session_list", "session_resume", "session_search"} {
		args := obj{"session_id": s.SessionID}
		if name != "session_resume" {
			args = obj{"query": "build"}
			if name == "session_list" {
				args = obj{}
			}
		}
		res, d, err := tool(srv.c, name, args)
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "database is unreachable") || d > 5*time.Second {
			t.Errorf("%s while down: %v, %q after %v", name, err, resultText(res), d)
		}
		// Only a save is told that retrying it stores nothing twice.
		if strings.Contains(resultText(res), "session_save") {
			t.Errorf("%s while down mentions session_save: %q", name, resultText(res))
		}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	upAt := time.Now()
	_, failsDown, _ := sv.snapshot()
	// Saves work again within 15 s.
	var backAt time.Time
	for i := 0; time.Since(upAt) < 15*time.Second; i++ {
		res, _, err := tool(srv.c, "session_save", saveArgs(s.SessionID, fmt.Sprintf("probe-%03d", i)))
		if err == nil && !res.IsError {
			backAt = time.Now()
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if backAt.IsZero() {
		_, _, errs := sv.snapshot()
		t.Fatalf("saves still failing 15 s after the database came back; last errors: %v", errs[max(0, len(errs)-3):])
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-done
	acked, fails, errs := sv.snapshot()
	if len(failsDown) == 0 {
		t.Fatalf("no save failed while the database was down (%v)", time.Since(downAt))
	}
	for i, d := range fails {
		if d > 5*time.Second {
			t.Errorf("a failed save took %v: %s", d, errs[i])
		}
		if !strings.Contains(errs[i], "database is unreachable") || !strings.Contains(errs[i], "retry") ||
			!strings.Contains(errs[i], "stores nothing twice") {
			t.Errorf("tool error %q does not say the database is unreachable", errs[i])
		}
		if strings.Contains(errs[i], c.Password) {
			t.Fatalf("password in a tool error: %s", errs[i])
		}
	}
	stored := storedIDs(t, url, s.SessionID)
	if lost := missing(acked, stored); len(lost) > 0 {
		t.Fatalf("%d acknowledged messages lost: %v", len(lost), lost)
	}
	if strings.Contains(srv.logs(), c.Password) {
		t.Fatalf("password in the server's logs")
	}
	t.Logf("outage: %d saves failed (slowest %v); back %v after the restart; %d acknowledged, all stored",
		len(fails), slowest(fails), backAt.Sub(upAt).Round(time.Millisecond), len(acked))
}

func slowest(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// TestPGServerStartsWhileDatabaseDown: a server starts with its database down, answers tool
// calls with a clear error, and works once the database is up, creating the tables then.
func TestPGServerStartsWhileDatabaseDown(t *testing.T) {
	c := pgtest.Own(t, pgtest.Options{})
	_, url, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, url)
	res, d, err := tool(srv.c, "session_save", obj{"working_dir": "/p", "messages": []any{obj{"id": "x", "role": "user", "content": "hi"}}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "database is unreachable") || d > 5*time.Second {
		t.Fatalf("save while down: %v %q after %v", err, resultText(res), d)
	}
	if strings.Contains(resultText(res), c.Password) {
		t.Fatal("password in a tool error")
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var s struct {
		SessionID string `json:"session_id"`
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, _, err := tool(srv.c, "session_save", obj{"working_dir": "/p", "messages": []any{obj{"id": "x", "role": "user", "content": "hi"}}})
		if err == nil && !res.IsError {
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &s)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after the database came up: %v %s", err, resultText(res))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ids := storedIDs(t, url, s.SessionID); len(ids) != 1 {
		t.Fatalf("stored %v", ids)
	}
	logs := srv.logs()
	if !strings.Contains(logs, "not reachable yet") || strings.Contains(logs, c.Password) {
		t.Fatalf("server logs (want the warning, never the password):\n%s", logs)
	}
}
