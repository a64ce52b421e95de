package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/internal/browsertest"
	"github.com/sessionmem/sessionmem/viewer"
)

// TestAppResource: the three read tools name the app; the resource is an MCP App document
// whose CSP allows exactly its inline style and script, and no network.
func TestAppResource(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tools, err := f.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var withApp []string
	for _, tool := range tools.Tools {
		if tool.Meta == nil {
			continue
		}
		ui, _ := tool.Meta.AdditionalFields["ui"].(map[string]any)
		if ui["resourceUri"] != viewer.AppResourceURI || tool.Meta.AdditionalFields["ui/resourceUri"] != viewer.AppResourceURI {
			t.Errorf("%s: _meta %v", tool.Name, tool.Meta.AdditionalFields)
		}
		withApp = append(withApp, tool.Name)
	}
	slices.Sort(withApp)
	if !slices.Equal(withApp, []string{"session_list", "session_resume", "session_search"}) {
		t.Fatalf("tools with the app: %v", withApp)
	}
	res, err := f.c.ListResources(t.Context(), mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Resources, func(r mcp.Resource) bool {
		return r.URI == viewer.AppResourceURI && r.MIMEType == "text/html;profile=mcp-app"
	}) {
		t.Fatalf("resources %+v", res.Resources)
	}
	read := mcp.ReadResourceRequest{}
	read.Params.URI = viewer.AppResourceURI
	got, err := f.c.ReadResource(t.Context(), read)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := got.Contents[0].(mcp.TextResourceContents)
	if !ok || c.MIMEType != "text/html;profile=mcp-app" || c.Text != viewer.AppHTML() {
		t.Fatalf("contents %T %s", got.Contents[0], c.MIMEType)
	}
	if b, _ := json.Marshal(c.Meta); string(b) != `{"ui":{"csp":{},"prefersBorder":true}}` {
		t.Errorf("resource _meta %s", b)
	}
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]+)">`).FindStringSubmatch(c.Text)
	if csp == nil {
		t.Fatal("no CSP in the app document")
	}
	for _, block := range regexp.MustCompile(`(?s)<(style|script)>(.*?)</(?:style|script)>`).FindAllStringSubmatch(c.Text, -1) {
		sum := sha256.Sum256([]byte(block[2]))
		if want := block[1] + "-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp[1], want) {
			t.Errorf("CSP %q does not allow the inline %s", csp[1], block[1])
		}
	}
	for _, want := range []string{"default-src 'none'", "trusted-types 'none'"} {
		if !strings.Contains(csp[1], want) || strings.Contains(csp[1], "connect-src") {
			t.Errorf("CSP %q: want %q and no connect-src", csp[1], want)
		}
	}
}

// appHost serves the test host page and its /rpc: the page's MCP requests, made by an MCP
// client of the server (as a host's own client would).
func appHost(t *testing.T, f *fixture) *httptest.Server {
	page, err := os.ReadFile("testdata/apphost/host.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		var res any
		switch req.Method {
		case "tools/list":
			res, err = f.c.ListTools(r.Context(), mcp.ListToolsRequest{})
		case "resources/read":
			rr := mcp.ReadResourceRequest{}
			if err = json.Unmarshal(req.Params, &rr.Params); err == nil {
				res, err = f.c.ReadResource(r.Context(), rr)
			}
		case "tools/call":
			cr := mcp.CallToolRequest{}
			if err = json.Unmarshal(req.Params, &cr.Params); err == nil {
				res, err = f.c.CallTool(r.Context(), cr)
			}
		default:
			err = errUnsupported(req.Method)
		}
		out := map[string]any{"result": res}
		if err != nil {
			out = map[string]any{"error": err.Error()}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type errUnsupported string

func (e errUnsupported) Error() string { return "the test host does not forward " + string(e) }

// appTab is the host page in Chromium with helpers that run inside the app's frame.
type appTab struct {
	t   *testing.T
	b   *browsertest.Browser
	app string // the app frame's JavaScript context
}

func (a *appTab) host(js string) {
	a.t.Helper()
	if _, err := chromedp.Run(a.b.Ctx, chromedp.Evaluate[chromedp.Void](js, chromedp.EvalAwaitPromise)); err != nil {
		a.t.Fatalf("host: %s: %v", js, err)
	}
}

// inApp evaluates js in the app's frame until it is truthy (10 s at most), and returns its
// value.
func inApp[T any](a *appTab, js string) T {
	a.t.Helper()
	if _, ok := any(*new(T)).(bool); ok {
		js = "!!(" + js + ")"
	}
	var last error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		var raw json.RawMessage
		if last = a.b.EvalIn(a.app, js, &raw); last != nil {
			continue
		}
		var truthy any
		json.Unmarshal(raw, &truthy)
		if truthy == nil || truthy == false || truthy == "" || truthy == float64(0) {
			continue
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			a.t.Fatalf("app: %s: %v", js, err)
		}
		return v
	}
	var body string
	a.b.EvalIn(a.app, `document.querySelector("main").innerText.slice(0, 500)`, &body)
	a.t.Fatalf("app: waiting for %s (last error %v; exceptions %v, console %v); the app shows: %s", js, last, a.b.Exceptions(), a.b.Console(), body)
	panic("unreachable")
}

// open loads the host page and has it render the app for a call of tool.
func (a *appTab) open(url, tool string, args string) {
	a.t.Helper()
	if err := chromedp.Do(a.b.Ctx, chromedp.Navigate(url)); err != nil {
		a.t.Fatal(err)
	}
	tree, err := chromedp.Call(a.b.Ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		a.t.Fatal(err)
	}
	a.host(`start(` + jsString(tool) + `, ` + args + `)`)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if a.app = a.b.FrameContext(string(tree.FrameTree.Frame.ID)); a.app != "" {
			return
		}
	}
	a.t.Fatal("the app frame has no JavaScript context")
}

// bridgeCalls lists the tools the app called through the host, in order.
func (a *appTab) bridgeCalls() []string {
	a.t.Helper()
	v, err := chromedp.Run(a.b.Ctx, chromedp.Evaluate[[]string](`bridgeLog.filter((m) => m.method === "tools/call").map((m) => m.params.name)`))
	if err != nil {
		a.t.Fatal(err)
	}
	return v
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestAppInHost renders the app in Chromium inside a minimal host page, as a sandboxed iframe
// whose bridge calls the host answers: it lists, opens and searches sessions through tool
// calls, starting from each tool's result, and no untrusted content runs.
func TestAppInHost(t *testing.T) {
	f := newFixture(t, fixtureOpts{index: true})
	main := f.newSession("/home/dev/upload", "Fix the flaky upload retry", 3, "retry with exponential backoff")
	f.newSession("/home/dev/site", "Blog: dark mode", 2, "prefers-color-scheme")
	var comp struct{ Status string }
	f.ok("session_compact", obj{"session_id": main, "summarizer": "extractive", "keep_recent_tokens": 1}, &comp)
	f.ok("session_save", obj{"session_id": main, "messages": []any{userMsg("late", "one more <script>window.__pwned=1</script> <img src=x onerror=window.__pwned=2>")}}, nil)
	evil := f.newSession("/home/dev/evil", `<img src=x onerror="window.__pwned='name'">`, 1, `<script>window.__pwned="body"</script> <a href="javascript:window.__pwned=3">x</a>`)
	host := appHost(t, f)
	a := &appTab{t: t, b: browsertest.New(t, 1100, 800, 2*time.Minute)}
	if err := a.b.WatchViolations(); err != nil {
		t.Fatal(err)
	}

	t.Run("list", func(t *testing.T) {
		a.t = t
		a.open(host.URL, "session_list", `{}`)
		inApp[bool](a, `document.querySelectorAll(".srow").length === 3`)
		if got := inApp[string](a, `document.documentElement.dataset.theme`); got != "dark" {
			t.Errorf("theme %q, want the host's dark", got)
		}
		if got := inApp[string](a, `getComputedStyle(document.documentElement).getPropertyValue("--color-text-info") || "unset"`); got != "rgb(1, 2, 3)" {
			t.Errorf("host colour %q", got)
		}
		inApp[bool](a, `getComputedStyle(document.documentElement).getPropertyValue("--evil") === ""`)
		// Open a session: session_resume through the host.
		inApp[bool](a, `(document.querySelector(".srow[data-id='`+main+`'] a").click(), true)`)
		inApp[bool](a, `document.querySelector(".timeline .compaction") && document.querySelectorAll(".timeline .msg").length >= 2`)
		inApp[bool](a, `document.querySelector(".session-head h1").textContent === "Fix the flaky upload retry"`)
		// Search: session_search through the host, snippets marked.
		inApp[bool](a, `(() => { const q = document.getElementById("q"); q.value = "backoff"; q.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" })); return true; })()`)
		inApp[bool](a, `document.querySelectorAll(".hits .hit").length > 0 && document.querySelector(".hits mark").textContent.toLowerCase() === "backoff"`)
		// A hit opens its session at the message.
		inApp[bool](a, `(document.querySelector(".hits .hit a").click(), true)`)
		inApp[bool](a, `document.body.dataset.session === "`+main+`" && document.querySelector(".timeline .msg")`)
		calls := a.bridgeCalls()
		for _, want := range []string{"session_resume", "session_search"} {
			if !slices.Contains(calls, want) {
				t.Errorf("the app never called %s through the host: %v", want, calls)
			}
		}
		init := inHost[map[string]any](a, `bridgeLog[0]`)
		params, _ := init["params"].(map[string]any)
		if init["method"] != "ui/initialize" || params["protocolVersion"] != "2026-01-26" {
			t.Errorf("first message %v", init)
		}
		if !inHost[bool](a, `bridgeLog.some((m) => m.method === "ui/notifications/initialized") && bridgeLog.some((m) => m.method === "ui/notifications/size-changed")`) {
			t.Error("no initialized or size-changed notification")
		}
	})

	t.Run("from a search result", func(t *testing.T) {
		a.t = t
		a.open(host.URL, "session_search", `{"query": "backoff"}`)
		inApp[bool](a, `location.href === "about:srcdoc" && document.querySelectorAll(".hits .hit").length > 0`)
		if got := inApp[string](a, `document.getElementById("q").value`); got != "backoff" {
			t.Errorf("query box %q", got)
		}
		time.Sleep(200 * time.Millisecond)
		if calls := a.bridgeCalls(); slices.Contains(calls, "session_search") {
			t.Errorf("the app searched again instead of showing the host's result: %v", calls)
		}
	})

	t.Run("from a resume result", func(t *testing.T) {
		a.t = t
		a.open(host.URL, "session_resume", `{"session_id": `+jsString(main)+`}`)
		inApp[bool](a, `document.body.dataset.session === "`+main+`" && document.querySelector(".timeline .compaction")`)
	})

	t.Run("untrusted", func(t *testing.T) {
		a.t = t
		a.open(host.URL, "session_resume", `{"session_id": `+jsString(evil)+`}`)
		inApp[bool](a, `document.querySelector(".timeline .msg")`)
		inApp[bool](a, `(document.querySelectorAll("details").forEach((d) => (d.open = true)), true)`)
		time.Sleep(300 * time.Millisecond)
		inApp[bool](a, `window.__pwned === undefined && document.querySelector(".timeline").querySelectorAll("script, img, a[href^=javascript]").length === 0 &&
			document.querySelector(".timeline").textContent.includes("<script>window.__pwned")`)
		if inHost[bool](a, `window.__pwned !== undefined`) {
			t.Error("a payload ran in the host page")
		}
		if v := inApp[[]string](a, `window.__cspViolations || []`); len(v) > 0 {
			t.Errorf("CSP violations in the app: %v", v)
		}
		if ex := a.b.Exceptions(); len(ex) > 0 {
			t.Errorf("exceptions: %v", ex)
		}
		if fr := a.b.ForeignRequests(host.URL); len(fr) > 0 {
			t.Errorf("requests to other origins: %v", fr)
		}
	})
}

func inHost[T any](a *appTab, js string) T {
	a.t.Helper()
	v, err := chromedp.Run(a.b.Ctx, chromedp.Evaluate[T](js))
	if err != nil {
		a.t.Fatalf("host: %s: %v", js, err)
	}
	return v
}

// TestAppInOfficialHost renders the app with the host side of the official MCP Apps SDK
// (@modelcontextprotocol/ext-apps AppBridge, with @modelcontextprotocol/client speaking
// streamable HTTP to the server), loaded from npm's packages in
// $SESSIONMEM_EXT_APPS_MODULES (a node_modules directory; scripts/app-host.sh installs it and
// runs this test). Without it the test skips.
func TestAppInOfficialHost(t *testing.T) {
	modules := os.Getenv("SESSIONMEM_EXT_APPS_MODULES")
	if modules == "" {
		t.Skip("SESSIONMEM_EXT_APPS_MODULES is not set (scripts/app-host.sh installs the official host side from npm and runs this test)")
	}
	f := newFixture(t, fixtureOpts{index: true})
	main := f.newSession("/home/dev/upload", "Fix the flaky upload retry", 3, "retry with exponential backoff")
	f.newSession("/home/dev/site", "Blog: dark mode", 2, "prefers-color-scheme")
	page, err := os.ReadFile("testdata/apphost/official.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	mux.Handle("/nm/", http.StripPrefix("/nm/", http.FileServer(http.Dir(modules))))
	// The server behind /mcp records the tools called through it.
	var mu sync.Mutex
	var calls []string
	record := func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			calls = append(calls, req.Params.Name)
			mu.Unlock()
			return next(ctx, req)
		}
	}
	mux.Handle("/mcp", server.NewStreamableHTTPServer(New(f.svc, Options{Middleware: []server.ToolHandlerMiddleware{record}}), server.WithEndpointPath("/mcp")))
	host := httptest.NewServer(mux)
	t.Cleanup(func() {
		host.CloseClientConnections() // the client's standalone stream
		host.Close()
	})

	a := &appTab{t: t, b: browsertest.New(t, 1100, 800, 2*time.Minute)}
	a.open(host.URL, "session_list", `{}`)
	if !inHost[bool](a, `window.mimeType === "text/html;profile=mcp-app"`) {
		t.Fatal("the official client read no MCP App")
	}
	inApp[bool](a, `document.querySelectorAll(".srow").length === 2`)
	if !inHost[bool](a, `window.initialized === true`) {
		t.Fatal("AppBridge saw no initialized notification")
	}
	inApp[bool](a, `(document.querySelector(".srow[data-id='`+main+`'] a").click(), true)`)
	inApp[bool](a, `document.querySelectorAll(".timeline .msg").length === 6`)
	inApp[bool](a, `(() => { const q = document.getElementById("q"); q.value = "backoff"; q.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" })); return true; })()`)
	inApp[bool](a, `document.querySelectorAll(".hits .hit").length > 0`)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(calls, []string{"session_list", "session_resume", "session_search"}) {
		t.Errorf("calls through AppBridge: %v", calls)
	}
	if ex := a.b.Exceptions(); len(ex) > 0 {
		t.Errorf("exceptions: %v", ex)
	}
	t.Logf("the app listed, opened and searched sessions through the official AppBridge: %v", calls)
}
