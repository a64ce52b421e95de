package viewer

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var assetFS embed.FS

// The scripts in the order a page loads them: helpers and rendering, the application, then
// the data source (web.js: the HTTP API; bridge.js: an MCP App host).
var (
	commonScripts = []string{"render.js", "ui.js"}
	appScripts    = []string{"bridge.js"}
)

// csrfPlaceholder in index.html is replaced by the Handler's CSRF token.
const csrfPlaceholder = "{{csrf}}"

func asset(name string) []byte {
	b, err := fs.ReadFile(assetFS, "assets/"+name)
	if err != nil {
		panic("viewer: missing embedded asset " + name) // a build without its assets
	}
	return b
}

var contentTypes = map[string]string{
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".html": "text/html; charset=utf-8",
}

// GET /, /s/{id}, /search: the page; its scripts route on the path.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	b := bytes.Replace(asset("index.html"), []byte(csrfPlaceholder), []byte(h.csrf), 1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// GET /assets/{file}: an embedded asset, revalidated by its hash.
func (h *Handler) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ct, ok := contentTypes[path.Ext(name)]
	if !ok || name == "index.html" || name == "app.html" || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(assetFS, "assets/"+name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(b)
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:12])+`"`)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

// AppResourceURI is the MCP App's resource URI and AppMIMEType its MIME type (the MCP Apps
// extension's profile of HTML).
const (
	AppResourceURI = "ui://sessionmem/viewer.html"
	AppMIMEType    = "text/html;profile=mcp-app"
)

var appHTML = sync.OnceValue(buildAppHTML)

// AppHTML returns the viewer as one self-contained MCP App document: the stylesheet and the
// scripts inline (an MCP App has no server of its own to load them from), under a
// Content-Security-Policy that allows exactly those inline blocks, by hash, and no network
// at all. Its data comes from the host (bridge.js).
func AppHTML() string { return appHTML() }

func buildAppHTML() string {
	css := string(asset("style.css"))
	var js strings.Builder
	for _, n := range append(append([]string{}, commonScripts...), appScripts...) {
		js.WriteString("// " + n + "\n")
		js.Write(asset(n))
		js.WriteString("\n")
	}
	script := js.String()
	for _, s := range []string{css, script} {
		if strings.Contains(strings.ToLower(s), "</") {
			// "</style" or "</script" would end the inline block early.
			panic("viewer: an inlined asset contains \"</\"")
		}
	}
	csp := "default-src 'none'; script-src " + hashSource(script) + "; style-src " + hashSource(css) +
		"; img-src data:; base-uri 'none'; form-action 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
	doc := string(asset("app.html"))
	doc = strings.Replace(doc, "{{csp}}", csp, 1)
	doc = strings.Replace(doc, "{{style}}", css, 1)
	doc = strings.Replace(doc, "{{script}}", script, 1)
	return doc
}

// hashSource is a CSP source expression allowing an inline block by its SHA-256.
func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}
