package transcript

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// Claude Code transcripts.
//
// Claude Code writes one assistant line per content block; the lines of one API response share
// message.id and each repeats the usage. When the response holds several tool calls, the
// result of each call is written right after it, between the blocks of that same response.
// The reader therefore keeps one assistant message "open": later lines with the same
// message.id add their block to it, and tool results that arrive meanwhile wait and follow it
// (which is the order the API itself requires). Anything else closes the message.
//
// Ids: a message's id is the line's uuid; an assistant message's is its message.id. An open
// message imported at the end of one parse can get more blocks later; those are imported as a
// continuation whose id is message.id + "." + the uuid of its first line, so nothing is lost
// and re-reading adds nothing. Watch avoids most of these splits with HoldOpenTail.
type claudeReader struct {
	opts ParseOptions
	open *ccGroup
	// titled is set once a custom title named the session; it wins over generated titles.
	titled bool
}

type ccGroup struct {
	msgID   string
	item    memory.ImportItem
	usage   *memory.Usage
	results []memory.ImportItem
	start   Checkpoint // where the group's first line starts
}

type ccLine struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	UUID             string          `json:"uuid"`
	SessionID        string          `json:"sessionId"`
	Timestamp        string          `json:"timestamp"`
	Cwd              string          `json:"cwd"`
	IsSidechain      bool            `json:"isSidechain"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	Message          *ccMessage      `json:"message"`
	Content          json.RawMessage `json:"content"`
	Summary          string          `json:"summary"`
	CustomTitle      string          `json:"customTitle"`
	AITitle          string          `json:"aiTitle"`
	Title            string          `json:"title"`
}

type ccMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Usage   *struct {
		Input         int `json:"input_tokens"`
		Output        int `json:"output_tokens"`
		CacheCreation int `json:"cache_creation_input_tokens"`
		CacheRead     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	// Source is an image's, in the Anthropic API's shape Claude Code writes: these are that
	// format's field names, whatever sessionmem's contract calls its own.
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

// ccSkipped are line types that carry nothing for the conversation.
var ccSkipped = map[string]bool{
	"progress": true, "file-history-snapshot": true, "queue-operation": true, "pr-link": true,
	"attachment": true, "last-prompt": true,
}

func (r *claudeReader) begin(p *parser) {
	if p.cp.Provider == "" {
		p.cp.Provider = "anthropic"
	}
}

// emit adds an item other than the open group. Once anything else has been emitted, the
// message the previous parse ended with can no longer continue.
func (r *claudeReader) emit(p *parser, it memory.ImportItem) {
	p.cp.OpenMessageID = ""
	p.add(it)
}

func (r *claudeReader) line(p *parser, idx int, b []byte) error {
	var l ccLine
	if err := json.Unmarshal(b, &l); err != nil {
		p.st.Unparsable++
		return nil
	}
	if l.Type != "" && l.SessionID != "" && !l.IsSidechain {
		p.setSessionID("cc", l.SessionID)
	}
	t := parseTime(l.Timestamp)
	switch l.Type {
	case "user", "assistant":
		if l.IsSidechain && !r.opts.IncludeSidechains {
			p.st.Skipped++
			return nil
		}
		if !l.IsSidechain {
			p.setWorkingDir(l.Cwd)
			p.setCreated(t)
		}
	case "system":
		if l.Subtype == "compact_boundary" && !l.IsSidechain {
			// The summary follows on an isCompactSummary user line; that line becomes the
			// compaction. The boundary only closes the open message.
			r.flush(p)
		} else {
			p.st.Skipped++
		}
		return nil
	case "summary", "custom-title", "ai-title":
		name := firstNonEmpty(l.CustomTitle, l.AITitle, l.Title, l.Summary)
		if name != "" && (l.Type == "custom-title" || !r.titled) {
			p.cp.Name = name
			r.titled = r.titled || l.Type == "custom-title"
		}
		p.st.Skipped++
		return nil
	default:
		if ccSkipped[l.Type] {
			p.st.Skipped++
		} else {
			p.st.unknown(l.Type)
		}
		return nil
	}

	m := l.Message
	if m == nil {
		p.st.Unparsable++
		return nil
	}
	if l.Type == "assistant" {
		r.assistant(p, &l, m, t, p.prev)
		return nil
	}
	if l.IsMeta {
		p.st.Skipped++
		return nil
	}
	if l.IsCompactSummary {
		r.flush(p)
		r.emit(p, memory.ImportItem{Summary: ccText(m.Content), Time: t})
		return nil
	}
	r.user(p, &l, m, t)
	return nil
}

func (r *claudeReader) assistant(p *parser, l *ccLine, m *ccMessage, t time.Time, start Checkpoint) {
	if m.Model != "" && m.Model != "<synthetic>" {
		p.cp.Model = m.Model
	}
	var blocks []ccBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		if s := ccText(m.Content); s != "" {
			blocks = []ccBlock{{Type: "text", Text: s}}
		}
	}
	conv := r.blocks(p, blocks, memory.RoleAssistant)
	key := m.ID
	if key == "" {
		key = l.UUID
	}
	if r.open == nil || r.open.msgID != key || key == "" {
		r.flush(p)
		id := key
		if key != "" && key == p.cp.OpenMessageID {
			id = key + "." + l.UUID
		}
		p.cp.OpenMessageID = ""
		r.open = &ccGroup{
			msgID: key,
			item:  memory.ImportItem{Message: &memory.Message{ID: messageID(id), Role: memory.RoleAssistant}, Time: t},
			start: start,
		}
	}
	r.open.item.Message.Content = append(r.open.item.Message.Content, conv...)
	if m.Usage != nil {
		// Every line repeats the response's usage; the last is the most complete.
		r.open.usage = &memory.Usage{
			InputTokens:  m.Usage.Input + m.Usage.CacheCreation + m.Usage.CacheRead,
			OutputTokens: m.Usage.Output,
		}
	}
}

func (r *claudeReader) user(p *parser, l *ccLine, m *ccMessage, t time.Time) {
	id := messageID(l.UUID)
	var blocks []ccBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		// String content: a typed prompt.
		r.flush(p)
		r.emit(p, memory.ImportItem{Message: &memory.Message{ID: id, Role: memory.RoleUser,
			Content: []memory.Block{{Type: memory.BlockText, Text: ccText(m.Content)}}}, Time: t})
		return
	}
	var results, rest []ccBlock
	for _, b := range blocks {
		if b.Type == "tool_result" {
			results = append(results, b)
		} else {
			rest = append(rest, b)
		}
	}
	if len(results) > 0 {
		it := memory.ImportItem{Message: &memory.Message{ID: id, Role: memory.RoleToolResult,
			Content: r.blocks(p, results, memory.RoleToolResult)}, Time: t}
		if r.open != nil {
			r.open.results = append(r.open.results, it)
		} else {
			// Not emit: a result may sit between two lines of the message the previous
			// parse ended with, which can still continue.
			p.add(it)
		}
		id = messageID(l.UUID + ".text")
	}
	if len(rest) > 0 {
		r.flush(p)
		r.emit(p, memory.ImportItem{Message: &memory.Message{ID: id, Role: memory.RoleUser,
			Content: r.blocks(p, rest, memory.RoleUser)}, Time: t})
	}
}

// flush emits the open assistant message and the tool results that answered it.
func (r *claudeReader) flush(p *parser) {
	g := r.open
	if g == nil {
		return
	}
	r.open = nil
	g.item.Message.Usage = g.usage
	p.add(g.item)
	for _, it := range g.results {
		p.add(it)
	}
}

func (r *claudeReader) end(p *parser) {
	if r.open == nil {
		return
	}
	if r.opts.HoldOpenTail {
		// Resume at the group's first line, as if it had not been read.
		p.st.HeldBack = true
		p.cp = r.open.start
		r.open = nil
		return
	}
	id := r.open.msgID
	r.flush(p)
	p.cp.OpenMessageID = id
}

// blocks converts Claude blocks to contract blocks, dropping what the contract cannot hold.
func (r *claudeReader) blocks(p *parser, in []ccBlock, role memory.Role) []memory.Block {
	out := make([]memory.Block, 0, len(in))
	for _, b := range in {
		switch b.Type {
		case "text":
			out = append(out, memory.Block{Type: memory.BlockText, Text: b.Text})
		case "thinking":
			if role == memory.RoleAssistant {
				out = append(out, memory.Block{Type: memory.BlockThinking, Thinking: b.Thinking})
			}
		case "redacted_thinking":
			// Encrypted; nothing a later reader could use.
		case "tool_use", "server_tool_use":
			if b.ID == "" || b.Name == "" {
				p.st.unknownBlock(b.Type + " without id or name")
				continue
			}
			out = append(out, memory.Block{Type: memory.BlockToolCall, ID: b.ID, Name: b.Name, Arguments: objectArgs(b.Input)})
		case "tool_result":
			if b.ToolUseID == "" {
				p.st.unknownBlock("tool_result without tool_use_id")
				continue
			}
			out = append(out, memory.Block{Type: memory.BlockToolResult, ToolCallID: b.ToolUseID,
				Content: r.resultContent(p, b.Content), IsError: b.IsError})
		case "image":
			if img, ok := ccImage(b); ok {
				out = append(out, img)
			}
		default:
			p.st.unknownBlock(b.Type)
		}
	}
	return out
}

// resultContent converts a tool_result's content (a string or blocks) to text and image blocks.
func (r *claudeReader) resultContent(p *parser, raw json.RawMessage) []memory.Block {
	var blocks []ccBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return []memory.Block{{Type: memory.BlockText, Text: ccText(raw)}}
	}
	out := make([]memory.Block, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, memory.Block{Type: memory.BlockText, Text: b.Text})
		case "image":
			if img, ok := ccImage(b); ok {
				out = append(out, img)
			}
		default:
			p.st.unknownBlock(b.Type)
		}
	}
	return out
}

func ccImage(b ccBlock) (memory.Block, bool) {
	if b.Source == nil {
		return memory.Block{}, false
	}
	if b.Source.Data != "" && b.Source.MediaType != "" {
		return memory.Block{Type: memory.BlockImage, MediaType: b.Source.MediaType, Data: b.Source.Data}, true
	}
	if b.Source.URL != "" {
		return memory.Block{Type: memory.BlockText, Text: "[image: " + b.Source.URL + "]"}, true
	}
	return memory.Block{}, false
}

// ccText reads content given as a string, or joins the text blocks of a block list.
func ccText(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	var blocks []ccBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
