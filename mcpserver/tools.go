package mcpserver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/message"
)

// The limits the tools enforce, stated in their descriptions so a client can stay within
// them. A call over a limit, or with text that is not valid UTF-8, is refused whole with a
// tool error that names the field, and stores nothing.
var (
	saveLimits = fmt.Sprintf("Limits: one message at most %d MiB (JSON-encoded) and %d levels of JSON nesting (the message object is level 1, "+
		"a tool call's arguments object level 4); one call at most %d messages and %d MiB; "+
		"name, model and provider at most %d bytes on one line; ids (session_id, parent_id, message ids) 1-%d characters of A-Z a-z 0-9 _ . -; "+
		"all text valid UTF-8. A call over a limit is refused whole and stores nothing.",
		memory.MaxMessageBytes>>20, memory.MaxMessageDepth, memory.MaxBatchMessages, memory.MaxBatchBytes>>20, memory.MaxNameBytes, memory.MaxIDBytes)
	forkLimits  = fmt.Sprintf("Limits: name at most %d bytes on one line.", memory.MaxNameBytes)
	queryLimits = fmt.Sprintf("Limits: query at most %d bytes.", memory.MaxQueryBytes)
)

// tools is the one list every tool is registered from.
func tools(svc *memory.Service, o *Options) []server.ServerTool {
	return []server.ServerTool{
		saveTool(svc),
		withApp(resumeTool(svc)),
		compactTool(svc, o),
		withApp(listTool(svc, o)),
		forkTool(svc),
		deleteTool(svc),
		withApp(searchTool(svc, o)),
	}
}

// hints are a tool's behaviour annotations. Every field is set explicitly for every tool
// because mcp-go's defaults claim every tool is destructive and open-world.
type hints struct {
	title       string
	readOnly    bool
	destructive bool
	idempotent  bool
	openWorld   bool
	order       transport.Order // how ServeStdio orders its calls
}

// toolOrders holds each tool's order by name, as newTool declared it. A tool not in it (an
// unknown name) is ordered as a write on the whole store.
var toolOrders sync.Map

// toolOrder returns the order declared for tool name.
func toolOrder(name string) (transport.Order, bool) {
	o, ok := toolOrders.Load(name)
	if !ok {
		return transport.Order{}, false
	}
	return o.(transport.Order), true
}

func newTool(name, desc string, in, out schema, h hints) mcp.Tool {
	toolOrders.Store(name, h.order)
	t := mcp.NewTool(name,
		mcp.WithDescription(desc),
		mcp.WithTitleAnnotation(h.title),
		mcp.WithReadOnlyHintAnnotation(h.readOnly),
		mcp.WithDestructiveHintAnnotation(h.destructive),
		mcp.WithIdempotentHintAnnotation(h.idempotent),
		mcp.WithOpenWorldHintAnnotation(h.openWorld),
	)
	// NewTool pre-fills a struct schema; a raw one replaces it (both set is a marshal error).
	t.InputSchema = mcp.ToolInputSchema{}
	t.RawInputSchema = mustJSON(in)
	t.RawOutputSchema = mustJSON(out)
	return t
}

// result pairs the structured content (verbatim) with a short sanitised text for the model.
func result(v any, text string) *mcp.CallToolResult {
	return mcp.NewToolResultStructured(v, sanitize(text))
}

// encodedResult is result with the structured content encoded once, here, as ASCII (a
// JavaScript client parses such a line on its fast path; message.AppendASCII), kept as
// RawStructuredContent, which every transport writes as it is; and the contract's estimate of
// the whole answer's tokens. Checking tokens(result(v, text)) against the cap encoded the
// answer once to count it and the transport encoded it again, both through
// CallToolResult.MarshalJSON's map: 0.5 ms of a 0.8 ms session_list page of 100 sessions.
func encodedResult(v any, text string) (*mcp.CallToolResult, int, error) {
	sc, err := json.Marshal(v)
	if err != nil {
		return nil, 0, err
	}
	out := result(nil, text)
	out.RawStructuredContent = message.AppendASCII(make([]byte, 0, len(sc)+len(sc)/16), sc)
	chars := len(out.RawStructuredContent) + len(`{"content":[],"structuredContent":}`)
	for _, c := range out.Content {
		if t, ok := c.(mcp.TextContent); ok {
			js, _ := json.Marshal(t.Text)
			chars += len(message.AppendASCII(nil, js)) + len(`{"type":"text","text":},`)
		}
	}
	return out, (chars + 3) / 4, nil
}

// tokens is the contract's estimate for what a result returns: JSON characters / 4, rounded up.
func tokens(res *mcp.CallToolResult) int {
	b, err := json.Marshal(res)
	if err != nil {
		return 0
	}
	return (utf8.RuneCount(b) + 3) / 4
}

// clipLine cuts s to one line of at most n runes for the short text.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// orEmpty keeps list fields as [] rather than null: output schemas say "array", and the
// TypeScript SDK validates structured content against them.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func normalizeMessages(msgs []memory.Message) []memory.Message {
	msgs = orEmpty(msgs)
	for i := range msgs {
		msgs[i].Content = orEmpty(msgs[i].Content)
	}
	return msgs
}
