package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/memory"
)

func TestResources(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var saved memory.SaveResult
	f.ok("session_save", obj{"working_dir": dir, "messages": []any{
		userMsg("u1", "edit main.go please"),
		obj{"role": "assistant", "content": []any{
			obj{"type": "tool_call", "id": "c1", "name": "read", "arguments": obj{"path": "/home/dev/proj/go.mod"}},
			obj{"type": "tool_call", "id": "c2", "name": "edit", "arguments": obj{"path": "main.go"}},
		}},
	}}, &saved)
	id := saved.SessionID

	tmpl, err := f.c.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(tmpl.ResourceTemplates), 3; got != want {
		t.Fatalf("%d resource templates, want %d", got, want)
	}

	read := func(uri string) (mcp.TextResourceContents, error) {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := f.c.ReadResource(t.Context(), req)
		if err != nil {
			return mcp.TextResourceContents{}, err
		}
		if len(res.Contents) != 1 {
			t.Fatalf("%s: %d contents", uri, len(res.Contents))
		}
		tc, ok := res.Contents[0].(mcp.TextResourceContents)
		if !ok {
			t.Fatalf("%s: contents %T", uri, res.Contents[0])
		}
		return tc, nil
	}

	t.Run("transcript", func(t *testing.T) {
		tc, err := read("session://" + id)
		if err != nil {
			t.Fatal(err)
		}
		var tr memory.Transcript
		if err := json.Unmarshal([]byte(tc.Text), &tr); err != nil {
			t.Fatalf("transcript is not JSON: %v", err)
		}
		if tr.Session.ID != id || len(tr.Messages) != 2 || tc.MIMEType != "application/json" {
			t.Errorf("transcript = %+v (%s)", tr, tc.MIMEType)
		}
	})
	t.Run("summary", func(t *testing.T) {
		tc, err := read("session://" + id + "/summary")
		if err != nil {
			t.Fatal(err)
		}
		if tc.Text != "" || tc.MIMEType != "text/markdown" {
			t.Errorf("summary of an uncompacted session = %q (%s)", tc.Text, tc.MIMEType)
		}
	})
	t.Run("files", func(t *testing.T) {
		tc, err := read("session://" + id + "/files")
		if err != nil {
			t.Fatal(err)
		}
		var files struct {
			Read     []string `json:"read_files"`
			Modified []string `json:"modified_files"`
		}
		if err := json.Unmarshal([]byte(tc.Text), &files); err != nil {
			t.Fatalf("files: %v in %s", err, tc.Text)
		}
		if files.Read == nil || files.Modified == nil {
			t.Errorf("files lists must be arrays, got %s", tc.Text)
		}
	})
	for _, uri := range []string{"session://nope-1", "session://nope-1/summary", "session://nope-1/files", "session://bad%20id"} {
		t.Run("unknown "+uri, func(t *testing.T) {
			_, err := read(uri)
			if err == nil || !strings.Contains(err.Error(), "resource not found") {
				t.Errorf("err = %v, want resource not found", err)
			}
		})
	}
}

func TestPrompts(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	list, err := f.c.ListPrompts(t.Context(), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(list.Prompts), 3; got != want {
		t.Fatalf("%d prompts, want %d", got, want)
	}
	for _, p := range list.Prompts {
		if p.Description == "" || len(p.Arguments) == 0 {
			t.Errorf("prompt %s lacks description or arguments", p.Name)
		}
	}
	get := func(name string, args map[string]string) (*mcp.GetPromptResult, error) {
		req := mcp.GetPromptRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		return f.c.GetPrompt(t.Context(), req)
	}
	res, err := get("compact_summary", map[string]string{"conversation": "[User]: fix the flaky test", "focus": ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 {
		t.Fatalf("%d messages", len(res.Messages))
	}
	tc, _ := mcp.AsTextContent(res.Messages[0].Content)
	if tc == nil || !strings.Contains(tc.Text, "fix the flaky test") {
		t.Errorf("rendered prompt lacks the conversation: %+v", res.Messages[0].Content)
	}
	if _, err := get("compact_update", map[string]string{"conversation": "x"}); err == nil || !strings.Contains(err.Error(), "previous_summary") {
		t.Errorf("missing required argument: err = %v", err)
	}
}
