package transcript

// What the readers make of a source's values: summaries, times, tool arguments.

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
	"github.com/sessionmem/sessionmem/memory"
)

// summaryText is a summary without the <read-files>/<modified-files> blocks sessionmem appends
// to stored summaries (an export carries them) and without surrounding space, so the same
// summary reads the same from every source.
func summaryText(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	for {
		var open string
		switch {
		case strings.HasSuffix(s, "</read-files>"):
			open = "<read-files>"
		case strings.HasSuffix(s, "</modified-files>"):
			open = "<modified-files>"
		default:
			return strings.TrimSpace(s)
		}
		i := strings.LastIndex(s, open)
		if i < 0 || (i > 0 && s[i-1] != '\n') {
			return strings.TrimSpace(s)
		}
		s = strings.TrimRight(s[:i], " \t\r\n")
	}
}

// parseTime reads an RFC 3339 time, zero when absent or malformed.
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// objectArgs makes tool arguments a JSON object: objects pass through; other JSON and
// non-JSON text are kept under "input", and so is JSON nested deeper than a message's
// arguments may be (memory.MaxArgumentsDepth), as its text: an import keeps going where a
// save would be refused, and the text keeps every byte.
func objectArgs(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}")
	}
	if raw[0] == '{' && !jsonscan.Deeper(raw, memory.MaxArgumentsDepth) && json.Valid(raw) {
		return json.RawMessage(raw)
	}
	var v any = string(raw)
	if !jsonscan.Deeper(raw, memory.MaxArgumentsDepth-1) && json.Valid(raw) { // under "input" it nests one more
		v = json.RawMessage(raw)
	}
	b, _ := json.Marshal(map[string]any{"input": v})
	return b
}

// flattenDeepArguments keeps, as objectArgs does, the arguments of tool calls that nest deeper
// than memory.MaxArgumentsDepth as their text under "input": an export written before
// sessionmem had its nesting limit may hold such a call, and importing it goes on.
func flattenDeepArguments(blocks []memory.Block) {
	for i := range blocks {
		if b := &blocks[i]; b.Type == memory.BlockToolCall && jsonscan.Deeper(b.Arguments, memory.MaxArgumentsDepth) {
			b.Arguments = objectArgs(b.Arguments)
		}
	}
}

// stringArgs parses tool arguments given as a JSON-encoded string (Codex function calls);
// text that is not a JSON object, or nests deeper than memory.MaxArgumentsDepth, is kept as
// it is under "input".
func stringArgs(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") && !jsonscan.Deeper([]byte(t), memory.MaxArgumentsDepth) && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(map[string]string{"input": s})
	return b
}

func firstTime(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
