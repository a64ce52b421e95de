package transcript

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// Codex CLI rollouts.
//
// Only the response_item stream is read; event_msg lines repeat the same conversation for the
// UI and are skipped. Ids: rollouts are append-only (resuming appends to the same file), so a
// message's id is "codex.<n>", n being the 0-based line number of the line it came from.
type codexReader struct {
	standing map[string]bool // standing instructions already imported by this parse
}

type codexLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexPayload struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
	// session_meta and turn_context
	Cwd           string `json:"cwd"`
	Timestamp     string `json:"timestamp"`
	ModelProvider string `json:"model_provider"`
	Model         string `json:"model"`
	// compacted
	Message            string            `json:"message"`
	ReplacementHistory []json.RawMessage `json:"replacement_history"`
}

type codexContent struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
}

// codexInjected are the openings of user messages that Codex itself inserts (instructions and
// environment), which are not the user's words.
var codexInjected = []string{
	"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
	"<permissions instructions>", "<developer_instructions>",
}

// codexStanding are the injected openings that carry the project's and the user's standing
// instructions (AGENTS.md, the user's instructions file). Codex sends them at the start of every
// session for the model to follow throughout, so they are imported as pinned system messages:
// the standing context no compaction should fold away. The environment, permission and
// developer blocks describe the harness (and change between sessions); they stay out.
var codexStanding = []string{"<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>"}

// codexSkipped are top-level line types left out on purpose.
var codexSkipped = map[string]bool{
	"event_msg": true, "inter_agent_communication": true, "inter_agent_communication_metadata": true,
	"token_usage_record": true, "world_state": true, "retained_context": true,
	"security_risk_score": true, "realtime_item": true,
}

// codexResponseItems are the response item types a rollout line may carry directly (rollouts
// written before the {timestamp, type, payload} wrapper).
var codexResponseItems = map[string]bool{
	"message": true, "function_call": true, "function_call_output": true, "custom_tool_call": true,
	"custom_tool_call_output": true, "local_shell_call": true, "reasoning": true, "web_search_call": true,
}

func (r *codexReader) begin(p *parser) {}

func (r *codexReader) end(p *parser) {}

func (r *codexReader) line(p *parser, idx int, b []byte) error {
	var l codexLine
	if err := json.Unmarshal(b, &l); err != nil {
		p.st.Unparsable++
		return nil
	}
	payload := l.Payload
	typ := l.Type
	if len(payload) == 0 {
		switch {
		case codexResponseItems[l.Type]:
			payload, typ = b, "response_item"
		case idx == 0 && l.Type == "":
			payload, typ = b, "session_meta"
		}
	}
	var pl codexPayload
	if len(payload) > 0 {
		if err := json.Unmarshal(payload, &pl); err != nil {
			p.st.Unparsable++
			return nil
		}
	}
	t := parseTime(l.Timestamp)
	id := "codex." + strconv.Itoa(idx)
	switch typ {
	case "session_meta":
		p.setSessionID("codex", pl.ID)
		p.setWorkingDir(pl.Cwd)
		p.setCreated(firstTime(parseTime(pl.Timestamp), t))
		if p.cp.Provider == "" {
			p.cp.Provider = pl.ModelProvider
		}
		p.st.Skipped++
	case "turn_context":
		if pl.Model != "" {
			p.cp.Model = pl.Model
		}
		p.setWorkingDir(pl.Cwd)
		p.st.Skipped++
	case "compacted":
		summary := pl.Message
		if summary == "" {
			summary = codexHistorySummary(pl.ReplacementHistory)
		}
		if summary == "" {
			p.st.Skipped++
			return nil
		}
		p.add(memory.ImportItem{Summary: summary, Time: t})
	case "response_item":
		p.setCreated(t)
		r.item(p, id, &pl, t)
	default:
		if codexSkipped[typ] {
			p.st.Skipped++
		} else {
			p.st.unknown(typ)
		}
	}
	return nil
}

func (r *codexReader) item(p *parser, id string, pl *codexPayload, t time.Time) {
	msg := func(role memory.Role, blocks ...memory.Block) {
		p.add(memory.ImportItem{Message: &memory.Message{ID: id, Role: role, Content: blocks}, Time: t})
	}
	callID := firstNonEmpty(pl.CallID, pl.ID)
	switch pl.Type {
	case "message":
		var role memory.Role
		switch pl.Role {
		case "user":
			role = memory.RoleUser
		case "assistant":
			role = memory.RoleAssistant
		default: // developer and system: instructions, not conversation
			p.st.Skipped++
			return
		}
		blocks := codexBlocks(p, pl.Content)
		if role == memory.RoleUser && codexOpensWith(blocks, codexStanding) {
			// Standing instructions: pinned, once per distinct text within a parse.
			key := codexText(blocks)
			if r.standing[key] {
				p.st.Skipped++
				return
			}
			if r.standing == nil {
				r.standing = map[string]bool{}
			}
			r.standing[key] = true
			p.add(memory.ImportItem{Message: &memory.Message{ID: id, Role: memory.RoleSystem, Content: blocks, Pinned: true}, Time: t})
			return
		}
		if role == memory.RoleUser && codexOpensWith(blocks, codexInjected) {
			p.st.Skipped++
			return
		}
		msg(role, blocks...)
	case "function_call":
		if callID == "" || pl.Name == "" {
			p.st.unknownBlock("function_call without call_id or name")
			return
		}
		msg(memory.RoleAssistant, memory.Block{Type: memory.BlockToolCall, ID: callID, Name: pl.Name, Arguments: stringArgs(pl.Arguments)})
	case "custom_tool_call":
		if callID == "" || pl.Name == "" {
			p.st.unknownBlock("custom_tool_call without call_id or name")
			return
		}
		args, _ := json.Marshal(map[string]string{"input": pl.Input})
		msg(memory.RoleAssistant, memory.Block{Type: memory.BlockToolCall, ID: callID, Name: pl.Name, Arguments: args})
	case "local_shell_call":
		if callID == "" {
			p.st.unknownBlock("local_shell_call without call_id")
			return
		}
		msg(memory.RoleAssistant, memory.Block{Type: memory.BlockToolCall, ID: callID, Name: "local_shell", Arguments: objectArgs(pl.Action)})
	case "function_call_output", "custom_tool_call_output":
		if pl.CallID == "" {
			p.st.unknownBlock(pl.Type + " without call_id")
			return
		}
		content, isErr := codexOutput(p, pl.Output)
		msg(memory.RoleToolResult, memory.Block{Type: memory.BlockToolResult, ToolCallID: pl.CallID, Content: content, IsError: isErr})
	case "reasoning", "web_search_call":
		// Reasoning is encrypted; a web search has no result item to pair a call with.
		p.st.Skipped++
	default:
		p.st.unknown("response_item/" + pl.Type)
	}
}

// codexBlocks converts message content items to blocks.
func codexBlocks(p *parser, raw json.RawMessage) []memory.Block {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []memory.Block{{Type: memory.BlockText, Text: s}}
	}
	var items []codexContent
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil
	}
	out := make([]memory.Block, 0, len(items))
	for _, c := range items {
		switch c.Type {
		case "input_text", "output_text", "text":
			out = append(out, memory.Block{Type: memory.BlockText, Text: c.Text})
		case "input_image":
			out = append(out, dataURLImage(c.ImageURL))
		default:
			p.st.unknownBlock(c.Type)
		}
	}
	return out
}

// dataURLImage turns a data: URL into an image block; other URLs become a text mention.
func dataURLImage(u string) memory.Block {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if mt, data, ok := strings.Cut(rest, ";base64,"); ok && mt != "" && data != "" {
			return memory.Block{Type: memory.BlockImage, MediaType: mt, Data: data}
		}
	}
	return memory.Block{Type: memory.BlockText, Text: "[image: " + u + "]"}
}

// codexText joins a message's text blocks.
func codexText(blocks []memory.Block) string {
	var b strings.Builder
	for _, x := range blocks {
		if x.Type == memory.BlockText {
			b.WriteString(x.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// codexOpensWith reports whether a message's first text block starts with one of prefixes.
func codexOpensWith(blocks []memory.Block, prefixes []string) bool {
	for _, b := range blocks {
		if b.Type != memory.BlockText {
			continue
		}
		s := strings.TrimSpace(b.Text)
		for _, pre := range prefixes {
			if strings.HasPrefix(s, pre) {
				return true
			}
		}
		return false
	}
	return false
}

// codexOutput reads a tool output: a string, a list of content items, or an object such as
// {"content": …, "success": false}.
func codexOutput(p *parser, raw json.RawMessage) ([]memory.Block, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []memory.Block{{Type: memory.BlockText, Text: s}}, false
	}
	if len(raw) > 0 && raw[0] == '[' {
		return codexBlocks(p, raw), false
	}
	var obj struct {
		Content json.RawMessage `json:"content"`
		Success *bool           `json:"success"`
	}
	if err := json.Unmarshal(raw, &obj); err == nil && len(obj.Content) > 0 {
		blocks, _ := codexOutput(p, obj.Content)
		return blocks, obj.Success != nil && !*obj.Success
	}
	if len(raw) == 0 {
		return nil, false
	}
	return []memory.Block{{Type: memory.BlockText, Text: string(raw)}}, false
}

// codexHistorySummary finds the summary in a compaction's replacement history: the text of
// its last user message.
func codexHistorySummary(items []json.RawMessage) string {
	for i := len(items) - 1; i >= 0; i-- {
		var pl codexPayload
		if json.Unmarshal(items[i], &pl) != nil || pl.Type != "message" || pl.Role != "user" {
			continue
		}
		var parts []string
		var content []codexContent
		if json.Unmarshal(pl.Content, &content) == nil {
			for _, c := range content {
				if c.Text != "" {
					parts = append(parts, c.Text)
				}
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return ""
}
