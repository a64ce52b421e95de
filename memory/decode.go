package memory

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidwall/gjson"
)

// decodeEntry parses a stored record. Stored records were written by encodeEntry from validated
// entries, so a single gjson pass suffices; it is several times faster than encoding/json with
// the string-or-blocks content decoding the input side needs, and resume decodes every entry it
// returns.
func decodeEntry(data []byte) (Entry, error) {
	if !gjson.ValidBytes(data) {
		return Entry{}, fmt.Errorf("record is not valid JSON")
	}
	r := gjson.ParseBytes(data)
	e := Entry{Type: r.Get("type").String(), ID: r.Get("id").String(), ParentID: r.Get("parent_id").String()}
	if ts := r.Get("ts").String(); ts != "" {
		e.Time, _ = time.Parse(time.RFC3339Nano, ts)
	}
	switch e.Type {
	case KindMessage:
		m := decodeMessage(r.Get("message"))
		e.Message = &m
	case KindCompaction:
		var c Compaction
		if err := json.Unmarshal([]byte(r.Get("compaction").Raw), &c); err != nil {
			return Entry{}, fmt.Errorf("compaction entry %s: %w", e.ID, err)
		}
		e.Compaction = &c
	case KindBranchSummary:
		e.BranchSummary = &BranchSummary{FromID: r.Get("branch_summary.from_id").String(), Summary: r.Get("branch_summary.summary").String()}
	case KindLabel:
		e.Label = &Label{TargetID: r.Get("label.target_id").String(), Label: r.Get("label.label").String()}
	case KindSessionInfo:
		e.SessionInfo = &SessionInfo{Name: r.Get("session_info.name").String()}
	case KindModelChange:
		e.ModelChange = &ModelChange{Model: r.Get("model_change.model").String(), Provider: r.Get("model_change.provider").String()}
	}
	return e, nil
}

func decodeMessage(r gjson.Result) Message {
	m := Message{ID: r.Get("id").String(), Role: Role(r.Get("role").String()), Content: decodeBlocks(r.Get("content"))}
	if u := r.Get("usage"); u.Exists() {
		m.Usage = &Usage{InputTokens: int(u.Get("input_tokens").Int()), OutputTokens: int(u.Get("output_tokens").Int())}
	}
	return m
}

func decodeBlocks(r gjson.Result) []Block {
	if !r.IsArray() {
		if r.Type == gjson.String {
			return []Block{{Type: BlockText, Text: r.String()}}
		}
		return nil
	}
	var out []Block
	r.ForEach(func(_, b gjson.Result) bool {
		blk := Block{Type: b.Get("type").String()}
		switch blk.Type {
		case BlockText:
			blk.Text = b.Get("text").String()
		case BlockThinking:
			blk.Thinking = b.Get("thinking").String()
		case BlockToolCall:
			blk.ID, blk.Name = b.Get("id").String(), b.Get("name").String()
			if a := b.Get("arguments"); a.Exists() {
				blk.Arguments = json.RawMessage(a.Raw)
			}
		case BlockToolResult:
			blk.ToolCallID, blk.IsError = b.Get("tool_call_id").String(), b.Get("is_error").Bool()
			blk.Content = decodeBlocks(b.Get("content"))
		case BlockImage:
			blk.MediaType, blk.Data = b.Get("media_type").String(), b.Get("data").String()
		}
		out = append(out, blk)
		return true
	})
	return out
}
