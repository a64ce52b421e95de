package compaction

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
)

func flagBool(name, usage string) *bool { return flag.Bool(name, false, usage) }

// Builders of contract-shape messages for tests.

type block = map[string]any

func textOf(tokens int) string { return strings.Repeat("abcd", tokens) }

func msg(role string, blocks ...block) []byte {
	return mustJSON(map[string]any{"role": role, "content": blocks})
}

func txt(s string) block { return block{"type": "text", "text": s} }

func tcall(id, name string, args map[string]any) block {
	return block{"type": "tool_call", "id": id, "name": name, "arguments": args}
}

func tres(id, text string, isErr bool) block {
	return block{"type": "tool_result", "tool_call_id": id, "content": []any{txt(text)}, "is_error": isErr}
}

func userE(s string) Entry { return Entry{Kind: KindMessage, Message: msg("user", txt(s))} }

func asstE(s string, calls ...block) Entry {
	blocks := []block{txt(s)}
	return Entry{Kind: KindMessage, Message: msg("assistant", append(blocks, calls...)...)}
}

func resE(id, text string, isErr bool) Entry {
	return Entry{Kind: KindMessage, Message: msg("tool_result", tres(id, text, isErr))}
}

func otherE() Entry { return Entry{Kind: KindOther} }

// ids numbers a path's entries e0, e1, … so failures name them.
func ids(path []Entry) []Entry {
	for i := range path {
		path[i].ID = fmt.Sprintf("e%d", i)
	}
	return path
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
