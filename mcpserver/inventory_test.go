package mcpserver

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

var update = flag.Bool("update", false, "rewrite testdata/toolsnaps/*.json from the current tool definitions")

func inventory() []mcp.Tool {
	o := Options{}.withDefaults()
	var out []mcp.Tool
	for _, st := range tools(nil, &o) {
		out = append(out, st.Tool)
	}
	return out
}

// TestToolSnapshots pins every tool's schema and description: a change must be deliberate
// (go test ./mcpserver -run TestToolSnapshots -update) and shows up in review.
func TestToolSnapshots(t *testing.T) {
	for _, tool := range inventory() {
		t.Run(tool.Name, func(t *testing.T) {
			got, err := json.MarshalIndent(tool, "", "  ")
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "toolsnaps", tool.Name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("no snapshot for %s (%v); run: go test ./mcpserver -run TestToolSnapshots -update", tool.Name, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("tool %s differs from %s; if intended, run with -update.\ngot:\n%s", tool.Name, path, got)
			}
		})
	}
	t.Run("no stale snapshots", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join("testdata", "toolsnaps", "*.json"))
		for _, f := range files {
			name := filepath.Base(f[:len(f)-len(".json")])
			if !slices.ContainsFunc(inventory(), func(t mcp.Tool) bool { return t.Name == name }) {
				t.Errorf("snapshot %s has no tool", f)
			}
		}
	})
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestToolInvariants checks what every tool must satisfy, whoever adds it.
func TestToolInvariants(t *testing.T) {
	tools := inventory()
	if got, want := len(tools), 7; got != want {
		t.Fatalf("%d tools, want %d", got, want)
	}
	seen := map[string]bool{}
	for _, tool := range tools {
		t.Run(tool.Name, func(t *testing.T) {
			if seen[tool.Name] {
				t.Errorf("duplicate tool name")
			}
			seen[tool.Name] = true
			if !snakeCase.MatchString(tool.Name) {
				t.Errorf("name %q is not snake_case", tool.Name)
			}
			if len(tool.Description) < 100 || !bytes.Contains([]byte(tool.Description), []byte("Example:")) {
				t.Errorf("description too thin (needs when to call, what comes back, an Example:)")
			}
			a := tool.Annotations
			if a.Title == "" || a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
				t.Errorf("annotations not all set explicitly: %+v", a)
			}
			if *a.ReadOnlyHint && *a.DestructiveHint {
				t.Errorf("read-only tool marked destructive")
			}
			for _, raw := range []json.RawMessage{tool.RawInputSchema, tool.RawOutputSchema} {
				var s map[string]any
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatalf("schema is not a JSON object: %v", err)
				}
				if s["type"] != "object" {
					t.Errorf("schema type = %v, want object", s["type"])
				}
				for _, k := range []string{"anyOf", "oneOf", "allOf", "not", "$ref"} {
					if _, ok := s[k]; ok {
						t.Errorf("schema has top-level %s", k)
					}
				}
				props, _ := s["properties"].(map[string]any)
				for name, p := range props {
					if !snakeCase.MatchString(name) {
						t.Errorf("property %q is not snake_case", name)
					}
					if d, _ := p.(map[string]any)["description"].(string); d == "" {
						t.Errorf("property %q has no description", name)
					}
				}
				req, _ := s["required"].([]any)
				for _, r := range req {
					if _, ok := props[r.(string)]; !ok {
						t.Errorf("required %q is not a property", r)
					}
				}
			}
			var in map[string]any
			_ = json.Unmarshal(tool.RawInputSchema, &in)
			if in["additionalProperties"] != false {
				t.Errorf("input schema allows unknown properties")
			}
		})
	}
	want := map[string][3]bool{ // readOnly, destructive, idempotent
		"session_save":    {false, false, false},
		"session_resume":  {true, false, true},
		"session_compact": {false, false, false},
		"session_list":    {true, false, true},
		"session_fork":    {false, false, false},
		"session_delete":  {false, true, true},
		"session_search":  {true, false, true},
	}
	for _, tool := range tools {
		a := tool.Annotations
		got := [3]bool{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint}
		if got != want[tool.Name] {
			t.Errorf("%s: readOnly/destructive/idempotent = %v, want %v", tool.Name, got, want[tool.Name])
		}
	}
}

func TestListToolsOverMCP(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	res, err := f.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.Tools), 7; got != want {
		t.Fatalf("%d tools listed, want %d", got, want)
	}
	for _, tool := range res.Tools {
		if tool.OutputSchema.Type != "object" && tool.RawOutputSchema == nil {
			t.Errorf("%s: no output schema on the wire", tool.Name)
		}
	}
}
