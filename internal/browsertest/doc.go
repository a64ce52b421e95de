// Package browsertest starts Debian's Chromium, headless, for tests that drive a page with
// chromedp, and records what the page did: every network request, every uncaught exception,
// every JavaScript context (so a test can evaluate inside a sandboxed iframe) and, on request,
// every Content-Security-Policy violation. Tests skip when Chromium is absent, except with
// CI=true, where .ci/run installs it and its absence fails the test.
//
// It is a test helper: only _test.go files import it (the viewer's and the MCP App's tests).
package browsertest
