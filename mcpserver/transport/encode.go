package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/message"
)

// Encoding answers. json.Marshal of a tools/call answer goes through reflection three times
// over: CallToolResult.MarshalJSON builds a map and encodes it (sorting its keys, encoding the
// structured content), then the JSON-RPC response is encoded around that, validating and
// compacting the result's bytes again. A resume page is megabytes of messages that were
// stored as compact JSON and read back as such: most of a full resume's CPU went into copying
// them through the encoder's scanner; and a save's answer, small, took about 5 µs. So
// EncodeMessage writes the answer of a tools/call itself, with the same fields as
// CallToolResult.MarshalJSON in the same order (a map's: sorted keys), the id and text
// content without reflection (but for strings with something to escape), and the
// structured content either encoded once by json.Marshal or, when it is RawStructuredContent,
// copied as it is; every other message goes through json.Marshal. Only our tools set
// RawStructuredContent, and only to JSON they built from json.Marshal output and stored
// messages (see RawStructured).
//
// Without RawStructuredContent the answer is byte for byte what json.Marshal gives (a test
// compares them). With it, it is the same JSON value; the bytes differ in that <, > and &
// inside the raw structured content are not escaped as \u003c, \u003e and \u0026, and in
// that the text content's non-ASCII characters are escaped (\u2248), as RawStructured and
// EndRawPage escape the structured content's: a resume page goes out as a line of ASCII,
// which JavaScript clients decode and parse on their fast path (message.AppendASCII). JSON
// readers decode either to the same text.

// EncodeMessage returns msg as one line of JSON, without the newline, in pieces to be written
// one after the other: a tool answer's raw structured content (a resume page: megabytes) is
// written from where it lies, not copied into one buffer with the rest.
func EncodeMessage(msg any) ([][]byte, error) {
	if r, ok := msg.(mcp.JSONRPCResponse); ok {
		if res, ok := r.Result.(*mcp.CallToolResult); ok && res != nil {
			return encodeToolAnswer(r, res)
		}
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	// The error code of a missing session's resource (transport.go); a tool answer is never a
	// JSON-RPC error.
	return [][]byte{FixResponse(b)}, nil
}

// encodeToolAnswer writes the answer r to a tools/call, whose result is res.
func encodeToolAnswer(r mcp.JSONRPCResponse, res *mcp.CallToolResult) ([][]byte, error) {
	head, err := encodeToolHead(r, res)
	if err != nil {
		return nil, err
	}
	if len(res.RawStructuredContent) > 0 {
		head = append(head, `,"structuredContent":`...)
		return [][]byte{head, res.RawStructuredContent, []byte("}}")}, nil
	}
	if res.StructuredContent != nil {
		sc, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, err
		}
		head = append(head, `,"structuredContent":`...)
		head = append(head, sc...)
	}
	// As EncodeMessage does for what json.Marshal wrote, so that the bytes stay the same.
	return [][]byte{FixResponse(append(head, "}}"...))}, nil
}

// encodeToolHead writes {"jsonrpc","id","result":{ and the result's fields up to its
// structured content, in the order CallToolResult.MarshalJSON (a map, so sorted keys) gives
// them; the structured content and "}}" follow.
func encodeToolHead(r mcp.JSONRPCResponse, res *mcp.CallToolResult) ([]byte, error) {
	head := make([]byte, 0, 256)
	head = append(head, `{"jsonrpc":`...)
	head = appendString(head, r.JSONRPC)
	head = append(head, `,"id":`...)
	head, err := appendID(head, r.ID)
	if err != nil {
		return nil, err
	}
	head = append(head, `,"result":{`...)
	if res.Meta != nil {
		head = append(head, `"_meta":`...)
		if head, err = appendJSON(head, res.Meta); err != nil {
			return nil, err
		}
		head = append(head, ',')
	}
	head = append(head, `"content":`...)
	if len(res.Content) == 0 {
		// MarshalJSON encodes a nil Content as an empty list too.
		head = append(head, "[]"...)
	}
	for i, c := range res.Content {
		if i == 0 {
			head = append(head, '[')
		} else {
			head = append(head, ',')
		}
		if t, ok := c.(mcp.TextContent); ok && t.Annotations == nil && t.Meta == nil {
			// What json.Marshal writes for it (fields in declaration order), without reflection.
			head = append(head, `{"type":`...)
			head = appendString(head, t.Type)
			head = append(head, `,"text":`...)
			if len(res.RawStructuredContent) > 0 {
				// The line stays ASCII, as the raw structured content is (RawStructured).
				head = message.AppendASCII(head, appendString(nil, t.Text))
			} else {
				head = appendString(head, t.Text)
			}
			head = append(head, '}')
		} else if head, err = appendJSON(head, c); err != nil {
			return nil, err
		}
		if i == len(res.Content)-1 {
			head = append(head, ']')
		}
	}
	if len(res.InputRequests) > 0 {
		head = append(head, `,"inputRequests":`...)
		if head, err = appendJSON(head, res.InputRequests); err != nil {
			return nil, err
		}
	}
	if res.IsError {
		head = append(head, `,"isError":true`...)
	}
	if res.RequestState != "" {
		head = append(head, `,"requestState":`...)
		head = appendString(head, res.RequestState)
	}
	if res.ResultType != "" {
		head = append(head, `,"resultType":`...)
		head = appendString(head, string(res.ResultType))
	}
	return head, nil
}

// appendID appends a JSON-RPC id as json.Marshal writes it: the ids mcp-go echoes (a string,
// or a number decoded into a float64) without reflection.
func appendID(b []byte, id mcp.RequestId) ([]byte, error) {
	switch v := id.Value().(type) {
	case string:
		return appendString(b, v), nil
	case float64:
		// encoding/json writes a float64 in this range with strconv's 'f' format.
		if a := math.Abs(v); a == 0 || a >= 1e-6 && a < 1e21 {
			return strconv.AppendFloat(b, v, 'f', -1, 64), nil
		}
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	}
	return appendJSON(b, id)
}

// appendJSON appends json.Marshal(v) to b.
func appendJSON(b []byte, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

// appendString appends s as a JSON string exactly as encoding/json writes it: as it is when
// it holds nothing encoding/json escapes (plainJSON: ids, the protocol's own words, most short
// texts), else through json.Marshal.
func appendString(b []byte, s string) []byte {
	if !plainJSON(s) {
		enc, _ := json.Marshal(s) // a string always encodes
		return append(b, enc...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON reports whether encoding/json writes s between quotes as it is: printable ASCII
// with no quote, backslash, <, > or & (which it escapes, HTML-safe).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// RawStructured returns the JSON object of head (a value that encodes to a JSON object) with
// one more field, key, whose value is the array of items: the JSON value json.Marshal of a
// struct with head's fields followed by key gives, without validating and copying the items
// through the encoder again, and written ASCII (message.AppendASCII). Each item must be valid JSON (stored messages, checked when they were read);
// an item with a line break outside a string (not written by json.Marshal, but valid JSON) is
// compacted, so the answer stays one line on stdio.
func RawStructured(head any, key string, items []json.RawMessage) ([]byte, error) {
	h, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	if len(h) < 2 || h[0] != '{' || h[len(h)-1] != '}' {
		return nil, fmt.Errorf("RawStructured: %T does not encode to an object", head)
	}
	h = h[:len(h)-1]
	size := len(h) + len(key) + 8
	for _, it := range items {
		size += len(it) + 1
	}
	out := make([]byte, 0, size+size/64)
	out = message.AppendASCII(out, h)
	if len(h) > 1 {
		out = append(out, ',')
	}
	k, _ := json.Marshal(key)
	out = append(out, k...)
	out = append(out, ':', '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		if len(it) == 0 {
			it = json.RawMessage("null") // as json.Marshal writes a nil RawMessage
		} else if bytes.IndexByte(it, '\n') >= 0 || bytes.IndexByte(it, '\r') >= 0 {
			var c bytes.Buffer
			if err := json.Compact(&c, it); err != nil {
				return nil, err
			}
			it = c.Bytes()
		}
		out = message.AppendASCII(out, it)
	}
	return append(out, ']', '}'), nil
}

// EndRawPage ends page, a JSON object opened up to an array's items (`{"key":[` and the
// items, as memory builds a resume page: ASCII, one line), with the array's end and the fields
// of head (a value that encodes to a JSON object, written ASCII as well), appending to page
// where it has room: a page of megabytes is not copied. The result is the same JSON value as
// RawStructured(head, key, items), its key first.
func EndRawPage(page []byte, head any) ([]byte, error) {
	h, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	if len(h) < 2 || h[0] != '{' || h[len(h)-1] != '}' {
		return nil, fmt.Errorf("EndRawPage: %T does not encode to an object", head)
	}
	page = append(page, ']')
	if len(h) > 2 {
		page = append(page, ',')
		return message.AppendASCII(page, h[1:]), nil
	}
	return append(page, '}'), nil
}
