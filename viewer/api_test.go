package viewer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/transcript"
)

func TestSecurityChecks(t *testing.T) {
	svc := newService(t, t.TempDir())
	id := save(t, svc, memory.SaveRequest{Messages: []memory.Message{text("1", "hello")}}).SessionID
	srv, h := serve(t, svc, Options{})
	own := srv.URL
	tests := []struct {
		name   string
		method string
		path   string
		hdr    map[string]string
		want   int
	}{
		{"page", "GET", "/", nil, 200},
		{"page under localhost", "GET", "/", map[string]string{"Host": "localhost:1"}, 200},
		{"page under [::1]", "GET", "/s/x", map[string]string{"Host": "[::1]:1"}, 200},
		{"rebound host name", "GET", "/", map[string]string{"Host": "attacker.example:80"}, 403},
		{"rebound host on the API", "GET", "/api/sessions", map[string]string{"Host": "attacker.example"}, 403},
		{"own origin", "GET", "/api/sessions", map[string]string{"Origin": own}, 200},
		{"foreign origin", "GET", "/api/sessions", map[string]string{"Origin": "http://attacker.example"}, 403},
		{"null origin", "GET", "/api/sessions", map[string]string{"Origin": "null"}, 403},
		{"same-origin fetch", "GET", "/api/sessions", map[string]string{"Sec-Fetch-Site": "same-origin"}, 200},
		{"cross-site fetch", "GET", "/api/sessions", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site fetch", "GET", "/api/sessions", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"cross-site navigation to a page", "GET", "/", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200},
		{"delete without CSRF token", "DELETE", "/api/sessions/" + id, nil, 403},
		{"delete with a wrong CSRF token", "DELETE", "/api/sessions/" + id, map[string]string{csrfHeader: "00"}, 403},
		{"delete from a foreign origin", "DELETE", "/api/sessions/" + id, map[string]string{csrfHeader: h.csrf, "Origin": "http://attacker.example"}, 403},
		{"post is refused", "POST", "/api/sessions/" + id, map[string]string{csrfHeader: h.csrf}, 404},
		{"unknown API", "GET", "/api/nope", nil, 404},
		{"unknown asset", "GET", "/assets/nope.js", nil, 404},
		{"the app document is not an asset", "GET", "/assets/app.html", nil, 404},
		{"asset", "GET", "/assets/render.js", nil, 200},
		{"bad session id", "GET", "/api/sessions/..%2Fx", nil, 400},
		{"unknown session", "GET", "/api/sessions/nope", nil, 404},
		{"bad limit", "GET", "/api/sessions?limit=x", nil, 400},
		{"limit out of range", "GET", "/api/sessions?limit=1000", nil, 400},
		{"delete with the CSRF token", "DELETE", "/api/sessions/" + id, map[string]string{csrfHeader: h.csrf, "Origin": own}, 200},
		{"deleted", "GET", "/api/sessions/" + id, nil, 404},
		{"delete again", "DELETE", "/api/sessions/" + id, map[string]string{csrfHeader: h.csrf}, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, srv, tc.method, tc.path, tc.hdr)
			if resp.StatusCode != tc.want {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.want)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "trusted-types 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers %v", resp.Header)
			}
			if strings.HasPrefix(tc.path, "/api/") && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("API answered %s", resp.Header.Get("Content-Type"))
			}
		})
	}
}

func TestToken(t *testing.T) {
	svc := newService(t, t.TempDir())
	save(t, svc, memory.SaveRequest{Messages: []memory.Message{text("1", "hello")}})
	srv, h := serve(t, svc, Options{Token: "s3cret-token"})
	noRedirect := srv.Client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(path string, hdr map[string]string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	tests := []struct {
		name string
		path string
		hdr  map[string]string
		want int
	}{
		{"page without token", "/", nil, 401},
		{"API without token", "/api/sessions", nil, 401},
		{"asset without token", "/assets/ui.js", nil, 401},
		{"wrong token link", "/?token=nope", nil, 401},
		{"wrong bearer", "/api/sessions", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"bearer", "/api/sessions", map[string]string{"Authorization": "Bearer s3cret-token"}, 200},
		{"wrong cookie", "/api/sessions", map[string]string{"Cookie": cookieName + "=s3cret-token"}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := get(tc.path, tc.hdr).StatusCode; got != tc.want {
				t.Fatalf("GET %s: %d, want %d", tc.path, got, tc.want)
			}
		})
	}
	// The link sets the cookie and sends the browser on without the token in the address.
	resp := get("/s/abc?token=s3cret-token&x=1", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/s/abc?x=1" {
		t.Fatalf("token link: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/" ||
		strings.Contains(cookies[0].Value, "s3cret") {
		t.Fatalf("cookie %+v", cookies)
	}
	c := cookies[0].Name + "=" + cookies[0].Value
	// A one-time login link does the same, once.
	login := h.LoginPath()
	if resp := get(login, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || len(resp.Cookies()) != 1 ||
		resp.Cookies()[0].Value != cookies[0].Value {
		t.Fatalf("login link: %d to %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	if resp := get(login, nil); resp.StatusCode != 401 {
		t.Fatalf("login link used twice: %d", resp.StatusCode)
	}
	if resp := get("/?login=0123456789abcdef0123456789abcdef", nil); resp.StatusCode != 401 {
		t.Fatalf("made-up login code: %d", resp.StatusCode)
	}
	if New(svc, Options{}).LoginPath() != "/" {
		t.Fatal("a login path without a token")
	}
	for _, p := range []string{"/", "/api/sessions", "/assets/style.css"} {
		if got := get(p, map[string]string{"Cookie": c}).StatusCode; got != 200 {
			t.Errorf("GET %s with the cookie: %d", p, got)
		}
	}
}

func TestAPIAnswers(t *testing.T) {
	svc := newService(t, t.TempDir())
	big := strings.Repeat("0123456789", 4000)
	a := save(t, svc, memory.SaveRequest{WorkingDir: "/w/a", Name: "first", Messages: []memory.Message{
		text("1", "We need retry with exponential backoff 🚀 for the retry loop"),
		{ID: "2", Role: memory.RoleAssistant, Content: []memory.Block{{Type: memory.BlockToolCall, ID: "c1", Name: "Read",
			Arguments: json.RawMessage(`{"path":"` + big + `"}`)}}},
		{ID: "3", Role: memory.RoleToolResult, Content: []memory.Block{{Type: memory.BlockToolResult, ToolCallID: "c1",
			Content: []memory.Block{{Type: memory.BlockText, Text: big}}}}},
		text("4", `<script>alert(1)</script>`),
	}})
	b := save(t, svc, memory.SaveRequest{WorkingDir: "/w/b", Name: "second", Messages: []memory.Message{text("1", "other"),
		text("2", "\x1b[31mred\x1b[0m alert")}})
	srv, _ := serve(t, svc, Options{})

	var list memory.ListResult
	if getJSON(t, srv, "/api/sessions", &list) != 200 || len(list.Sessions) != 2 || list.Sessions[0].ID != b.SessionID {
		t.Fatalf("list = %+v", list)
	}
	if getJSON(t, srv, "/api/sessions?working_dir=/w/a&limit=1", &list) != 200 || len(list.Sessions) != 1 || list.Sessions[0].ID != a.SessionID {
		t.Fatalf("filtered list = %+v", list)
	}

	var page timelinePage
	if getJSON(t, srv, "/api/sessions/"+a.SessionID+"/timeline", &page) != 200 || len(page.Entries) != 4 ||
		page.Session.Name != "first" || page.HasBefore || page.HasAfter || page.Leaf != page.Entries[3].EntryID {
		t.Fatalf("timeline = %+v", page)
	}
	call, result := page.Entries[1].Message.Content[0], page.Entries[2].Message.Content[0]
	var argText string
	if json.Unmarshal(call.Arguments, &argText) != nil || len(argText) != maxChars || call.Cut == 0 || !page.Entries[1].Cut {
		t.Fatalf("long arguments not cut: %d bytes, cut %d", len(call.Arguments), call.Cut)
	}
	if len(result.Content[0].Text) != maxChars || result.Content[0].Cut != len(big)-maxChars {
		t.Fatalf("long result not cut: %d, cut %d", len(result.Content[0].Text), result.Content[0].Cut)
	}
	var whole entryView
	if getJSON(t, srv, "/api/sessions/"+a.SessionID+"/entries/"+page.Entries[2].EntryID, &whole) != 200 ||
		whole.Message.Content[0].Content[0].Text != big || whole.Cut {
		t.Fatalf("whole entry cut")
	}
	var around timelinePage
	getJSON(t, srv, "/api/sessions/"+a.SessionID+"/timeline?around="+page.Entries[1].EntryID+"&limit=1", &around)
	if len(around.Entries) != 1 || around.Entries[0].EntryID != page.Entries[1].EntryID || !around.HasBefore || !around.HasAfter {
		t.Fatalf("around = %+v", around)
	}
	if code := getJSON(t, srv, "/api/sessions/"+a.SessionID+"/timeline?after=nope", nil); code != 404 {
		t.Fatalf("after an unknown entry: %d", code)
	}

	var found struct {
		Matches []searchMatch `json:"matches"`
	}
	if getJSON(t, srv, "/api/search?query=backoff&session_id="+a.SessionID, &found) != 200 || len(found.Matches) != 1 {
		t.Fatalf("search = %+v", found)
	}
	m := found.Matches[0]
	u := utf16.Encode([]rune(m.Snippet))
	if len(m.Highlights) != 1 || string(utf16.Decode(u[m.Highlights[0][0]:m.Highlights[0][1]])) != "backoff" {
		t.Fatalf("highlights %v of %q", m.Highlights, m.Snippet)
	}
	// A snippet has no pieces of terminal escape codes: it reads as the session view shows it.
	if getJSON(t, srv, "/api/search?query=alert&session_id="+b.SessionID, &found) != 200 || len(found.Matches) != 1 ||
		found.Matches[0].Snippet != "red alert" || fmt.Sprint(found.Matches[0].Highlights) != "[[4 9]]" {
		t.Fatalf("search of colored text = %+v", found)
	}
	var bad struct{ Error string }
	if code := getJSON(t, srv, "/api/search?query=%22unbalanced", &bad); code != 400 || bad.Error == "" {
		t.Fatalf("bad query: %d %q", code, bad.Error)
	}

	// Untrusted text stays inert in the JSON too.
	resp := do(t, srv, "GET", "/api/sessions/"+a.SessionID+"/timeline", nil)
	body, _ := io.ReadAll(resp.Body)
	if bytes.Contains(body, []byte("<script>")) || !bytes.Contains(body, []byte(`\u003cscript\u003e`)) {
		t.Fatalf("timeline JSON carries raw markup")
	}

	// Export is the CLI's export, as a download.
	resp = do(t, srv, "GET", "/api/sessions/"+a.SessionID+"/export", nil)
	got, _ := io.ReadAll(resp.Body)
	var want bytes.Buffer
	if err := transcript.Export(t.Context(), svc, a.SessionID, &want); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !bytes.Equal(got, want.Bytes()) ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="`+a.SessionID+`.jsonl"` {
		t.Fatalf("export: %d %q, %d bytes (want %d)", resp.StatusCode, resp.Header.Get("Content-Disposition"), len(got), want.Len())
	}
	if code := getJSON(t, srv, "/api/sessions/nope/export", nil); code != 404 {
		t.Fatalf("export of an unknown session: %d", code)
	}
}

func TestUTF16Spans(t *testing.T) {
	s := "a🚀 é retry 🚀retry"
	spans := [][2]int{{strings.Index(s, "retry"), strings.Index(s, "retry") + 5}, {strings.LastIndex(s, "retry"), len(s)}}
	u := utf16.Encode([]rune(s))
	for _, sp := range utf16Spans(s, spans) {
		if got := string(utf16.Decode(u[sp[0]:sp[1]])); got != "retry" {
			t.Fatalf("span %v is %q", sp, got)
		}
	}
	if got := utf16Spans("abc", [][2]int{{0, 2}, {1, 3}}); len(got) != 1 {
		t.Fatalf("overlap kept: %v", got)
	}
}
