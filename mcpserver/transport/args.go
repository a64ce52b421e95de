package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
)

// Field is one of a tool call's arguments as the client sent it.
type Field struct {
	Key   string
	Value gjson.Result
}

// fields returns the fields of obj, a JSON object, in order.
func fields(obj gjson.Result) []Field {
	var fs []Field
	obj.ForEach(func(k, v gjson.Result) bool {
		fs = append(fs, Field{k.Str, v})
		return true
	})
	return fs
}

// Last returns the value of key in fields; of a key sent twice the last one counts, as for
// encoding/json. The sequencer (envelope.sessionID) and the tools read through it, so a
// request is ordered by the session it writes.
func Last(fields []Field, key string) (gjson.Result, bool) {
	for i := len(fields) - 1; i >= 0; i-- {
		if fields[i].Key == key {
			return fields[i].Value, true
		}
	}
	return gjson.Result{}, false
}

// sentArgumentsKey carries the fields of a tools/call's arguments, for a request whose
// arguments ServeStdio took out of the message before mcp-go decoded it (takeArguments).
type sentArgumentsKey struct{}

// withSentArguments gives the tool fields, the arguments of its call: a JSON object that was
// valid (ServeStdio checks each message before it reads it) and read into fields in order.
func withSentArguments(ctx context.Context, fields []Field) context.Context {
	return context.WithValue(ctx, sentArgumentsKey{}, fields)
}

// ErrNotObject is Arguments' error for arguments that are not a JSON object.
var ErrNotObject = errors.New("arguments must be a JSON object")

// Arguments returns a tool call's arguments in the order sent, read from the JSON the client
// sent, the same way on every transport: over stdio ServeStdio took them out of the message
// before mcp-go could decode them (a save's messages would become maps no tool uses) and
// they come from ctx; over HTTP mcp-go kept them in RawArguments. Only a request built in Go
// without JSON is encoded from its decoded map first. No arguments is no fields.
func Arguments(ctx context.Context, req mcp.CallToolRequest) ([]Field, error) {
	if fs, ok := ctx.Value(sentArgumentsKey{}).([]Field); ok {
		return fs, nil
	}
	raw := []byte(req.Params.RawArguments)
	if raw == nil && req.Params.Arguments != nil {
		// No HTML escaping: text such as "a && b" in a tool call's arguments is stored as
		// written.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(req.Params.Arguments); err != nil {
			return nil, fmt.Errorf("arguments cannot be encoded: %v", err)
		}
		raw = buf.Bytes()
	}
	v := gjson.ParseBytes(raw)
	switch {
	case len(bytes.TrimSpace(raw)) == 0 || v.Type == gjson.Null:
		return nil, nil
	case !v.IsObject() || !gjson.ValidBytes(raw):
		return nil, ErrNotObject
	}
	return fields(v), nil
}
