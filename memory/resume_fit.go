package memory

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/message"
)

// fitHeader cuts the summary, then the file lists, until the result without messages takes at
// most chars characters, so a huge summary or thousands of files still leave room for messages
// and never push a page over max_tokens. What is cut is said in place.
func fitHeader(res *ResumeResult, chars int) {
	over := jsonChars(*res) - chars
	if over <= 0 {
		return
	}
	const why = "the summary was cut to fit max_tokens; call session_resume with a larger max_tokens for all of it"
	summary := res.Summary
	kept := utf8.RuneCountInString(summary)
	if summary != "" {
		keep := kept - over - 200
		if min := kept / 8; keep < min {
			keep = min // keep the opening of the summary; the lists give way next
		}
		kept = keep
		res.Summary = truncateText(summary, kept, why)
	}
	for _, list := range []*[]string{&res.ReadFiles, &res.ModifiedFiles} {
		all := *list
		for keep := len(all); keep > 0 && jsonChars(*res) > chars; {
			keep = keep * 3 / 4
			*list = append(all[:keep:keep], fmt.Sprintf("… %d more files; call session_resume with a larger max_tokens for the whole list", len(all)-keep))
		}
	}
	// The facts repeat the ledger blocks of the summary: they give way last, the least durable
	// first (Ledger.Fit counts what it drops).
	for tokens := compaction.LedgerMaxTokens; res.Facts != nil && jsonChars(*res) > chars; tokens /= 2 {
		if tokens < 100 {
			res.Facts = nil
			break
		}
		res.Facts.Fit(tokens)
	}
	// The summary's opening kept above may itself be more than the page holds (an eighth of a
	// 12,000-token summary at max_tokens 1000): then it gives way too, down to its note alone.
	for summary != "" && kept > 0 {
		over := jsonChars(*res) - chars
		if over <= 0 {
			break
		}
		kept = max(kept-over-16, 0)
		res.Summary = truncateText(summary, kept, why)
	}
}

// jsonChars is the length in characters of v's JSON encoding as a resume page carries it
// (message.WireChars: non-ASCII characters escaped), the contract's token measure ×4.
func jsonChars(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return message.WireChars(b)
}

// truncateText keeps the first keep characters of s and appends a note.
func truncateText(s string, keep int, why string) string {
	kept, dropped := compaction.CutChars(s, keep)
	if dropped == 0 {
		return s
	}
	return kept + fmt.Sprintf("\n[… %d characters not shown: %s]", dropped, why)
}

// fitMessage cuts m until its JSON, as json.Marshal writes it, takes at most chars characters:
// the longest text (text, thinking, tool output) first, each cut as little as needed and
// marked, an image too large replaced by a note; oversize tool-call arguments become a valid
// JSON placeholder; blocks that still do not fit are dropped from the end, with a note. The
// stored message is not touched.
func fitMessage(m Message, chars int) Message {
	if chars < 400 {
		chars = 400
	}
	m = cloneMessage(m)
	for range countFields(m.Content) + 4 {
		over := jsonChars(m) - chars
		if over <= 0 {
			return m
		}
		f := largestField(&m)
		if f == nil || f.size <= 160 {
			break
		}
		f.shrink(over)
	}
	// Still too large: many blocks, each already short. Drop blocks from the end (inside the
	// last tool result first), then say how many.
	dropped := 0
	for jsonChars(m) > chars-120 {
		last := &m.Content[len(m.Content)-1]
		switch {
		case last.Type == BlockToolResult && len(last.Content) > 1:
			last.Content = last.Content[:len(last.Content)-1]
		case len(m.Content) > 1:
			m.Content = m.Content[:len(m.Content)-1]
		default:
			return m
		}
		dropped++
	}
	if dropped > 0 {
		note := Block{Type: BlockText, Text: fmt.Sprintf("[… %d more blocks not shown: this message is larger than max_tokens]", dropped)}
		if last := &m.Content[len(m.Content)-1]; last.Type == BlockToolResult {
			last.Content = append(last.Content, note)
		} else {
			m.Content = append(m.Content, note)
		}
	}
	return m
}

// countFields counts the cuttable parts of blocks, tool-result content included.
func countFields(bs []Block) int {
	n := 0
	for _, b := range bs {
		n++
		n += countFields(b.Content)
	}
	return n
}

func cloneMessage(m Message) Message {
	m.Content = cloneBlocks(m.Content)
	return m
}

func cloneBlocks(bs []Block) []Block {
	out := append([]Block(nil), bs...)
	for i := range out {
		if out[i].Content != nil {
			out[i].Content = cloneBlocks(out[i].Content)
		}
	}
	return out
}

// field is one cuttable part of a message.
type field struct {
	text  *string          // a text, thinking or image-data string
	args  *json.RawMessage // or tool-call arguments
	image *Block           // the image block whose data text is (part of base64 is no image)
	size  int              // its encoded length in characters
}

// shrink takes at least over characters out of the field's encoding, as few more as it can.
func (f field) shrink(over int) {
	const note = "this message is larger than max_tokens"
	if f.image != nil {
		// Cut base64 would be a broken image under its media type: the block becomes a note.
		*f.image = Block{Type: BlockText, Text: fmt.Sprintf("[image (%s, %d characters of base64) not shown: %s]", clip(f.image.MediaType, 100), len(f.image.Data), note)}
		return
	}
	if f.args != nil {
		*f.args = json.RawMessage(fmt.Sprintf(`{"_truncated":"%d characters of arguments not shown: %s"}`, f.size, note))
		return
	}
	s := *f.text
	target := f.size - over // the field's encoded length must come down to this
	enc := func(k int) int { return jsonChars(truncateText(s, k, note)) }
	lo, hi := 0, utf8.RuneCountInString(s) // largest k with enc(k) <= target, found by bisection
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if enc(mid) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	*f.text = truncateText(s, lo, note)
}

// largestField finds the message's longest cuttable part, tool-result content included.
func largestField(m *Message) *field {
	var best *field
	var visit func(bs []Block)
	consider := func(f field) {
		if f.text != nil {
			f.size = jsonChars(*f.text)
		} else {
			f.size = jsonChars(*f.args)
		}
		if best == nil || f.size > best.size {
			best = &f
		}
	}
	visit = func(bs []Block) {
		for i := range bs {
			b := &bs[i]
			switch b.Type {
			case BlockText:
				consider(field{text: &b.Text})
			case BlockThinking:
				consider(field{text: &b.Thinking})
			case BlockImage:
				consider(field{text: &b.Data, image: b})
			case BlockToolCall:
				if len(b.Arguments) > 0 {
					consider(field{args: &b.Arguments})
				}
			case BlockToolResult:
				visit(b.Content)
			}
		}
	}
	visit(m.Content)
	return best
}

// pruneToolOutputs replaces the content of m's tool results with a one-line placeholder
// saying how many characters were dropped, and reports whether it changed anything. Only the
// response changes; the store keeps everything.
func pruneToolOutputs(m *Message) bool {
	changed := false
	for j := range m.Content {
		if m.Content[j].Type != BlockToolResult {
			continue
		}
		if !changed {
			m.Content = append([]Block(nil), m.Content...)
			changed = true
		}
		b := &m.Content[j]
		n := 0
		for _, c := range b.Content {
			n += utf8.RuneCountInString(c.Text) + len(c.Data)
		}
		b.SetContent([]Block{{Type: BlockText, Text: fmt.Sprintf("[tool output pruned from this view: %d characters; resume without prune to see it]", n)}})
	}
	return changed
}
