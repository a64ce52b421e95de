package compaction

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Serialize renders entries as labelled plain text for a summarizer (user, assistant thinking,
// assistant text, tool calls as name(key=value, …), tool results cut to ToolResultChars with a
// note of how much was dropped; images dropped). Compaction and KindOther entries are skipped:
// a previous summary reaches the summarizer separately.
func Serialize(entries []Entry) string {
	var b strings.Builder
	for _, e := range entries {
		p := serializeEntry(e)
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p)
	}
	return b.String()
}

// serializeEntry renders one entry as zero or more labelled paragraphs.
func serializeEntry(e Entry) string {
	switch e.Kind {
	case KindBranchSummary:
		if s := strings.TrimSpace(e.Summary); s != "" {
			return "[Branch summary]: " + s
		}
		return ""
	case KindMessage:
		return serializeMessage(e.Message)
	default:
		return ""
	}
}

func serializeMessage(msg []byte) string {
	role := gjson.Get(unsafeString(msg), "role").Str
	content := gjson.Get(unsafeString(msg), "content")
	var paras []string
	add := func(label, text string) {
		if text = strings.TrimSpace(text); text != "" {
			paras = append(paras, "["+label+"]: "+text)
		}
	}
	textLabel := map[string]string{"user": "User", "assistant": "Assistant", "system": "System", "tool_result": "Tool result"}[role]
	if textLabel == "" {
		textLabel = "Message"
	}
	if content.Type == gjson.String {
		add(textLabel, content.Str)
		return strings.Join(paras, "\n\n")
	}
	var texts, thinking, calls []string
	flush := func() {
		add("Assistant thinking", strings.Join(thinking, "\n"))
		add(textLabel, strings.Join(texts, "\n"))
		add("Assistant tool calls", strings.Join(calls, "; "))
		texts, thinking, calls = nil, nil, nil
	}
	content.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "text":
			texts = append(texts, b.Get("text").Str)
		case "thinking":
			thinking = append(thinking, b.Get("thinking").Str)
		case "tool_call":
			calls = append(calls, formatCall(b.Get("name").Str, b.Get("arguments")))
		case "tool_result":
			flush()
			label := "Tool result"
			if b.Get("is_error").Bool() {
				label = "Tool result (error)"
			}
			add(label, truncate(resultText(b.Get("content")), ToolResultChars))
		}
		return true
	})
	flush()
	return strings.Join(paras, "\n\n")
}

// formatCall writes a tool call as name(key=<json value>, …) in the arguments' own key order.
func formatCall(name string, args gjson.Result) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('(')
	if args.IsObject() {
		first := true
		args.ForEach(func(k, v gjson.Result) bool {
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(k.String())
			b.WriteByte('=')
			b.WriteString(compactRaw(v.Raw))
			return true
		})
	} else if args.Exists() {
		b.WriteString(compactRaw(args.Raw))
	}
	b.WriteByte(')')
	return b.String()
}

// compactRaw drops insignificant whitespace from raw JSON.
func compactRaw(raw string) string {
	if !strings.ContainsAny(raw, " \n\t\r") {
		return raw
	}
	var b strings.Builder
	b.Grow(len(raw))
	inStr, esc := false, false
	for _, r := range raw {
		if inStr {
			b.WriteRune(r)
			switch {
			case esc:
				esc = false
			case r == '\\':
				esc = true
			case r == '"':
				inStr = false
			}
			continue
		}
		switch r {
		case ' ', '\n', '\t', '\r':
			continue
		case '"':
			inStr = true
		}
		b.WriteRune(r)
	}
	return b.String()
}

// resultText is the text of a tool result's content (a string or blocks); images are dropped.
func resultText(content gjson.Result) string {
	if content.Type == gjson.String {
		return content.Str
	}
	var parts []string
	content.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "text":
			parts = append(parts, b.Get("text").Str)
		case "tool_result":
			parts = append(parts, resultText(b.Get("content")))
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// truncate keeps the first limit characters of s and says how many were dropped.
func truncate(s string, limit int) string {
	kept, dropped := CutChars(s, limit)
	if dropped == 0 {
		return s
	}
	return fmt.Sprintf("%s\n[… %d more characters]", kept, dropped)
}

// CutChars returns the first limit characters (runes) of s and how many characters it dropped.
func CutChars(s string, limit int) (kept string, dropped int) {
	if limit < 0 {
		limit = 0
	}
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s, 0
	}
	cut := 0
	for i := range s {
		if limit == 0 {
			cut = i
			break
		}
		limit--
	}
	return s[:cut], n - utf8.RuneCountInString(s[:cut])
}
