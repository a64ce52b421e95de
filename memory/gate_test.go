package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionmem/sessionmem/redact"
	"github.com/sessionmem/sessionmem/redact/redacttest"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
)

func redactOpts(t testing.TB) Options {
	r, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Redact: r.String}
}

// fill returns a value of type t with every pointer set, every slice holding two elements
// and every string holding "x", recursively (a recursive type is filled two levels deep), so
// that every field a record can carry is reachable.
func fill(t reflect.Type, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Pointer:
		if depth < 8 {
			v.Set(reflect.New(t.Elem()))
			v.Elem().Set(fill(t.Elem(), depth+1))
		}
	case reflect.Slice:
		if t == rawMessageType {
			v.SetBytes([]byte(`{"k":"x"}`))
		} else if depth < 8 {
			v.Set(reflect.MakeSlice(t, 2, 2))
			for i := range 2 {
				v.Index(i).Set(fill(t.Elem(), depth+1))
			}
		}
	case reflect.Struct:
		if t == timeType {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			break
		}
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(fill(t.Field(i).Type, depth+1))
			}
		}
	}
	return v
}

// leaf is a place where text can be planted: a string, or a JSON value's string or key.
type leaf struct {
	path  string
	class int
	set   func(v reflect.Value, text string) // v is the root; sets this leaf
}

// leaves lists every string leaf reachable in v (a filled root), with its gate class.
func leaves(root reflect.Value) []leaf {
	var out []leaf
	var walk func(v reflect.Value, path string, class int, get func(reflect.Value) reflect.Value)
	walk = func(v reflect.Value, path string, class int, get func(reflect.Value) reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			out = append(out, leaf{path, class, func(r reflect.Value, text string) { get(r).SetString(text) }})
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), path, class, func(r reflect.Value) reflect.Value { return get(r).Elem() })
			}
		case reflect.Slice:
			if v.Type() == rawMessageType {
				out = append(out,
					leaf{path + "{value}", class, func(r reflect.Value, text string) {
						b, _ := json.Marshal(map[string]any{"k": []any{text}})
						get(r).SetBytes(b)
					}},
					leaf{path + "{key}", class, func(r reflect.Value, text string) {
						b, _ := json.Marshal(map[string]any{text: 1})
						get(r).SetBytes(b)
					}},
					// A duplicate key: decoders keep the last value, so the first is
					// invisible to a check of the decoded value, yet it is in the bytes.
					leaf{path + "{shadowed}", class, func(r reflect.Value, text string) {
						b, _ := json.Marshal(text)
						get(r).SetBytes([]byte(`{"k":` + string(b) + `,"k":"x"}`))
					}})
				return
			}
			for i := range v.Len() {
				walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), class, func(r reflect.Value) reflect.Value { return get(r).Index(i) })
			}
		case reflect.Struct:
			t := v.Type()
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() || f.Tag.Get("json") == "-" || t == timeType {
					continue
				}
				c := gateText
				switch f.Tag.Get("gate") {
				case "id":
					c = gateID
				case "session":
					c = gateSession
				}
				if p, ok := gatePolicies[t][f.Name]; ok {
					c = p
				}
				walk(v.Field(i), path+"."+f.Name, c, func(r reflect.Value) reflect.Value { return get(r).Field(i) })
			}
		}
	}
	walk(root, root.Type().Name(), gateText, func(r reflect.Value) reflect.Value { return r })
	return out
}

// TestGateEveryField plants a secret of every kind in every string of every record type
// (found by reflection: a field added later is planted too) and checks that what would be
// written holds none of them. Session ids are refused instead.
func TestGateEveryField(t *testing.T) {
	s := New(nil, redactOpts(t))
	h := storage.Header{ID: "s1", Nonce: "n1"}
	roots := []struct {
		typ    reflect.Type
		encode func(v reflect.Value) ([]byte, error)
	}{
		{reflect.TypeFor[Entry](), func(v reflect.Value) ([]byte, error) {
			e, err := s.gateEntry(h, v.Interface().(Entry))
			if err != nil {
				return nil, err
			}
			return encodeEntry(e)
		}},
		{reflect.TypeFor[storage.Meta](), func(v reflect.Value) ([]byte, error) {
			m, err := s.gateMeta("salt", v.Interface().(storage.Meta))
			if err != nil {
				return nil, err
			}
			return json.Marshal(m)
		}},
		{reflect.TypeFor[storage.Header](), func(v reflect.Value) ([]byte, error) {
			hv := v.Interface().(storage.Header)
			if err := s.Gate(&hv); err != nil {
				return nil, err
			}
			return json.Marshal(hv)
		}},
	}
	secrets := redacttest.Plant(3)
	total := 0
	for _, root := range roots {
		ls := leaves(fill(root.typ, 0))
		if len(ls) < 3 {
			t.Fatalf("%s: only %d leaves found", root.typ, len(ls))
		}
		for _, l := range ls {
			total++
			for _, sec := range secrets {
				v := fill(root.typ, 0)
				l.set(v, "before "+sec.Text+" after")
				out, err := root.encode(v)
				if l.class == gateSession {
					if err == nil && bytes.Contains(out, []byte(sec.Secret)) {
						t.Errorf("%s: session id with a %s secret was neither refused nor redacted", l.path, sec.Kind)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s (%s): %v", l.path, sec.Kind, err)
				}
				if bytes.Contains(out, []byte(sec.Secret)) {
					t.Errorf("%s: a %s secret passed the gate:\n%s", l.path, sec.Kind, out)
				}
			}
		}
		t.Logf("%s: %d fields planted with %d kinds", root.typ, len(ls), len(secrets))
	}
	if total < 40 {
		t.Fatalf("only %d fields found: is the walk broken?", total)
	}
}

// TestGateRefusesUnknownKinds: a field the gate cannot read (a map, an interface) is an error,
// never silently written.
func TestGateRefusesUnknownKinds(t *testing.T) {
	s := New(nil, redactOpts(t))
	type withMap struct{ M map[string]string }
	type withAny struct{ A any }
	type withBytes struct{ B []byte }
	for _, v := range []any{&withMap{M: map[string]string{"a": "b"}}, &withAny{A: "x"}, &withBytes{B: []byte("x")}} {
		if err := s.Gate(v); err == nil {
			t.Errorf("%T: no error", v)
		}
	}
}

// TestGateIDsStayUsable: an id holding a secret becomes a stable stand-in, so a retried save
// stores nothing twice and parent_id, from_id and tool-call links still work.
func TestGateIDsStayUsable(t *testing.T) {
	s := newTestService(t, redactOpts(t))
	ctx := context.Background()
	sec := redacttest.Plant(5)
	gh := ""
	for _, x := range sec {
		if x.Kind == "github-token" {
			gh = x.Secret
		}
	}
	msgs := []Message{
		user("u-"+gh, "hello"),
		assistantCall("a-"+gh, "call-"+gh, "read", `{"path":"x.go"}`),
		toolResult("t-"+gh, "call-"+gh, "package x"),
	}
	r1 := mustSave(t, s, SaveRequest{WorkingDir: "/w", Messages: msgs})
	r2 := mustSave(t, s, SaveRequest{SessionID: r1.SessionID, Messages: msgs})
	if r2.Saved != 0 || r2.MessageCount != 3 {
		t.Fatalf("retry stored again: %+v", r2)
	}
	res, err := s.Resume(ctx, ResumeRequest{SessionID: r1.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if bytes.Contains(b, []byte(gh)) {
		t.Fatalf("secret in resume output: %s", b)
	}
	call, result := res.Messages[1].Content[1], res.Messages[2].Content[0]
	if call.ID == "" || call.ID != result.ToolCallID || !strings.HasPrefix(call.ID, "redacted-") {
		t.Fatalf("tool call link broken: call %q, result %q", call.ID, result.ToolCallID)
	}
	if _, err := s.Save(ctx, SaveRequest{SessionID: r1.SessionID, ParentID: r1.LeafID, Messages: []Message{user("u2", "next")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, ForkRequest{SessionID: r1.SessionID, FromID: res.Messages[1].EntryID}); err != nil {
		t.Fatal(err)
	}
}

// readStore returns every file of a store directory, .zst files also decompressed.
func readStore(t *testing.T, dir string) []byte {
	t.Helper()
	var all bytes.Buffer
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		all.Write(b)
		if strings.HasSuffix(p, ".zst") {
			d, err := zstd.NewReader(bytes.NewReader(b))
			if err != nil {
				return err
			}
			defer d.Close()
			if _, err := io.Copy(&all, d); err != nil {
				return fmt.Errorf("decompress %s: %w", p, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all.Bytes()
}

// TestGateThroughTheService plants every kind of secret in every field the service's calls
// take (save, fork, import, compaction), and reads the store's bytes back.
func TestGateThroughTheService(t *testing.T) {
	dir := t.TempDir()
	store, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	opts := redactOpts(t)
	s := New(store, opts)
	ctx := context.Background()
	secrets := redacttest.Plant(11)
	for i, sec := range secrets {
		text := "see " + sec.Text + " ok"
		one := strings.ReplaceAll(text, "\n", " ")
		// Client ids must be valid ids ([A-Za-z0-9_.-]): the kinds whose text is one (provider
		// keys, tokens) are planted there; the others only make sense in their context.
		idish := "m" + fmt.Sprint(i)
		if storage.ValidID(sec.Text) {
			idish = sec.Text
		}
		msgs := []Message{
			{ID: idish, Role: RoleUser, Content: []Block{{Type: BlockText, Text: text}}},
			{ID: idish + "-a", Role: RoleAssistant, Content: []Block{
				{Type: BlockThinking, Thinking: text},
				{Type: BlockText, Text: text},
				{Type: BlockToolCall, ID: text, Name: one, Arguments: json.RawMessage(mustJSONValue(map[string]any{"command": text, text: 1}))},
			}},
			{ID: idish + "-t", Role: RoleToolResult, Content: []Block{{Type: BlockToolResult, ToolCallID: text,
				Content: []Block{{Type: BlockText, Text: text}, {Type: BlockImage, MediaType: one, Data: text}}}}},
		}
		r, err := s.Save(ctx, SaveRequest{WorkingDir: "/home/me/" + one, Name: one, Model: one, Provider: one, Messages: msgs})
		if err != nil {
			t.Fatalf("%s: save: %v", sec.Kind, err)
		}
		if _, err := s.Save(ctx, SaveRequest{SessionID: r.SessionID, Name: "renamed " + one, Messages: []Message{user("x", text)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fork(ctx, ForkRequest{SessionID: r.SessionID, Name: one}); err != nil {
			t.Fatal(err)
		}
		step, err := s.Compact(ctx, CompactRequest{SessionID: r.SessionID, Summarizer: SummarizerAgent, KeepRecentTokens: 1, Instructions: text})
		if err != nil {
			t.Fatal(err)
		}
		if step.Status == StatusNeedsSummary {
			if leaks := redacttest.Leaks(mustJSONValue(step), secrets); leaks != "" {
				t.Errorf("needs_summary output leaks %s", leaks)
			}
			done, err := s.Compact(ctx, CompactRequest{SessionID: r.SessionID, CompactionID: step.CompactionID, Summary: "## Goal\n" + text})
			if err != nil {
				t.Fatal(err)
			}
			if leaks := redacttest.Leaks(mustJSONValue(done), secrets); leaks != "" {
				t.Errorf("compacted output leaks %s", leaks)
			}
		}
		imp := ImportRequest{SessionID: fmt.Sprintf("imp-%d", i), WorkingDir: "/home/" + one, Name: one, Model: one, Provider: one,
			Items: []ImportItem{
				{Message: &msgs[0], EntryID: idish},
				{Summary: text, Key: idish + "-k", FirstKeptID: idish, ReadFiles: []string{one}, ModifiedFiles: []string{one}, Summarizer: one},
			}}
		if _, err := s.Import(ctx, imp); err != nil {
			t.Fatalf("%s: import: %v", sec.Kind, err)
		}
		if out, err := s.Import(ctx, imp); err != nil || out.Added != 0 {
			t.Fatalf("%s: re-import added %d, err %v", sec.Kind, out.Added, err)
		}
	}
	list, err := s.List(ctx, ListRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if leaks := redacttest.Leaks(mustJSONValue(list), secrets); leaks != "" {
		t.Errorf("list output leaks %s", leaks)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	all := readStore(t, dir)
	if !bytes.Contains(all, []byte(redact.Marker)) {
		t.Fatal("no marker in the store")
	}
	if leaks := redacttest.Leaks(all, secrets); leaks != "" {
		for _, sec := range secrets {
			if i := bytes.Index(all, []byte(sec.Secret)); i >= 0 {
				t.Logf("%s: …%q…", sec.Kind, all[max(0, i-300):min(len(all), i+100)])
				break
			}
		}
		t.Fatalf("secrets reached the store: %s", leaks)
	}
}

func mustJSONValue(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
