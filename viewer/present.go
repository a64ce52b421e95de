package viewer

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/message"
)

// Page size limits: a string longer than maxChars bytes, or an image larger than
// maxImageBytes of base64, is cut from a timeline page and the block says how much was left
// out; the page's "show all" fetches that entry whole (apiEntry).
const (
	maxChars      = 16 << 10
	maxImageBytes = 1 << 20
)

// entryView is a timeline entry as the page receives it: memory.TimelineEntry with its
// message's long strings cut.
type entryView struct {
	EntryID       string                `json:"entry_id"`
	Kind          string                `json:"kind"`
	Time          time.Time             `json:"time"`
	Message       *messageView          `json:"message,omitempty"`
	Compaction    *memory.Compaction    `json:"compaction,omitempty"`
	BranchSummary *memory.BranchSummary `json:"branch_summary,omitempty"`
	// Cut is set when something of the entry was left out.
	Cut bool `json:"cut,omitempty"`
}

// messageView is memory.Message in the contract's shape with blockViews.
type messageView struct {
	ID      string        `json:"id,omitempty"`
	Role    memory.Role   `json:"role"`
	Content []blockView   `json:"content"`
	Usage   *memory.Usage `json:"usage,omitempty"`
	Pinned  bool          `json:"pinned,omitempty"`
}

// blockView is memory.Block in the contract's shape, every field omitted when empty, plus
// Cut: how many characters (for an image, base64 bytes) of its text, thinking, arguments or
// data were left out. A tool call's arguments that were cut become a JSON string holding
// their beginning.
type blockView struct {
	blockFields
	Content []blockView `json:"content,omitempty"` // in place of the block's own
	Cut     int         `json:"cut,omitempty"`
}

// blockFields is message.Block without its methods: encoding/json writes it by its struct
// tags (the contract's field names, each omitted when empty), not as the block's MarshalJSON.
type blockFields message.Block

// presentEntries converts a page; whole keeps every string uncut.
func presentEntries(es []memory.TimelineEntry, whole bool) []entryView {
	out := make([]entryView, 0, len(es))
	for _, e := range es {
		v := entryView{EntryID: e.EntryID, Kind: e.Kind, Time: e.Time.UTC(), Compaction: e.Compaction, BranchSummary: e.BranchSummary}
		if m := e.Message; m != nil {
			mv := &messageView{ID: m.ID, Role: m.Role, Usage: m.Usage, Pinned: m.Pinned}
			mv.Content, v.Cut = presentBlocks(m.Content, whole)
			v.Message = mv
		}
		out = append(out, v)
	}
	return out
}

func presentBlocks(bs []memory.Block, whole bool) ([]blockView, bool) {
	out := make([]blockView, 0, len(bs))
	anyCut := false
	for _, b := range bs {
		v := blockView{blockFields: blockFields{Type: b.Type, ID: b.ID, Name: b.Name, ToolCallID: b.ToolCallID, IsError: b.IsError, MediaType: b.MediaType}}
		var n int
		v.Text, n = cut(b.Text, maxChars, whole)
		v.Cut += n
		v.Thinking, n = cut(b.Thinking, maxChars, whole)
		v.Cut += n
		v.Arguments = b.Arguments
		if !whole && len(b.Arguments) > maxChars {
			s, n := cut(string(b.Arguments), maxChars, false)
			v.Arguments, _ = json.Marshal(s)
			v.Cut += n
		}
		if !whole && len(b.Data) > maxImageBytes {
			v.Cut += len(b.Data)
		} else {
			v.Data = b.Data
		}
		var c bool
		if len(b.Content) > 0 {
			v.Content, c = presentBlocks(b.Content, whole)
		}
		anyCut = anyCut || c || v.Cut > 0
		out = append(out, v)
	}
	return out, anyCut
}

// cut returns s's first max bytes (whole runes) and how many characters it left out.
func cut(s string, max int, whole bool) (string, int) {
	if whole || len(s) <= max {
		return s, 0
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], utf8.RuneCountInString(s[i:])
}

// utf16Spans converts byte ranges of s to the UTF-16 offsets a page's JavaScript strings use.
func utf16Spans(s string, spans [][2]int) [][2]int {
	out := make([][2]int, 0, len(spans))
	pos, u := 0, 0
	advance := func(to int) int {
		for pos < to && pos < len(s) {
			r, size := utf8.DecodeRuneInString(s[pos:])
			pos += size
			if r >= 0x10000 {
				u += 2
			} else {
				u++
			}
		}
		return u
	}
	for _, sp := range spans {
		if sp[0] < pos { // overlapping spans: keep the earlier one whole
			continue
		}
		a := advance(sp[0])
		b := advance(sp[1])
		out = append(out, [2]int{a, b})
	}
	return out
}
