package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// These tests build ./cmd/sessionmem and drive the real binary over real pipes and sockets.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the command once per test run into a temporary directory; with
// SESSIONMEM_TEST_BIN set it is that binary instead (to compare two builds with the same
// benchmarks).
func binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("SESSIONMEM_TEST_BIN"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sessionmem-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sessionmem")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	if path := os.Getenv(floorEnv); path != "" {
		os.Exit(floorServer(path)) // BenchmarkStdioSaveAB's "floor"
	}
	code := m.Run()
	pgtest.StopShared()
	if benchPG != nil {
		benchPG.Remove()
	}
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

type obj = map[string]any

func initClient(t testing.TB, c *client.Client) {
	t.Helper()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

func stdioClient(t testing.TB, store string, extraEnv ...string) *client.Client {
	t.Helper()
	c, err := client.NewStdioMCPClient(binary(t), append([]string{"HOME=" + t.TempDir()}, extraEnv...), "serve", "--store", store)
	if err != nil {
		t.Fatalf("start stdio server: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	initClient(t, c)
	return c
}

// call invokes a tool and decodes its structured content; want says whether it must succeed.
func call(t testing.TB, c *client.Client, name string, args obj, out any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %v", name, res.Content)
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, b, err)
		}
	}
	return res
}

func msgs(prefix string, n int, body string) []any {
	var out []any
	for i := range n {
		out = append(out,
			obj{"id": fmt.Sprintf("%s-u%d", prefix, i), "role": "user", "content": "question " + body},
			obj{"id": fmt.Sprintf("%s-a%d", prefix, i), "role": "assistant", "content": []any{
				obj{"type": "text", "text": "answer " + body},
				obj{"type": "tool_call", "id": fmt.Sprintf("%s-c%d", prefix, i), "name": "read", "arguments": obj{"path": "main.go"}},
			}},
			obj{"id": fmt.Sprintf("%s-t%d", prefix, i), "role": "tool_result", "content": []any{
				obj{"type": "tool_result", "tool_call_id": fmt.Sprintf("%s-c%d", prefix, i), "content": "package main"},
			}},
		)
	}
	return out
}

// exerciseAllTools calls every tool once through c, as a client would.
func exerciseAllTools(t *testing.T, c *client.Client) {
	t.Helper()
	const dir = "/home/e2e/proj"
	var saved struct {
		SessionID string `json:"session_id"`
		Saved     int    `json:"saved"`
	}
	call(t, c, "session_save", obj{"working_dir": dir, "name": "e2e", "messages": msgs("m", 20, strings.Repeat("words ", 80))}, &saved)
	if saved.SessionID == "" || saved.Saved != 60 {
		t.Fatalf("save = %+v", saved)
	}
	var list struct {
		Sessions []struct {
			ID string `json:"session_id"`
		} `json:"sessions"`
	}
	call(t, c, "session_list", obj{"working_dir": dir}, &list)
	if len(list.Sessions) == 0 {
		t.Fatal("list: no sessions")
	}
	var resume struct {
		SessionID string            `json:"session_id"`
		Messages  []json.RawMessage `json:"messages"`
	}
	call(t, c, "session_resume", obj{"session_id": saved.SessionID}, &resume)
	if resume.SessionID != saved.SessionID || len(resume.Messages) == 0 {
		t.Fatalf("resume = %s with %d messages", resume.SessionID, len(resume.Messages))
	}
	var search struct {
		Matches []json.RawMessage `json:"matches"`
	}
	call(t, c, "session_search", obj{"query": "question words"}, &search)
	if len(search.Matches) == 0 {
		t.Fatal("search: no matches")
	}
	var compact struct {
		Status string `json:"status"`
	}
	call(t, c, "session_compact", obj{"session_id": saved.SessionID, "summarizer": "agent", "keep_recent_tokens": 1000}, &compact)
	if compact.Status == "" {
		t.Fatal("compact: no status")
	}
	call(t, c, "session_compact", obj{"session_id": saved.SessionID, "summarizer": "extractive", "keep_recent_tokens": 1000}, &compact)
	var fork struct {
		SessionID string `json:"session_id"`
	}
	call(t, c, "session_fork", obj{"session_id": saved.SessionID, "name": "e2e fork"}, &fork)
	var del struct {
		Deleted bool `json:"deleted"`
	}
	call(t, c, "session_delete", obj{"session_id": fork.SessionID}, &del)
	if !del.Deleted {
		t.Fatal("delete: deleted=false")
	}
	// An error is a tool result, not a protocol error.
	req := mcp.CallToolRequest{}
	req.Params.Name = "session_resume"
	req.Params.Arguments = obj{"session_id": "../x"}
	res, err := c.CallTool(context.Background(), req)
	if err != nil || !res.IsError {
		t.Fatalf("bad id: err=%v result=%+v", err, res)
	}
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "session://" + saved.SessionID + "/files"
	if _, err := c.ReadResource(context.Background(), rr); err != nil {
		t.Fatalf("read resource: %v", err)
	}
}

func TestStdioEndToEnd(t *testing.T) {
	c := stdioClient(t, t.TempDir())
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("list tools: %v, %d tools", err, len(tools.Tools))
	}
	exerciseAllTools(t, c)
}

// TestStdioStdoutIsProtocolOnly speaks raw JSON-RPC over pipes, with debug logging on, and
// checks that every stdout line is a JSON-RPC message while logs reach stderr.
func TestStdioStdoutIsProtocolOnly(t *testing.T) {
	cmd := exec.Command(binary(t), "serve", "--store", t.TempDir(), "--log-level", "debug")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	requests := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"session_save","arguments":{"working_dir":"/p","messages":[{"role":"user","content":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"session_save","arguments":{"messages":[]}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"session_list","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":7,"method":"prompts/list"}`,
	}
	for _, r := range requests {
		fmt.Fprintln(stdin, r)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	responses := 0
	for responses < 7 && sc.Scan() {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      any             `json:"id"`
			Error   json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q", sc.Text())
		}
		if msg.ID != nil {
			responses++
			if msg.Error != nil {
				t.Errorf("response %v is a JSON-RPC error: %s", msg.ID, msg.Error)
			}
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("server exit: %v (stderr %s)", err, stderr.String())
	}
	if responses != 7 {
		t.Errorf("got %d responses, want 7", responses)
	}
	if !strings.Contains(stderr.String(), "level=") {
		t.Errorf("no logs on stderr: %q", stderr.String())
	}
}

func TestServeHelpCommand(t *testing.T) {
	out, err := exec.Command(binary(t), "serve", "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "Usage: sessionmem serve") {
		t.Errorf("help = %q", out)
	}
}

// TestTwoProcessesShareStore runs two servers on one store: each sees the other's sessions,
// and concurrent saves into one session from both lose and duplicate nothing.
func TestTwoProcessesShareStore(t *testing.T) {
	store := t.TempDir()
	a, b := stdioClient(t, store), stdioClient(t, store)
	var sa, sb struct {
		SessionID string `json:"session_id"`
	}
	call(t, a, "session_save", obj{"working_dir": "/p/a", "messages": msgs("a", 1, "from a")}, &sa)
	call(t, b, "session_save", obj{"working_dir": "/p/b", "messages": msgs("b", 1, "from b")}, &sb)
	for name, c := range map[string]*client.Client{"a": a, "b": b} {
		var l struct {
			Sessions []struct {
				ID string `json:"session_id"`
			} `json:"sessions"`
		}
		call(t, c, "session_list", obj{}, &l)
		got := map[string]bool{}
		for _, s := range l.Sessions {
			got[s.ID] = true
		}
		if !got[sa.SessionID] || !got[sb.SessionID] || len(l.Sessions) != 2 {
			t.Errorf("server %s lists %v, want %s and %s", name, l.Sessions, sa.SessionID, sb.SessionID)
		}
	}

	const perServer = 15
	var wg sync.WaitGroup
	for name, c := range map[string]*client.Client{"a": a, "b": b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perServer {
				req := mcp.CallToolRequest{}
				req.Params.Name = "session_save"
				req.Params.Arguments = obj{"session_id": sa.SessionID, "messages": []any{
					obj{"id": fmt.Sprintf("%s-%d", name, i), "role": "user", "content": "concurrent"}}}
				if res, err := c.CallTool(context.Background(), req); err != nil || res.IsError {
					t.Errorf("concurrent save %s-%d: %v %v", name, i, err, res)
				}
			}
		}()
	}
	wg.Wait()
	// Replaying every id through the other server stores nothing new.
	var again struct {
		Saved        int `json:"saved"`
		MessageCount int `json:"message_count"`
	}
	var replay []any
	for _, name := range []string{"a", "b"} {
		for i := range perServer {
			replay = append(replay, obj{"id": fmt.Sprintf("%s-%d", name, i), "role": "user", "content": "concurrent"})
		}
	}
	call(t, b, "session_save", obj{"session_id": sa.SessionID, "messages": replay}, &again)
	if again.Saved != 0 || again.MessageCount != 3+2*perServer {
		t.Errorf("after concurrent saves: saved=%d message_count=%d, want 0 and %d", again.Saved, again.MessageCount, 3+2*perServer)
	}
}

// TestStdioSignalShutdown: SIGTERM ends a stdio server cleanly (exit 0) and the store stays
// readable by the next server.
func TestStdioSignalShutdown(t *testing.T) {
	store := t.TempDir()
	cmd := exec.Command(binary(t), "serve", "--store", store)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_save","arguments":{"working_dir":"/p","messages":[{"role":"user","content":"before the signal"}]}}}`)
	sc := bufio.NewScanner(stdout)
	for n := 0; n < 2 && sc.Scan(); {
		if strings.Contains(sc.Text(), `"id":`) {
			n++
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("stdio server did not stop within 15s of SIGTERM")
	}
	c := stdioClient(t, store)
	var l struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	call(t, c, "session_list", obj{}, &l)
	if len(l.Sessions) != 1 {
		t.Errorf("after restart: %d sessions, want 1", len(l.Sessions))
	}
}

// wireModel answers sampling requests for the wire tests.
type wireModel struct{ calls atomic.Int32 }

func (m *wireModel) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	m.calls.Add(1)
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("## Goal\nsummary from the client's model")},
		Model:           "wire-model",
		StopReason:      "endTurn",
	}, nil
}

// TestSamplingOverTheWire: session_compact has the client's model write the summary, over
// stdio and streamable HTTP, for legacy clients (server-initiated sampling/createMessage) and
// 2026-07-28 clients (input_required and a retried call).
func TestSamplingOverTheWire(t *testing.T) {
	store := t.TempDir()
	base, _ := httpServer(t, store)
	for _, tc := range []struct {
		name    string
		http    bool
		version string
	}{
		{"stdio 2025-11-25", false, mcp.ProtocolVersion20251125},
		{"stdio 2026-07-28", false, mcp.ProtocolVersion20260728},
		{"streamable HTTP 2025-11-25", true, mcp.ProtocolVersion20251125},
		{"streamable HTTP 2026-07-28", true, mcp.ProtocolVersion20260728},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &wireModel{}
			var tr transport.Interface
			if tc.http {
				h, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithContinuousListening())
				if err != nil {
					t.Fatal(err)
				}
				tr = h
			} else {
				tr = transport.NewStdio(binary(t), []string{"HOME=" + t.TempDir()}, "serve", "--store", store)
			}
			c := client.NewClient(tr, client.WithSamplingHandler(model), client.WithProtocolVersion(tc.version))
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req := mcp.InitializeRequest{}
			req.Params.ProtocolVersion = tc.version
			req.Params.ClientInfo = mcp.Implementation{Name: "wire", Version: "1"}
			req.Params.Capabilities.Sampling = &mcp.SamplingCapability{}
			if _, err := c.Initialize(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			var saved struct {
				SessionID string `json:"session_id"`
			}
			call(t, c, "session_save", obj{"working_dir": "/wire", "messages": msgs("w", 20, strings.Repeat("words ", 80))}, &saved)
			var out struct {
				Status     string `json:"status"`
				Summary    string `json:"summary"`
				Summarizer string `json:"summarizer"`
			}
			call(t, c, "session_compact", obj{"session_id": saved.SessionID, "summarizer": "sampling", "keep_recent_tokens": 1000}, &out)
			if out.Status != "compacted" || out.Summarizer != "sampling" || !strings.Contains(out.Summary, "summary from the client's model") {
				t.Errorf("compact = %+v", out)
			}
			if model.calls.Load() == 0 {
				t.Error("the client's model was never asked")
			}
		})
	}
}
