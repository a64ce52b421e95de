package viewer

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// contentSecurityPolicy allows the page its own scripts, styles and API and nothing else:
// no inline script, no other origin, no plugin, no frame around it. Trusted Types with no
// policy make every HTML-parsing sink (innerHTML, document.write, eval, javascript: URLs)
// throw, so message text can only ever reach the page as text.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; " +
	"frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// cookieName carries the token's digest once a ?token= link was opened.
const cookieName = "sessionmem_viewer"

// csrfHeader must carry the page's CSRF token on DELETE. A cross-site page cannot set it
// without a CORS preflight, which the viewer never grants, nor read the token from the page.
const csrfHeader = "X-Sessionmem-Csrf"

func setSecurityHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
}

// allowed applies the checks every request passes, answering the request itself when it
// fails one (or when it is a token link, which it answers with a redirect).
func (h *Handler) allowed(w http.ResponseWriter, r *http.Request) bool {
	if !h.opts.AllowRemote && !loopbackHost(r.Host) {
		h.refuse(w, r, http.StatusForbidden, "Host "+r.Host+" is not a loopback name (open the viewer at 127.0.0.1 or localhost)")
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
		h.refuse(w, r, http.StatusForbidden, "Origin "+o+" is not the viewer's own")
		return false
	}
	api := strings.HasPrefix(r.URL.Path, "/api/")
	if site := r.Header.Get("Sec-Fetch-Site"); api && site != "" && site != "same-origin" && site != "none" {
		h.refuse(w, r, http.StatusForbidden, "the API answers the viewer's own pages only (Sec-Fetch-Site: "+site+")")
		return false
	}
	if h.opts.Token != "" && !h.authorized(w, r) {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		got := r.Header.Get(csrfHeader)
		if subtle.ConstantTimeCompare([]byte(got), []byte(h.csrf)) != 1 {
			h.refuse(w, r, http.StatusForbidden, "missing or wrong "+csrfHeader+" header: reload the page and try again")
			return false
		}
	}
	return true
}

// authorized checks the token (a cookie, a bearer header, or a ?token= or one-time ?login=
// link, which it turns into the cookie and a redirect to the same address without it).
func (h *Handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	want := cookieValue(h.opts.Token)
	q := r.URL.Query()
	t, login := q.Get("token"), q.Get("login")
	if r.Method == http.MethodGet && (t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(h.opts.Token)) == 1 ||
		login != "" && h.useLogin(login)) {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: want, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		q.Del("token")
		q.Del("login")
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
		return false
	}
	if c, err := r.Cookie(cookieName); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(want)) == 1 {
		return true
	}
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
		subtle.ConstantTimeCompare([]byte(got), []byte(h.opts.Token)) == 1 {
		return true
	}
	h.refuse(w, r, http.StatusUnauthorized, "this viewer needs its token: open the link sessionmem printed, "+
		"or add ?token=<SESSIONMEM_TOKEN> to the address")
	return false
}

// LoginTTL is how long a one-time login link (LoginPath) stays valid.
const LoginTTL = 15 * time.Minute

// LoginPath returns the path to open the viewer at: with a token configured, "/?login=<code>"
// with a fresh one-time code that signs one browser in (sets the cookie) within LoginTTL, so
// the link a command prints does not carry the token itself and is worthless once used;
// without a token, "/".
func (h *Handler) LoginPath() string {
	if h.opts.Token == "" {
		return "/"
	}
	code := randomHex(16)
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for c, exp := range h.logins {
		if now.After(exp) {
			delete(h.logins, c)
		}
	}
	h.logins[code] = now.Add(LoginTTL)
	return "/?login=" + code
}

// useLogin spends a one-time login code, reporting whether it was valid.
func (h *Handler) useLogin(code string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	exp, ok := h.logins[code]
	delete(h.logins, code)
	return ok && time.Now().Before(exp)
}

// cookieValue is what the cookie holds: a digest of the token, so the cookie jar never
// holds the token itself.
func cookieValue(token string) string {
	sum := sha256.Sum256([]byte("sessionmem viewer cookie\x00" + token))
	return hex.EncodeToString(sum[:])
}

func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.log.Warn("viewer refused a request", "status", status, "path", r.URL.Path, "reason", msg)
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeError(w, status, msg)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("sessionmem: " + msg + "\n"))
}

// loopbackHost reports whether a Host header names this machine's loopback interface.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether a browser's Origin header names the host the request was sent
// to (scheme aside: a TLS proxy in front changes it).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}
