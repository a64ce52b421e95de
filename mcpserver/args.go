package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
)

// args decodes one call's arguments with messages a model can act on. mcp-go's own schema
// validation words its errors for people who read JSON Schema internals
// ("<root>: &{Missing:[…]}"), so we check the few things that matter ourselves. The first
// problem wins; err returns it.
type args struct {
	tool    string
	m       map[string]any
	rawArgs json.RawMessage // the arguments as the client sent them, when the transport kept them
	seen    []string
	err     error
}

func newArgs(tool string, req mcp.CallToolRequest) *args {
	a := &args{tool: tool, rawArgs: req.Params.RawArguments}
	switch v := req.Params.Arguments.(type) {
	case nil:
		a.m = map[string]any{}
	case map[string]any:
		a.m = v
	default:
		a.m = map[string]any{}
		a.fail("arguments must be a JSON object", "send named arguments, e.g. {\"session_id\":\"…\"}")
	}
	return a
}

func (a *args) fail(msg, hint string) {
	if a.err == nil {
		a.err = &argError{msg: msg, hint: hint}
	}
}

func (a *args) get(key string) (any, bool) {
	a.seen = append(a.seen, key)
	v, ok := a.m[key]
	if v == nil {
		return nil, false
	}
	return v, ok
}

// str returns a string argument; required ones must be present and non-empty.
func (a *args) str(key string, required bool, hint string) string {
	v, ok := a.get(key)
	if !ok {
		if required {
			a.fail(fmt.Sprintf("missing required argument %q", key), hint)
		}
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		a.fail(fmt.Sprintf("argument %q must be a string, got %s", key, jsonType(v)), hint)
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		a.fail(fmt.Sprintf("argument %q must not be empty", key), hint)
	}
	return s
}

// integer returns a whole-number argument of at least minimum (0 when absent).
func (a *args) integer(key string, minimum int) int {
	v, ok := a.get(key)
	if !ok {
		return 0
	}
	f, isNum := v.(float64)
	if !isNum {
		if n, isInt := v.(int); isInt {
			f, isNum = float64(n), true
		}
	}
	if !isNum || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		a.fail(fmt.Sprintf("argument %q must be a whole number, got %s", key, jsonType(v)),
			fmt.Sprintf("send e.g. %q: %d", key, max(minimum, 1)))
		return 0
	}
	if int(f) < minimum {
		a.fail(fmt.Sprintf("argument %q must be at least %d, got %d", key, minimum, int(f)),
			"omit it to use the default")
		return 0
	}
	return int(f)
}

func (a *args) boolean(key string) bool {
	v, ok := a.get(key)
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		a.fail(fmt.Sprintf("argument %q must be true or false, got %s", key, jsonType(v)), "")
	}
	return b
}

// enum returns a string argument that must be one of allowed (or absent).
func (a *args) enum(key string, allowed ...string) string {
	s := a.str(key, false, "")
	if s != "" && !slices.Contains(allowed, s) {
		a.fail(fmt.Sprintf("argument %q must be one of %s, got %q", key, strings.Join(allowed, ", "), s), "")
	}
	return s
}

// raw returns an argument as JSON, for memory's own decoders.
func (a *args) raw(key string) json.RawMessage {
	v, ok := a.get(key)
	if !ok {
		return nil
	}
	// The bytes the client sent, when the transport kept them: numbers keep every digit and
	// objects their key order (decoding into any turned numbers into float64s).
	if len(a.rawArgs) > 0 {
		var found gjson.Result
		gjson.ParseBytes(a.rawArgs).ForEach(func(k, v gjson.Result) bool {
			if k.Str == key {
				found = v // the last one counts, as for encoding/json
			}
			return true
		})
		if found.Exists() && found.Type != gjson.Null {
			return json.RawMessage(found.Raw)
		}
	}
	// No HTML escaping: text such as "a && b" or "<div>" is stored as written, so it reads
	// and searches as the client sent it.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		a.fail(fmt.Sprintf("argument %q cannot be encoded: %v", key, err), "")
		return nil
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// done reports the first problem, including arguments the tool does not know (usually a typo
// such as sessionId for session_id).
func (a *args) done() error {
	if a.err != nil {
		return a.err
	}
	var unknown []string
	for k := range a.m {
		if !slices.Contains(a.seen, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := slices.Clone(a.seen)
		sort.Strings(known)
		return &argError{
			msg:  fmt.Sprintf("unknown argument(s) %s", strings.Join(quoteAll(unknown), ", ")),
			hint: fmt.Sprintf("%s accepts %s", a.tool, strings.Join(known, ", ")),
		}
	}
	return nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64, int, int64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
