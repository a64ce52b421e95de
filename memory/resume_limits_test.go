package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// pageChars is what a transport sends for a page: the result's JSON plus a short text and an
// envelope (mcpserver's text for a resume page is about 300 characters plus the cursor).
func pageChars(res ResumeResult) int {
	return jsonChars(res) + 300 + len(res.NextCursor)
}

func TestResumeNeverExceedsMaxTokens(t *testing.T) {
	many := func(n int, mk func(i int) Block) []Block {
		var bs []Block
		for i := range n {
			bs = append(bs, mk(i))
		}
		return bs
	}
	cases := []struct {
		name string
		dir  string
		msgs []Message
	}{
		{"huge tool call arguments", wd, []Message{
			user("u", "write it"),
			{ID: "a", Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: "c", Name: "write",
				Arguments: json.RawMessage(fmt.Sprintf(`{"path":"a.go","content":%q}`, strings.Repeat("x", 100000)))}}},
		}},
		{"many text blocks", wd, []Message{{ID: "u", Role: RoleUser, Content: many(40, func(i int) Block {
			return Block{Type: BlockText, Text: strings.Repeat(fmt.Sprint(i%10), 3000)}
		})}}},
		{"many nested tool output blocks", wd, []Message{
			assistantCall("a", "c", "read", `{"path":"a.go"}`),
			{ID: "r", Role: RoleToolResult, Content: []Block{{Type: BlockToolResult, ToolCallID: "c", Content: many(40, func(i int) Block {
				return Block{Type: BlockText, Text: strings.Repeat("y", 3000)}
			})}}},
		}},
		{"escaped characters", wd, []Message{user("u", strings.Repeat("<&>", 2000)+strings.Repeat("\u2028", 500)+strings.Repeat("😀", 500))}},
		{"long working dir", "/" + strings.Repeat("d", 2000), []Message{user("u1", strings.Repeat("a", 3000)), user("u2", strings.Repeat("b", 3000))}},
		{"large image", wd, []Message{{ID: "u", Role: RoleUser, Content: []Block{{Type: BlockText, Text: "look"},
			{Type: BlockImage, MediaType: "image/png", Data: strings.Repeat("iVBORw0K", 20000)}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestService(t, Options{})
			id := mustSave(t, s, SaveRequest{WorkingDir: tc.dir, Messages: tc.msgs}).SessionID
			for _, max := range []int{1000, 5000, 0} {
				limit := max
				if limit == 0 {
					limit = DefaultMaxTokens
				}
				cursor, pages := "", 0
				for {
					res, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: max, Cursor: cursor})
					if err != nil {
						t.Fatal(err)
					}
					pages++
					if got := (pageChars(res) + 3) / 4; got > limit {
						t.Errorf("max_tokens %d: page %d is %d tokens", limit, pages, got)
					}
					if len(res.Messages) == 0 {
						t.Fatalf("max_tokens %d: page %d has no message", limit, pages)
					}
					for _, m := range res.Messages {
						for _, b := range m.Content {
							// An image comes whole or not at all: part of its base64 is no image.
							if b.Type == BlockImage && b.Data != strings.Repeat("iVBORw0K", 20000) {
								t.Errorf("max_tokens %d: an image cut to %d characters of data", limit, len(b.Data))
							}
						}
					}
					if max == 5000 && tc.name == "escaped characters" {
						if n := jsonChars(res); n < 5000*4/2 {
							t.Errorf("the cut message uses only %d of %d characters", n, 5000*4)
						}
					}
					if res.NextCursor == "" {
						break
					}
					cursor = res.NextCursor
				}
			}
		})
	}
}

func TestResumeHugeFileListsFit(t *testing.T) {
	s := newTestService(t, Options{})
	var msgs []Message
	for i := range 490 {
		c := fmt.Sprintf("c%d", i)
		msgs = append(msgs, assistantCall(fmt.Sprint("a", i), c, "read", fmt.Sprintf(`{"path":"src/some/deep/package/file_number_%03d.go"}`, i)),
			toolResult(fmt.Sprint("r", i), c, "ok"))
	}
	msgs = append(msgs, user("last", strings.Repeat("z", 200000)))
	id := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: msgs}).SessionID
	if _, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 1000}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got := (pageChars(res) + 3) / 4; got > 1000 {
		t.Fatalf("page is %d tokens", got)
	}
	last := res.ReadFiles[len(res.ReadFiles)-1]
	if !strings.HasPrefix(last, "…") || !strings.Contains(last, "more files") {
		t.Errorf("cut list does not say so: %q", last)
	}
	full, _ := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 200000})
	if len(full.ReadFiles) != 490 {
		t.Errorf("with room, %d read files, want 490", len(full.ReadFiles))
	}
}
