package viewer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// Options configure a Handler. The zero value serves loopback clients without a token.
type Options struct {
	// Token, when set, is required on every request: a page link with ?token=<Token> sets a
	// cookie that carries it from then on; scripts may send "Authorization: Bearer <Token>".
	Token string
	// AllowRemote accepts any Host header. Without it only loopback names (localhost,
	// 127.0.0.1, [::1]) are served, which defeats DNS rebinding. The caller requires Token
	// when it listens beyond loopback.
	AllowRemote bool
	// Logger receives refused requests and internal errors; nil logs nothing.
	Logger *slog.Logger
	// Done, when closed, ends the live streams (a server shutting down); nil: never.
	Done <-chan struct{}
	// PollInterval is how often a live stream asks memory whether its session changed
	// (default 250 ms).
	PollInterval time.Duration
	// Heartbeat is how often an idle live stream sends a comment so proxies keep it open
	// (default 15 s).
	Heartbeat time.Duration
}

// Defaults of Options.
const (
	DefaultPollInterval = 250 * time.Millisecond
	DefaultHeartbeat    = 15 * time.Second
)

// Handler serves the viewer: its pages at /, /s/{id} and /search, its assets under
// /assets/ and its JSON API under /api/. Owns says which paths those are, so a server may
// route the rest elsewhere (the MCP endpoints).
type Handler struct {
	svc  *memory.Service
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	csrf string // the CSRF token the pages carry, random per Handler

	polls *pollHealth // the live streams' poll failures, logged for all of them (livelog.go)

	mu     sync.Mutex
	logins map[string]time.Time // unused one-time login codes and when they expire
}

// New returns the viewer's handler over svc.
func New(svc *memory.Service, opts Options) *Handler {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{svc: svc, opts: opts, log: log, mux: http.NewServeMux(), csrf: randomHex(32), logins: map[string]time.Time{},
		polls: &pollHealth{log: log, now: time.Now}}
	h.routes()
	return h
}

// Owns reports whether path is one of the viewer's: a page, an asset or the API.
func Owns(path string) bool {
	switch {
	case path == "/", path == "/search", path == "/favicon.ico":
		return true
	case strings.HasPrefix(path, "/s/"), strings.HasPrefix(path, "/assets/"), strings.HasPrefix(path, "/api/"):
		return true
	}
	return false
}

func (h *Handler) routes() {
	page := h.page
	h.mux.HandleFunc("GET /{$}", page)
	h.mux.HandleFunc("GET /s/{id}", page)
	h.mux.HandleFunc("GET /search", page)
	h.mux.HandleFunc("GET /assets/{file}", h.asset)
	h.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		r.SetPathValue("file", "icon.svg")
		h.asset(w, r)
	})
	h.mux.HandleFunc("GET /api/sessions", h.apiList)
	h.mux.HandleFunc("GET /api/sessions/{id}", h.apiSession)
	h.mux.HandleFunc("DELETE /api/sessions/{id}", h.apiDelete)
	h.mux.HandleFunc("GET /api/sessions/{id}/timeline", h.apiTimeline)
	h.mux.HandleFunc("GET /api/sessions/{id}/entries/{eid}", h.apiEntry)
	h.mux.HandleFunc("GET /api/sessions/{id}/events", h.apiEvents)
	h.mux.HandleFunc("GET /api/sessions/{id}/export", h.apiExport)
	h.mux.HandleFunc("GET /api/search", h.apiSearch)
	h.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API endpoint: "+r.Method+" "+r.URL.Path)
	})
}

// ServeHTTP applies the security checks (security.go), then serves the request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w)
	if !h.allowed(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

// apiError is the JSON body of every failed API call.
type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	// Escaped <, > and & cost nothing and keep the JSON inert if anything ever sniffed it.
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v) // the client went away
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Error: msg})
}

// fail answers a memory error: the caller's mistakes with their message and a 4xx status,
// anything else logged and reported without detail.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var me *memory.Error
	switch {
	case errors.As(err, &me) && errors.Is(err, memory.ErrInvalid):
		writeError(w, http.StatusBadRequest, me.Error())
	case errors.As(err, &me) && errors.Is(err, memory.ErrNotFound):
		writeError(w, http.StatusNotFound, me.Error())
	case errors.As(err, &me) && errors.Is(err, memory.ErrStale):
		writeError(w, http.StatusConflict, me.Error())
	case errors.As(err, &me) && errors.Is(err, memory.ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, me.Error())
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads the answer.
	default:
		h.log.Error("viewer request failed", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "the server could not answer; its log says why")
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		panic("viewer: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}
