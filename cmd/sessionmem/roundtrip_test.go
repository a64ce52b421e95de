package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// What comes back is what was saved: messages saved through MCP over stdio return from
// session_resume (every page), from a fork and from `sessionmem export` equal to what the
// client sent, with the one normalisation the contract states (string content, of a message or
// of a tool result, becomes one text block) and the ids the server adds (entry_id; an export
// also gives a message without a client id its entry id as id).

// contractExamples are messages covering the contract's message shape: every block type, every
// optional field present and absent, string and block content, usage, and text that JSON
// encoders treat specially.
const contractExamples = `[
{"id":"u1","role":"user","content":"Why does login fail?"},
{"id":"a1","role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_call","id":"c1","name":"read","arguments":{"path":"auth.go"}}]},
{"id":"t1","role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":"package auth…"}]},
{"role":"system","content":[{"type":"text","text":""}]},
{"id":"a2","role":"assistant","content":[{"type":"thinking","thinking":"The token <expires> & \"quotes\" \\ \u2028 é 日本語"},{"type":"tool_call","id":"c2","name":"bash","arguments":{"command":"go test ./... && echo <ok>","timeout":12345678901234567890,"ratio":1.5e-7,"nested":{"z":[1,2.50,{"a":null}],"b":true}}},{"type":"tool_call","id":"c3","name":"ls"}],"usage":{"input_tokens":1200,"output_tokens":40}},
{"id":"t2","role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c2","content":[{"type":"text","text":"FAIL auth_test.go:12"},{"type":"image","media_type":"image/png","data":"iVBORw0KGgo="}],"is_error":true},{"type":"tool_result","tool_call_id":"c3","content":[]},{"type":"tool_result","tool_call_id":"c4"},{"type":"tool_result","tool_call_id":"c5","content":"","is_error":false}]},
{"id":"u2","role":"user","content":[{"type":"text","text":"see"},{"type":"image","media_type":"image/jpeg","data":"/9j/4AAQSkZJRg=="}]},
{"id":"a3","role":"assistant","content":"Done.","usage":{"input_tokens":0,"output_tokens":0}}
]`

// normalised returns a sent message as the contract says it comes back: string content, of the
// message or of a tool_result block, as one text block.
func normalised(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	toBlocks := func(v any) any {
		if s, ok := v.(string); ok {
			return []any{map[string]any{"type": "text", "text": s}}
		}
		return v
	}
	out["content"] = toBlocks(m["content"])
	if blocks, ok := out["content"].([]any); ok {
		nb := make([]any, len(blocks))
		for i, b := range blocks {
			bm, _ := b.(map[string]any)
			if bm["type"] == "tool_result" {
				c := map[string]any{}
				for k, v := range bm {
					c[k] = v
				}
				if v, ok := bm["content"]; ok {
					c["content"] = toBlocks(v)
				}
				b = c
			}
			nb[i] = b
		}
		out["content"] = nb
	}
	return out
}

// decodeExact decodes JSON keeping every digit of numbers.
func decodeExact(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %.200s: %v", b, err)
	}
	return v
}

// callJSON calls a tool with arguments given as JSON (sent byte for byte) and returns the
// structured content as JSON.
func callJSON(t testing.TB, c *client.Client, name string, args string) []byte {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = json.RawMessage(args)
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %v", name, res.Content)
	}
	if len(res.RawStructuredContent) > 0 {
		return res.RawStructuredContent // as the server wrote it (decoding it into any would round numbers)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resumeMessages pages through session_resume and returns the messages without entry_id.
func resumeMessages(t testing.TB, c *client.Client, id string, maxTokens int) []any {
	t.Helper()
	var out []any
	cursor := ""
	for page := 0; ; page++ {
		args := fmt.Sprintf(`{"session_id":%q`, id)
		if maxTokens > 0 {
			args += fmt.Sprintf(`,"max_tokens":%d`, maxTokens)
		}
		if cursor != "" {
			args += fmt.Sprintf(`,"cursor":%q`, cursor)
		}
		args += "}"
		var res struct {
			Messages   []json.RawMessage `json:"messages"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal(callJSON(t, c, "session_resume", args), &res); err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			mm := decodeExact(t, m).(map[string]any)
			if mm["entry_id"] == nil {
				t.Fatalf("resumed message without entry_id: %s", m)
			}
			delete(mm, "entry_id")
			out = append(out, mm)
		}
		if cursor = res.NextCursor; cursor == "" {
			return out
		}
		if page > 10000 {
			t.Fatal("resume does not end")
		}
	}
}

// compareMessages reports the first differences between want and got.
func compareMessages(t *testing.T, what string, want, got []any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d messages, saved %d", what, len(got), len(want))
	}
	diffs := 0
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			if diffs++; diffs <= 3 {
				w, _ := json.Marshal(want[i])
				g, _ := json.Marshal(got[i])
				t.Errorf("%s: message %d differs\nsaved %.1500s\ngot   %.1500s", what, i, w, g)
			}
		}
	}
	if diffs > 3 {
		t.Errorf("%s: %d messages differ in all", what, diffs)
	}
}

// roundTrip saves msgs (JSON objects) through c in batches, then checks resume (with pages of
// max_tokens 100,000 and, when paged is set, of the default 20,000), a fork and an export.
func roundTrip(t *testing.T, c *client.Client, store string, name string, msgs []json.RawMessage, paged bool) {
	var want []any
	for _, m := range msgs {
		want = append(want, normalised(decodeExact(t, m).(map[string]any)))
	}
	id := ""
	for i := 0; i < len(msgs); i += 200 {
		var parts []string
		for _, m := range msgs[i:min(i+200, len(msgs))] {
			parts = append(parts, string(m))
		}
		batch := "[" + strings.Join(parts, ",") + "]"
		args := fmt.Sprintf(`{"working_dir":"/roundtrip/%s","messages":%s}`, name, batch)
		if id != "" {
			args = fmt.Sprintf(`{"session_id":%q,"messages":%s}`, id, batch)
		}
		var saved struct {
			SessionID string `json:"session_id"`
			Saved     int    `json:"saved"`
		}
		if err := json.Unmarshal(callJSON(t, c, "session_save", args), &saved); err != nil {
			t.Fatal(err)
		}
		id = saved.SessionID
	}
	compareMessages(t, name+": resume", want, resumeMessages(t, c, id, 100000))
	if paged {
		compareMessages(t, name+": resume in pages of 20,000 tokens", want, resumeMessages(t, c, id, 0))
	}
	var fork struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(callJSON(t, c, "session_fork", fmt.Sprintf(`{"session_id":%q}`, id)), &fork); err != nil {
		t.Fatal(err)
	}
	compareMessages(t, name+": fork", want, resumeMessages(t, c, fork.SessionID, 100000))

	out := runCLI(t, "", "export", "--store", store, id).must(t).stdout
	var exported []any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		msg := decodeExact(t, sc.Bytes()).(map[string]any)
		if msg["role"] == nil {
			continue // the header, compactions
		}
		entryID := msg["entry_id"]
		delete(msg, "entry_id")
		delete(msg, "ts")
		if msg["id"] == entryID {
			delete(msg, "id") // the export names a message without a client id by its entry id
		}
		exported = append(exported, msg)
	}
	compareMessages(t, name+": export", want, exported)
}

func messagesJSON(t testing.TB, ts []transcripttest.Transcript) map[string][]json.RawMessage {
	t.Helper()
	out := map[string][]json.RawMessage{}
	for _, tr := range ts {
		for _, m := range tr.Messages {
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			out[tr.Name] = append(out[tr.Name], b)
		}
	}
	return out
}

func TestRoundTripExact(t *testing.T) {
	store := t.TempDir()
	c := stdioClient(t, store)
	var examples []json.RawMessage
	if err := json.Unmarshal([]byte(contractExamples), &examples); err != nil {
		t.Fatal(err)
	}
	t.Run("contract examples", func(t *testing.T) { roundTrip(t, c, store, "contract", examples, false) })
	for name, msgs := range messagesJSON(t, transcripttest.Excerpts(t)) {
		t.Run(name, func(t *testing.T) { roundTrip(t, c, store, name, msgs, true) })
	}
}

// TestRoundTripCorpus is the same over the four full transcripts of the shared corpus, when
// present (2,662 messages, 3.7 MB).
func TestRoundTripCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	ts := transcripttest.Corpus(t)
	store := t.TempDir()
	c := stdioClient(t, store)
	for name, msgs := range messagesJSON(t, ts) {
		t.Run(name, func(t *testing.T) { roundTrip(t, c, store, name, msgs, false) })
	}
}
