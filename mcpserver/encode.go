package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// Encoding answers. json.Marshal of a tools/call answer validates and compacts the structured
// content twice (CallToolResult.MarshalJSON encodes it, then the JSON-RPC response is encoded
// around that), and a resume page is megabytes of messages that were stored as compact JSON
// and read back as such: most of a full resume's CPU went into copying them through the
// encoder's scanner. encodeMessage writes the answer of a tools/call itself, with the same
// fields as CallToolResult.MarshalJSON in the same order, and copies RawStructuredContent as
// it is; every other message goes through json.Marshal. Only our tools set
// RawStructuredContent, and only to JSON they built from json.Marshal output and stored
// messages (see rawStructured).
//
// The result is the same JSON value json.Marshal gives (a test compares them); the bytes
// differ only in that <, > and & inside the raw structured content are not escaped as
// \u003c, \u003e and \u0026, which JSON readers decode to the same text.

// encodeMessage returns msg as one line of JSON, without the newline, in pieces to be written
// one after the other: a tool answer's raw structured content (a resume page: megabytes) is
// written from where it lies, not copied into one buffer with the rest.
func encodeMessage(msg any) ([][]byte, error) {
	if r, ok := msg.(mcp.JSONRPCResponse); ok {
		if res, ok := r.Result.(*mcp.CallToolResult); ok && res != nil && len(res.RawStructuredContent) > 0 {
			head, err := encodeToolHead(r, res)
			if err != nil {
				return nil, err
			}
			return [][]byte{head, res.RawStructuredContent, []byte("}}")}, nil
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

// encodeToolHead writes {"jsonrpc","id","result":{…,"structuredContent": with the result's
// fields in the order CallToolResult.MarshalJSON (a map, so sorted keys) gives them; the
// structured content and "}}" follow.
func encodeToolHead(r mcp.JSONRPCResponse, res *mcp.CallToolResult) ([]byte, error) {
	var head bytes.Buffer
	head.WriteString(`{"jsonrpc":`)
	if err := appendJSON(&head, r.JSONRPC); err != nil {
		return nil, err
	}
	head.WriteString(`,"id":`)
	if err := appendJSON(&head, r.ID); err != nil {
		return nil, err
	}
	head.WriteString(`,"result":{`)
	if res.Meta != nil {
		head.WriteString(`"_meta":`)
		if err := appendJSON(&head, res.Meta); err != nil {
			return nil, err
		}
		head.WriteByte(',')
	}
	content := make([]any, len(res.Content))
	for i, c := range res.Content {
		content[i] = c
	}
	head.WriteString(`"content":`)
	if err := appendJSON(&head, content); err != nil {
		return nil, err
	}
	if len(res.InputRequests) > 0 {
		head.WriteString(`,"inputRequests":`)
		if err := appendJSON(&head, res.InputRequests); err != nil {
			return nil, err
		}
	}
	if res.IsError {
		head.WriteString(`,"isError":true`)
	}
	if res.RequestState != "" {
		head.WriteString(`,"requestState":`)
		if err := appendJSON(&head, res.RequestState); err != nil {
			return nil, err
		}
	}
	if res.ResultType != "" {
		head.WriteString(`,"resultType":`)
		if err := appendJSON(&head, res.ResultType); err != nil {
			return nil, err
		}
	}
	head.WriteString(`,"structuredContent":`)
	return head.Bytes(), nil
}

// appendJSON appends json.Marshal(v) to b.
func appendJSON(b *bytes.Buffer, v any) error {
	enc, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(enc)
	return nil
}

// rawStructured returns the JSON object of head (a value that encodes to a JSON object) with
// one more field, key, whose value is the array of items: what json.Marshal of a struct with
// head's fields followed by key gives, without validating and copying the items through the
// encoder again. Each item must be valid JSON (stored messages, checked when they were read);
// an item with a line break outside a string (not written by json.Marshal, but valid JSON) is
// compacted, so the answer stays one line on stdio.
func rawStructured(head any, key string, items []json.RawMessage) ([]byte, error) {
	h, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	if len(h) < 2 || h[0] != '{' || h[len(h)-1] != '}' {
		return nil, fmt.Errorf("rawStructured: %T does not encode to an object", head)
	}
	h = h[:len(h)-1]
	size := len(h) + len(key) + 8
	for _, it := range items {
		size += len(it) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, h...)
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
		out = append(out, it...)
	}
	return append(out, ']', '}'), nil
}
