package transcript

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// pi sessions, format versions 1 to 3.
//
// Ids: a message's id is "pi." plus a hash of its role, its own timestamp (Unix ms) and its
// content, the same in every format version. pi migrates a v1 or v2 file to v3 in place when
// it opens it, giving every entry a fresh random id; content-derived ids keep such a rewritten
// file from importing twice. Entries are read in file order: pi's branches (v2+ parentId
// trees) are flattened. A compaction is imported where it sits and keeps what pi keeps: the
// entries from its first kept entry on. Entry ids are preserved (v2+) or derived from the
// line (v1, "pi.L<n>") so that a compaction can name its first kept entry.
type piReader struct {
	seen map[string]int // ids produced in this parse, to tell identical messages apart
	// startLine is the first line of this parse; lineOf maps the pi entry ids seen in it to
	// their lines, and kept lists the messages it emitted, to resolve what a compaction kept.
	startLine int
	lineOf    map[string]int
	kept      []piKept
}

type piKept struct {
	line    int
	entryID string
}

type piEntry struct {
	Type      string  `json:"type"`
	Version   int     `json:"version"`
	ID        string  `json:"id"`
	Timestamp string  `json:"timestamp"`
	Cwd       string  `json:"cwd"`
	Provider  string  `json:"provider"`
	ModelID   string  `json:"modelId"`
	Name      *string `json:"name"`
	Summary   string  `json:"summary"`
	// compaction: v1 names the first kept entry by position (header included), v2+ by id.
	FirstKeptEntryIndex *int            `json:"firstKeptEntryIndex"`
	FirstKeptEntryID    string          `json:"firstKeptEntryId"`
	Message             *piMessage      `json:"message"`
	Content             json.RawMessage `json:"content"` // custom_message
}

type piMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Timestamp  json.RawMessage `json:"timestamp"`
	Provider   string          `json:"provider"`
	Model      string          `json:"model"`
	ToolCallID string          `json:"toolCallId"`
	IsError    bool            `json:"isError"`
	Command    string          `json:"command"`
	Output     string          `json:"output"`
	Usage      *struct {
		Input      int `json:"input"`
		Output     int `json:"output"`
		CacheRead  int `json:"cacheRead"`
		CacheWrite int `json:"cacheWrite"`
	} `json:"usage"`
}

type piBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Data      string          `json:"data"`
	MimeType  string          `json:"mimeType"`
}

// piSkipped are entry types that never reach the model, or that a flat import cannot place.
var piSkipped = map[string]bool{
	"custom": true, "label": true, "thinking_level_change": true, "branch_summary": true,
}

func (r *piReader) begin(p *parser) {
	r.seen = map[string]int{}
	r.lineOf = map[string]int{}
	r.startLine = p.cp.Line
}

// entryID is the sessionmem entry id a message at line idx gets: pi's own entry id (v2+),
// "pi.L<line>" for v1 entries, which have none. Compactions name their first kept entry by it.
func (r *piReader) entryID(p *parser, idx int, piID string) string {
	if p.cp.Version >= 2 {
		if validID(piID) {
			return piID
		}
		return ""
	}
	return "pi.L" + strconv.Itoa(idx)
}

// firstKept resolves the entry a compaction keeps from: the first message emitted at or
// after the named entry. An entry read by an earlier parse is named directly; memory ignores
// a first kept id it does not hold.
func (r *piReader) firstKept(p *parser, e *piEntry) string {
	line := -1
	switch {
	case e.FirstKeptEntryID != "":
		l, ok := r.lineOf[e.FirstKeptEntryID]
		if !ok {
			if validID(e.FirstKeptEntryID) {
				return e.FirstKeptEntryID
			}
			return ""
		}
		line = l
	case e.FirstKeptEntryIndex != nil:
		line = *e.FirstKeptEntryIndex
		if line < r.startLine {
			return "pi.L" + strconv.Itoa(line)
		}
	default:
		return ""
	}
	for _, k := range r.kept {
		if k.line >= line {
			return k.entryID
		}
	}
	return ""
}

func (r *piReader) end(p *parser) {}

func (r *piReader) line(p *parser, idx int, b []byte) error {
	var e piEntry
	if err := json.Unmarshal(b, &e); err != nil {
		p.st.Unparsable++
		return nil
	}
	t := parseTime(e.Timestamp)
	if e.ID != "" {
		r.lineOf[e.ID] = idx
	}
	switch e.Type {
	case "session":
		p.cp.Version = max(e.Version, 1)
		p.setSessionID("pi", e.ID)
		p.setWorkingDir(e.Cwd)
		p.setCreated(t)
		if e.ModelID != "" {
			p.cp.Model = e.ModelID
		}
		if e.Provider != "" {
			p.cp.Provider = e.Provider
		}
	case "message":
		if e.Message == nil {
			p.st.Unparsable++
			return nil
		}
		r.message(p, e.Message, t, idx, r.entryID(p, idx, e.ID))
	case "custom_message":
		// Shown to the model as a user message.
		id := r.id("custom_message", e.ID, []byte(e.Timestamp), e.Content)
		r.add(p, idx, memory.ImportItem{Message: &memory.Message{ID: id, Role: memory.RoleUser,
			Content: r.content(p, e.Content, memory.RoleUser)}, Time: t, EntryID: r.entryID(p, idx, e.ID)})
	case "compaction":
		// pi keeps the entries from the first kept one up to the compaction; so does memory
		// given FirstKeptID.
		p.add(memory.ImportItem{Summary: e.Summary, Time: t, FirstKeptID: r.firstKept(p, &e)})
	case "model_change":
		if e.ModelID != "" {
			p.cp.Model = e.ModelID
		}
		if e.Provider != "" {
			p.cp.Provider = e.Provider
		}
		p.st.Skipped++
	case "session_info":
		if e.Name != nil {
			p.cp.Name = *e.Name
		}
		p.st.Skipped++
	default:
		if piSkipped[e.Type] {
			p.st.Skipped++
		} else {
			p.st.unknown(e.Type)
		}
	}
	return nil
}

// add emits a message item and remembers it for compactions.
func (r *piReader) add(p *parser, idx int, it memory.ImportItem) {
	before := len(p.req.Items)
	p.add(it)
	if len(p.req.Items) > before && it.EntryID != "" {
		r.kept = append(r.kept, piKept{line: idx, entryID: it.EntryID})
	}
}

func (r *piReader) message(p *parser, m *piMessage, t time.Time, idx int, entryID string) {
	role := m.Role
	if role == "hookMessage" {
		role = "custom" // renamed in format version 3; same id either way
	}
	id := r.id(role, m.ToolCallID+"\x00"+m.Command+"\x00"+m.Output, m.Timestamp, m.Content)
	add := func(mr memory.Role, blocks []memory.Block, u *memory.Usage) {
		r.add(p, idx, memory.ImportItem{Message: &memory.Message{ID: id, Role: mr, Content: blocks, Usage: u}, Time: t, EntryID: entryID})
	}
	switch role {
	case "user", "custom":
		add(memory.RoleUser, r.content(p, m.Content, memory.RoleUser), nil)
	case "assistant":
		if m.Model != "" {
			p.cp.Model = m.Model
		}
		if m.Provider != "" {
			p.cp.Provider = m.Provider
		}
		var u *memory.Usage
		if m.Usage != nil {
			u = &memory.Usage{InputTokens: m.Usage.Input + m.Usage.CacheRead + m.Usage.CacheWrite, OutputTokens: m.Usage.Output}
		}
		add(memory.RoleAssistant, r.content(p, m.Content, memory.RoleAssistant), u)
	case "toolResult":
		if m.ToolCallID == "" {
			p.st.unknownBlock("toolResult without toolCallId")
			return
		}
		content := r.content(p, m.Content, memory.RoleToolResult)
		add(memory.RoleToolResult, []memory.Block{{Type: memory.BlockToolResult, ToolCallID: m.ToolCallID, Content: content, IsError: m.IsError}}, nil)
	case "bashExecution":
		// A command the user ran from pi's prompt, output included.
		add(memory.RoleUser, []memory.Block{{Type: memory.BlockText, Text: "$ " + m.Command + "\n" + m.Output}}, nil)
	default:
		p.st.unknown("message/" + m.Role)
	}
}

// id derives a message id from what identifies the message in every format version.
func (r *piReader) id(role, extra string, ts, content []byte) string {
	h := hashHex([]byte(role + "\x00" + extra + "\x00" + string(ts) + "\x00" + string(content)))[:32]
	id := "pi." + h
	r.seen[id]++
	if n := r.seen[id]; n > 1 {
		id += "." + strconv.Itoa(n)
	}
	return id
}

// content converts pi content (a string or blocks) to contract blocks.
func (r *piReader) content(p *parser, raw json.RawMessage, role memory.Role) []memory.Block {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []memory.Block{{Type: memory.BlockText, Text: s}}
	}
	var blocks []piBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil
	}
	out := make([]memory.Block, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, memory.Block{Type: memory.BlockText, Text: b.Text})
		case "thinking":
			if role == memory.RoleAssistant {
				out = append(out, memory.Block{Type: memory.BlockThinking, Thinking: b.Thinking})
			}
		case "toolCall":
			if role != memory.RoleAssistant || b.ID == "" || b.Name == "" {
				p.st.unknownBlock("toolCall outside an assistant message or without id or name")
				continue
			}
			out = append(out, memory.Block{Type: memory.BlockToolCall, ID: b.ID, Name: b.Name, Arguments: objectArgs(b.Arguments)})
		case "image":
			if b.Data != "" && b.MimeType != "" {
				out = append(out, memory.Block{Type: memory.BlockImage, MediaType: b.MimeType, Data: b.Data})
			}
		default:
			p.st.unknownBlock(b.Type)
		}
	}
	return out
}
