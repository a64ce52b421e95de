package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path returns the Chromium binary to use ($CHROMIUM, else chromium or chromium-browser on
// PATH), or "" when there is none.
func Path() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium with one tab, and what the tab did.
type Browser struct {
	// Ctx runs chromedp actions in the tab.
	Ctx context.Context

	mu         sync.Mutex
	requests   []string
	exceptions []string
	console    []string
	contexts   []runtime.ExecutionContextDescription // live JavaScript contexts, oldest first
}

// New starts Chromium for the test (skipping it when there is none, unless CI=true) with a
// window of width×height and a fresh profile; it is stopped when the test ends. Timeout
// bounds everything the test does in it.
func New(t testing.TB, width, height int, timeout time.Duration) *Browser {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (CI=true: .ci/run installs Debian's chromium package)")
		}
		t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test")
	}
	// The flags the machine needs headless (no sandbox as root, no GPU, and no background
	// connections, which a closed network refuses by the dozen).
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Sandboxed iframes (an MCP App in its host) stay in the page's process, where the
		// tests can reach their JavaScript; the sandbox itself (an opaque origin, no access to
		// the page) is enforced all the same.
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints,IsolateSandboxedIframes"),
		chromedp.Flag("disable-site-isolation-trials", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("no-pings", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	b := &Browser{Ctx: ctx}
	if err := chromedp.Listen(ctx, b.record); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("chromium: enable network events: %v", err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("chromium: enable runtime events: %v", err)
	}
	return b
}

func (b *Browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	case *runtime.EventExecutionContextCreated:
		b.contexts = append(b.contexts, *e.Context)
	case *runtime.EventExecutionContextDestroyed:
		b.contexts = slices.DeleteFunc(b.contexts, func(c runtime.ExecutionContextDescription) bool {
			return c.UniqueID == e.ExecutionContextUniqueID
		})
	case *runtime.EventExecutionContextsCleared:
		b.contexts = nil
	case *runtime.EventExceptionThrown:
		msg := e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
		b.exceptions = append(b.exceptions, msg)
	case *runtime.EventConsoleAPICalled:
		var parts []string
		for _, a := range e.Args {
			if len(a.Value) > 0 {
				parts = append(parts, string(a.Value))
			} else {
				parts = append(parts, a.Description)
			}
		}
		b.console = append(b.console, string(e.Type)+": "+strings.Join(parts, " "))
	}
}

// FrameContext returns the unique id of the newest default JavaScript context of a frame
// other than the page's own (an iframe's document), "" when there is none. Chromium may run
// a sandboxed iframe apart from its page, where frame-based lookups do not reach; its
// context is still listed here.
func (b *Browser) FrameContext(mainFrame string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.contexts) - 1; i >= 0; i-- {
		var aux struct {
			FrameID   string `json:"frameId"`
			IsDefault bool   `json:"isDefault"`
		}
		c := b.contexts[i]
		if json.Unmarshal([]byte(c.AuxData), &aux) == nil && aux.IsDefault && aux.FrameID != mainFrame {
			return c.UniqueID
		}
	}
	return ""
}

// EvalIn evaluates js in the JavaScript context with that unique id, awaiting a promise, and
// decodes its value into out.
func (b *Browser) EvalIn(uniqueID, js string, out any) error {
	res, err := chromedp.Call(b.Ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: js, UniqueContextID: uniqueID,
		ReturnByValue: ptr(true), AwaitPromise: ptr(true)})
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("%s: %s", res.ExceptionDetails.Text, describe(res.ExceptionDetails.Exception))
	}
	if out == nil || res.Result == nil {
		return nil
	}
	return json.Unmarshal([]byte(res.Result.Value), out)
}

func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	return o.Description
}

func ptr[T any](v T) *T { return &v }

// Requests returns the URL of every request the tab made so far (data: URLs included).
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

// Exceptions returns the uncaught exceptions so far.
func (b *Browser) Exceptions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.exceptions...)
}

// Console returns what the page logged so far, "type: text" per call.
func (b *Browser) Console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.console...)
}

// ForeignRequests returns the requests that went anywhere but origin (data: URLs, which
// never leave the page, excepted).
func (b *Browser) ForeignRequests(origin string) []string {
	var out []string
	for _, u := range b.Requests() {
		if strings.HasPrefix(u, "data:") || u == origin || strings.HasPrefix(u, origin+"/") || u == "about:blank" || u == "about:srcdoc" {
			continue
		}
		out = append(out, u)
	}
	return out
}

// WatchViolations makes the page count Content-Security-Policy violations into
// window.__cspViolations (an array of "directive blocked-uri" strings), from before any
// script of the next document runs. Call it before navigating.
func (b *Browser) WatchViolations() error {
	const js = `window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI));`
	_, err := chromedp.Call(b.Ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js})
	return err
}
