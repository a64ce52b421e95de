package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage/local"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/memory"
)

// fixture is a real store in a temp dir, the service over it, and an in-process client.
type fixture struct {
	t   *testing.T
	svc *memory.Service
	c   *client.Client
}

type fixtureOpts struct {
	server  Options
	sampler client.SamplingHandler
	legacy  bool // pin protocol 2025-11-25 (server-initiated sampling)
	index   bool // give the store its full-text index
}

func newFixture(t *testing.T, fo fixtureOpts) *fixture {
	t.Helper()
	lo := local.Options{Summarize: memory.Summarize}
	if fo.index {
		lo.Docs = memory.Docs
	}
	store, err := local.Open(t.TempDir(), lo)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	svc := memory.New(store, memory.Options{})
	srv := New(svc, fo.server)
	var copts []client.ClientOption
	if fo.sampler != nil {
		copts = append(copts, client.WithSamplingHandler(fo.sampler))
	}
	if fo.legacy {
		copts = append(copts, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	}
	c, err := client.NewInProcessClientWithOptions(srv, copts...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if fo.legacy {
		init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	}
	init.Params.ClientInfo = mcp.Implementation{Name: "mcpserver-test", Version: "1"}
	if fo.sampler != nil {
		init.Params.Capabilities.Sampling = &mcp.SamplingCapability{}
	}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &fixture{t: t, svc: svc, c: c}
}

// at returns the fixture reporting to t (for subtests).
func (f *fixture) at(t *testing.T) *fixture { return &fixture{t: t, svc: f.svc, c: f.c} }

// call invokes a tool; a JSON-RPC level error fails the test (tool errors must be results).
func (f *fixture) call(name string, args any) *mcp.CallToolResult {
	f.t.Helper()
	return f.callCtx(f.t.Context(), name, args)
}

func (f *fixture) callCtx(ctx context.Context, name string, args any) *mcp.CallToolResult {
	f.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := f.c.CallTool(ctx, req)
	if err != nil {
		f.t.Fatalf("%s: JSON-RPC error %v (tool failures must be isError results)", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured content into out.
func (f *fixture) ok(name string, args any, out any) *mcp.CallToolResult {
	f.t.Helper()
	res := f.call(name, args)
	if res.IsError {
		f.t.Fatalf("%s(%s): unexpected tool error: %s", name, mustString(args), text(res))
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			f.t.Fatalf("%s: structured content: %v", name, err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			f.t.Fatalf("%s: decode structured content %s: %v", name, b, err)
		}
	}
	if text(res) == "" {
		f.t.Fatalf("%s: no text block", name)
	}
	return res
}

// fails calls a tool that must fail with a tool error whose text contains every want.
func (f *fixture) fails(name string, args any, want ...string) string {
	f.t.Helper()
	res := f.call(name, args)
	got := text(res)
	if !res.IsError {
		f.t.Fatalf("%s(%s): want isError, got success: %s", name, mustString(args), got)
	}
	for _, w := range want {
		if !strings.Contains(strings.ToLower(got), strings.ToLower(w)) {
			f.t.Errorf("%s: error text %q does not contain %q", name, got, w)
		}
	}
	return got
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func mustString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

type obj = map[string]any

func userMsg(id, text string) obj { return obj{"id": id, "role": "user", "content": text} }

func assistantMsg(id, text string) obj {
	return obj{"id": id, "role": "assistant", "content": []any{obj{"type": "text", "text": text}}}
}

// newSession saves n user/assistant message pairs in a new session and returns its id.
func (f *fixture) newSession(dir, name string, pairs int, body string) string {
	f.t.Helper()
	var msgs []any
	for i := range pairs {
		msgs = append(msgs,
			userMsg(idf("u", i), "question "+body),
			assistantMsg(idf("a", i), "answer "+body))
	}
	var out memory.SaveResult
	f.ok("session_save", obj{"working_dir": dir, "name": name, "messages": msgs}, &out)
	return out.SessionID
}

func idf(prefix string, i int) string { return fmt.Sprintf("%s%04d", prefix, i) }

// What the transport answers with (mcpserver/transport): JSON-RPC's error codes, and
// the deepest message it reads.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	maxEnvelopeDepth   = 10000
)
