package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
	"github.com/sessionmem/sessionmem/message"
)

// encodeEntry renders an entry as its stored JSON object: small keys first (type, id,
// parent_id, ts) so scanners can stop early, and no HTML escaping, so stored text reads and
// searches as written.
func encodeEntry(e Entry) ([]byte, error) {
	var dst []byte
	if e.Message != nil {
		// Room for what is usually written, so the buffer is not grown and copied a few
		// times over; a message with much to escape grows it as before.
		dst = make([]byte, 0, 128+textBytes(e.Message.Content)*9/8)
	}
	if b, ok := appendMessageEntry(dst, &e); ok {
		return b, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encode %s entry: %w", e.Type, err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// textBytes is the length of the text of blocks: what most of their encoding is.
func textBytes(blocks []Block) int {
	n := 0
	for i := range blocks {
		b := &blocks[i]
		n += 48 + len(b.Text) + len(b.Thinking) + len(b.ID) + len(b.Name) + len(b.Arguments) +
			len(b.ToolCallID) + len(b.MediaType) + len(b.Data) + textBytes(b.Content)
	}
	return n
}

// redact applies the configured redaction to one text.
func (s *Service) redact(text string) string {
	if s.opts.Redact == nil || text == "" {
		return text
	}
	return s.opts.Redact(text)
}

// stripEntryIDs returns copies of msgs without the entry ids a client may have echoed back:
// the server assigns them. (Their text is redacted by the gate when the entries are stored.)
func stripEntryIDs(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.EntryID = ""
		out[i] = m
	}
	return out
}

// redactJSON redacts every string inside a JSON value, keys included. Values the hook leaves
// alone are returned byte for byte, so clean arguments keep their original key order.
func (s *Service) redactJSON(raw json.RawMessage) json.RawMessage {
	if s.cleanJSON(raw) {
		return raw
	}
	return s.redactJSONGeneral(raw)
}

// redactJSONGeneral is redactJSON for any input: decoded, redacted and encoded again when a
// string changes. The strings are looked at in the bytes, not in the decoded value: decoders
// keep a repeated key's last value, so an earlier one never shows there, and kept as it was
// sent, a secret under a shadowed key would reach the disk. Encoded again, the shadowed
// values go, which changes nothing a reader of the value sees.
func (s *Service) redactJSONGeneral(raw json.RawMessage) json.RawMessage {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil || !s.stringsChange(raw) {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.redactValue(v)); err != nil {
		return raw
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n"))
}

// cleanJSON reports whether raw is valid JSON none of whose strings, keys included, the hook
// changes: redactJSON then returns raw as it is. Every tool call's arguments pass here on
// every save, and decoding them into maps only to find them clean cost more than the
// redaction itself. The strings are decoded as encoding/json decodes them (jsonscan), so
// the hook sees the same text; input cleanJSON cannot read goes the general way.
func (s *Service) cleanJSON(raw []byte) bool {
	r := jsonscan.NewReader(unsafeString(raw), message.MaxReadDepth)
	var buf []byte
	r.OnString = func(t jsonscan.String) bool {
		buf = t.AppendValue(buf[:0])
		str := string(buf) // the hook's own copy: it may keep what it is given
		return s.redact(str) == str
	}
	return r.Whole()
}

// stringsChange reports whether the hook changes any string of raw (valid JSON), keys
// included, and the values of repeated keys too, which a decoded value does not hold.
func (s *Service) stringsChange(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if str, ok := tok.(string); ok && s.redact(str) != str {
			return true
		}
	}
}

func (s *Service) redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return s.redact(x)
	case []any:
		for i := range x {
			x[i] = s.redactValue(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[s.redact(k)] = s.redactValue(e)
		}
		return out
	}
	return v
}

// appendMessageEntry appends e's stored JSON if e is a message entry, and reports whether it
// did; other entries (and times outside what RFC 3339 allows) are left to encodeEntry's
// general path.
func appendMessageEntry(dst []byte, e *Entry) ([]byte, bool) {
	if e.Type != KindMessage || e.Message == nil || e.Compaction != nil || e.BranchSummary != nil ||
		e.Label != nil || e.SessionInfo != nil || e.ModelChange != nil {
		return dst, false
	}
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return dst, false
	}
	out := append(dst, `{"type":`...)
	out = message.AppendString(out, e.Type)
	out = append(out, `,"id":`...)
	out = message.AppendString(out, e.ID)
	if e.ParentID != "" {
		out = append(out, `,"parent_id":`...)
		out = message.AppendString(out, e.ParentID)
	}
	out = append(out, `,"ts":"`...)
	out = e.Time.AppendFormat(out, time.RFC3339Nano)
	out = append(out, `","message":`...)
	out, err := message.Append(out, e.Message)
	if err != nil {
		return dst, false
	}
	return append(out, '}'), true
}
