package viewer

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
)

// fixture is the store the browser tests look at: a realistic compacted session with a fork,
// another project's session, and a session made of the untrusted-content corpus.
type fixture struct {
	main, fork, other, evil string
	backoffEntry            string // the entry search finds for "backoff"
}

// onePixel is a 1×1 PNG.
var onePixel = func() string {
	b, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	return base64.StdEncoding.EncodeToString(b)
}()

func msg(id string, role memory.Role, blocks ...memory.Block) memory.Message {
	return memory.Message{ID: id, Role: role, Content: blocks}
}
func txt(s string) memory.Block { return memory.Block{Type: memory.BlockText, Text: s} }
func call(id, name, args string) memory.Block {
	return memory.Block{Type: memory.BlockToolCall, ID: id, Name: name, Arguments: json.RawMessage(args)}
}
func result(id, out string, isErr bool) memory.Block {
	return memory.Block{Type: memory.BlockToolResult, ToolCallID: id, IsError: isErr, Content: []memory.Block{txt(out)}}
}

const clientGo = `package upload

// Client uploads files, retrying transient failures.
type Client struct {
	http    *http.Client
	retries int
}

func (c *Client) Put(ctx context.Context, name string, body []byte) error {
	for attempt := 0; ; attempt++ {
		err := c.put(ctx, name, body)
		if err == nil || attempt == c.retries {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}`

// turns returns n agent turns of the upload-retry story.
func turns(n int) []memory.Message {
	var out []memory.Message
	for i := range n {
		p := fmt.Sprintf("t%d", i)
		file := []string{"internal/upload/client.go", "internal/upload/client_test.go", "cmd/up/main.go"}[i%3]
		out = append(out,
			msg(p+"u", memory.RoleUser, txt(fmt.Sprintf("Step %d: the upload test still fails now and then. Look at %s.", i+1, file))),
			msg(p+"a", memory.RoleAssistant,
				memory.Block{Type: memory.BlockThinking, Thinking: "The retry sleeps a fixed 10ms; under load the server needs longer. I should read the client first."},
				txt("Let me read the client."), call(p+"c1", "Read", fmt.Sprintf(`{"file_path":"/home/dev/upload/%s"}`, file))),
			msg(p+"r", memory.RoleToolResult, result(p+"c1", clientGo, false)),
			msg(p+"b", memory.RoleAssistant, call(p+"c2", "Bash", `{"command":"go test ./internal/upload/ -run TestPut -count=20"}`)),
			msg(p+"s", memory.RoleToolResult, result(p+"c2", "--- FAIL: TestPut (0.02s)\n    client_test.go:41: put: connection reset by peer\nFAIL\nexit status 1", true)),
			msg(p+"e", memory.RoleAssistant, txt("The fixed sleep is too short. I will retry with exponential backoff (100 ms, doubling, capped at 5 s)."),
				call(p+"c3", "Edit", `{"file_path":"/home/dev/upload/internal/upload/client.go","old_string":"time.Sleep(10 * time.Millisecond)","new_string":"time.Sleep(backoff(attempt))"}`)),
			msg(p+"f", memory.RoleToolResult, result(p+"c3", "The file has been updated.", false)),
		)
	}
	return out
}

// untrusted is the untrusted-content corpus: testdata/untrusted.json, one payload per item.
func untrusted(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/untrusted.json")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// evilMessages puts every payload into every place a message carries text.
func evilMessages(payloads []string) []memory.Message {
	var out []memory.Message
	for i, p := range payloads {
		id := fmt.Sprintf("x%d", i)
		args, _ := json.Marshal(map[string]string{"command": p, "k" + p: p})
		out = append(out,
			msg(id+"u", memory.RoleUser, txt(p)),
			msg(id+"a", memory.RoleAssistant, memory.Block{Type: memory.BlockThinking, Thinking: p}, txt(p),
				call(id+"c", p, string(args))),
			msg(id+"r", memory.RoleToolResult, result(id+"c", p, i%2 == 0)),
		)
	}
	// An image whose media type and data are not an image.
	out = append(out, msg("img", memory.RoleUser,
		memory.Block{Type: memory.BlockImage, MediaType: "text/html", Data: base64.StdEncoding.EncodeToString([]byte(`<script>window.__pwned="image"</script>`))},
		memory.Block{Type: memory.BlockImage, MediaType: "image/png", Data: `"onerror="window.__pwned='attr'`},
		memory.Block{Type: memory.BlockImage, MediaType: "image/png", Data: onePixel}))
	return out
}

func buildFixture(t *testing.T, svc *memory.Service) fixture {
	t.Helper()
	var f fixture
	pinned := msg("agents", memory.RoleUser, txt("AGENTS.md: run go test ./... before every commit; never touch vendor/."))
	pinned.Pinned = true
	msgs := append([]memory.Message{pinned}, turns(12)...)
	f.main = save(t, svc, memory.SaveRequest{WorkingDir: "/home/dev/upload", Name: "Fix the flaky upload retry", Model: "claude-sonnet-4-5",
		Provider: "anthropic", Messages: msgs}).SessionID
	res, err := svc.Compact(t.Context(), memory.CompactRequest{SessionID: f.main, Summarizer: memory.SummarizerExtractive, KeepRecentTokens: 1500})
	if err != nil || res.Status != memory.StatusCompacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	save(t, svc, memory.SaveRequest{SessionID: f.main, Messages: []memory.Message{
		msg("after1", memory.RoleUser, txt("Good. Now make the cap configurable."), memory.Block{Type: memory.BlockImage, MediaType: "image/png", Data: onePixel}),
		msg("after2", memory.RoleAssistant, txt("Done: UPLOAD_BACKOFF_CAP sets it (default 5s).")),
	}})
	found, err := svc.Search(t.Context(), memory.SearchRequest{Query: `"exponential backoff"`, SessionID: f.main, Limit: 1})
	if err != nil || len(found.Matches) == 0 {
		t.Fatalf("search fixture: %+v %v", found, err)
	}
	f.backoffEntry = found.Matches[0].EntryID
	tl, err := svc.Timeline(t.Context(), memory.TimelineRequest{SessionID: f.main, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	fk, err := svc.Fork(t.Context(), memory.ForkRequest{SessionID: f.main, FromID: tl.Entries[0].EntryID, Name: "Try a jittered backoff"})
	if err != nil {
		t.Fatal(err)
	}
	f.fork = fk.SessionID
	f.other = save(t, svc, memory.SaveRequest{WorkingDir: "/home/dev/site", Name: "Blog: dark mode", Messages: []memory.Message{
		msg("1", memory.RoleUser, txt("Add a dark mode that follows the system setting.")),
		msg("2", memory.RoleAssistant, txt("I will use prefers-color-scheme in the stylesheet.")),
	}}).SessionID
	payloads := untrusted(t)
	f.evil = save(t, svc, memory.SaveRequest{WorkingDir: "/home/dev/evil" + strings.ReplaceAll(payloads[0], "\n", ""), Name: payloads[0],
		Messages: evilMessages(payloads)}).SessionID
	return f
}
