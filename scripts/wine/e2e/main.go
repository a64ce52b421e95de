// Command e2e drives the Windows sessionmem.exe under Wine end to end (scripts/windows.sh):
// two servers over stdio on one store, as two MCP clients on one machine would run them,
// saving into one session in turn, then listing, searching, compacting and deleting across
// them. It proves the Windows build's cross-process locks, file identity and index refresh
// work as a whole, as far as Wine implements Windows.
//
// Environment: SESSIONMEM_EXE (the .exe), WINE (the wine64 loader), STORE (a directory).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// server is one sessionmem.exe serve process and its stdio.
type server struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	id   int
}

func start(name string) (*server, error) {
	cmd := exec.Command(os.Getenv("WINE"), os.Getenv("SESSIONMEM_EXE"), "serve", "--store", os.Getenv("STORE"))
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	s := &server{name: name, cmd: cmd, in: in, out: sc}
	servers = append(servers, s)
	if _, err := s.rpc("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "wine-e2e", "version": "1"}}); err != nil {
		return nil, err
	}
	return s, s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

func (s *server) send(msg any) error {
	b, _ := json.Marshal(msg)
	_, err := s.in.Write(append(b, '\n'))
	return err
}

// rpc sends one request and returns its result, skipping notifications.
func (s *server) rpc(method string, params any) (json.RawMessage, error) {
	s.id++
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for s.out.Scan() {
		var resp struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(s.out.Bytes(), &resp); err != nil {
			return nil, fmt.Errorf("%s: %s: not JSON: %q", s.name, method, s.out.Text())
		}
		if resp.ID == nil || *resp.ID != s.id {
			continue
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: %s: %s", s.name, method, resp.Error.Message)
		}
		return resp.Result, nil
	}
	return nil, fmt.Errorf("%s: %s: stdout ended: %v", s.name, method, s.out.Err())
}

// call calls a tool and decodes its structured result into out.
func (s *server) call(tool string, args map[string]any, out any) error {
	raw, err := s.rpc("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return err
	}
	var res struct {
		IsError bool            `json:"isError"`
		Content json.RawMessage `json:"content"`
		Struct  json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: %s: tool error: %s", s.name, tool, res.Content)
	}
	if out != nil {
		return json.Unmarshal(res.Struct, out)
	}
	return nil
}

func (s *server) stop() error {
	s.in.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		return fmt.Errorf("%s: did not exit after stdin closed", s.name)
	}
}

func messages(prefix, word string, n int) []map[string]any {
	var out []map[string]any
	for i := range n {
		out = append(out,
			map[string]any{"id": fmt.Sprintf("%s-u%d", prefix, i), "role": "user", "content": fmt.Sprintf("question %d about %s", i, word)},
			map[string]any{"id": fmt.Sprintf("%s-a%d", prefix, i), "role": "assistant", "content": fmt.Sprintf("answer %d: %s %s", i, word, strings.Repeat("words ", 30))})
	}
	return out
}

func run() error {
	a, err := start("server A")
	if err != nil {
		return err
	}
	b, err := start("server B")
	if err != nil {
		return err
	}
	dir := `C:\work\project`
	var saved struct {
		ID    string `json:"session_id"`
		Saved int    `json:"saved"`
	}
	if err := a.call("session_save", map[string]any{"working_dir": dir, "name": "wine", "messages": messages("a0", "alpha", 10)}, &saved); err != nil {
		return err
	}
	id := saved.ID
	// In turn: each server appends to the session the other just wrote.
	for round := 1; round <= 6; round++ {
		s, word := a, "alpha"
		if round%2 == 1 {
			s, word = b, "bravo"
		}
		var r struct{ Saved int }
		if err := s.call("session_save", map[string]any{"session_id": id, "messages": messages(fmt.Sprintf("r%d", round), word, 5)}, &r); err != nil {
			return err
		}
		if r.Saved != 10 {
			return fmt.Errorf("round %d: %s saved %d messages, want 10", round, s.name, r.Saved)
		}
	}
	var list struct {
		Sessions []struct {
			ID       string `json:"session_id"`
			Messages int    `json:"message_count"`
		} `json:"sessions"`
	}
	for _, s := range []*server{a, b} {
		if err := s.call("session_list", map[string]any{"working_dir": dir}, &list); err != nil {
			return err
		}
		if len(list.Sessions) != 1 || list.Sessions[0].ID != id || list.Sessions[0].Messages != 80 {
			return fmt.Errorf("%s lists %+v, want session %s with 80 messages", s.name, list.Sessions, id)
		}
	}
	// What another server saved is promised to search within a second of the save (README,
	// storage.Searcher), not at once: B indexes its saves about 100 ms after each, batched, so
	// a search sent right after them (a few milliseconds on Linux, tens under Wine) finds
	// nothing yet. Asking once failed every run on Linux and most under Wine.
	lag, err := searchWithin(a, "bravo", dir, time.Second)
	if err != nil {
		return err
	}
	var compacted struct{ Status string }
	if err := b.call("session_compact", map[string]any{"session_id": id, "summarizer": "extractive", "keep_recent_tokens": 500}, &compacted); err != nil {
		return err
	}
	var resume struct {
		Summary  string            `json:"summary"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := a.call("session_resume", map[string]any{"session_id": id}, &resume); err != nil {
		return err
	}
	if compacted.Status == "compacted" && resume.Summary == "" {
		return fmt.Errorf("server A resumes no summary after server B compacted")
	}
	var fork struct {
		ID string `json:"session_id"`
	}
	if err := a.call("session_fork", map[string]any{"session_id": id}, &fork); err != nil {
		return err
	}
	if err := b.call("session_delete", map[string]any{"session_id": fork.ID}, nil); err != nil {
		return err
	}
	if err := a.call("session_list", map[string]any{"working_dir": dir}, &list); err != nil {
		return err
	}
	if len(list.Sessions) != 1 {
		return fmt.Errorf("server A lists %d sessions after server B deleted the fork, want 1", len(list.Sessions))
	}
	fmt.Printf("e2e: two servers, one session of 80 messages saved in turn, listed, searched (B's saves found by A %v after it first asked), compacted (%s), forked, deleted\n", lag.Round(time.Millisecond), compacted.Status)
	return errors.Join(a.stop(), b.stop())
}

// searchWithin searches s for word until it finds something or bound has passed since the
// call (the saves it looks for returned just before), and returns how long that took.
func searchWithin(s *server, word, dir string, bound time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		var found struct {
			Matches []json.RawMessage `json:"matches"`
		}
		if err := s.call("session_search", map[string]any{"query": word, "working_dir": dir}, &found); err != nil {
			return 0, err
		}
		if len(found.Matches) > 0 {
			return time.Since(start), nil
		}
		if time.Since(start) > bound {
			return 0, fmt.Errorf("%s's search finds nothing of what the other server saved %v after the save", s.name, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// servers are the ones run started, killed if it fails.
var servers []*server

func main() {
	err := run()
	if err != nil {
		for _, s := range servers {
			s.cmd.Process.Kill()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
}
