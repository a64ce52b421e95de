package mcpserver

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/local"
)

// TestWrapHTTP: over streamable HTTP, invalid UTF-8 is refused naming the field and a missing
// session's resource answers -32002, as on stdio.
func TestWrapHTTP(t *testing.T) {
	store, err := local.Open(t.TempDir(), local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	svc := memory.New(store, memory.Options{})
	ts := httptest.NewServer(transport.WrapHTTP(server.NewStreamableHTTPServer(New(svc, Options{}), server.WithStateful(true))))
	defer ts.Close()
	post := func(session, body string) (string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL, bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		out := string(b)
		if i := strings.Index(out, "data: "); i >= 0 { // an event stream: the message is the data
			out = strings.TrimSpace(strings.SplitN(out[i+6:], "\n", 2)[0])
		}
		return out, res.Header
	}
	_, h := post("", strings.Split(initLine(1, false), "\n")[0])
	sid := h.Get("Mcp-Session-Id")
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	got, _ := post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"session_save\",\"arguments\":{\"working_dir\":\"/p\",\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff\"}]}}}")
	if !gjson.Get(got, "result.isError").Bool() || !strings.Contains(got, "messages[0].content is not valid UTF-8") {
		t.Fatalf("invalid UTF-8 over HTTP: %s", got)
	}
	got, _ = post(sid, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"session://missing"}}`)
	if c := gjson.Get(got, "error.code").Int(); c != -32002 {
		t.Fatalf("missing resource over HTTP: %s", got)
	}
	list, err := svc.List(t.Context(), memory.ListRequest{})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("the refused call stored something: %+v %v", list, err)
	}
}
