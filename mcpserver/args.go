package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
)

// args decodes one call's arguments with messages a model can act on. mcp-go's own schema
// validation words its errors for people who read JSON Schema internals
// ("<root>: &{Missing:[…]}"), so we check the few things that matter ourselves. The first
// problem wins; err returns it.
//
// The arguments are read from the JSON the client sent (one gjson pass; a save's messages are
// passed on as raw JSON), as transport.Arguments returns them on every transport.
type args struct {
	tool   string
	fields []transport.Field // in the order sent; of a key sent twice, the last one counts
	seen   []string
	err    error
}

func newArgs(ctx context.Context, tool string, req mcp.CallToolRequest) *args {
	a := &args{tool: tool, seen: make([]string, 0, 8)}
	fields, err := transport.Arguments(ctx, req)
	switch {
	case errors.Is(err, transport.ErrNotObject):
		a.fail("arguments must be a JSON object", "send named arguments, e.g. {\"session_id\":\"…\"}")
	case err != nil:
		a.fail(err.Error(), "")
	}
	a.fields = fields
	return a
}

func (a *args) fail(msg, hint string) {
	if a.err == nil {
		a.err = &argError{msg: msg, hint: hint}
	}
}

func (a *args) get(key string) (gjson.Result, bool) {
	a.seen = append(a.seen, key)
	v, ok := transport.Last(a.fields, key)
	if !ok || v.Type == gjson.Null {
		return gjson.Result{}, false
	}
	return v, true
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
	if v.Type != gjson.String {
		a.fail(fmt.Sprintf("argument %q must be a string, got %s", key, jsonType(v)), hint)
		return ""
	}
	s := argText(v)
	if required && strings.TrimSpace(s) == "" {
		a.fail(fmt.Sprintf("argument %q must not be empty", key), hint)
	}
	return s
}

// clipArg is an argument's JSON as an error message quotes it.
func clipArg(raw string) string {
	if len(raw) > 40 {
		return raw[:40] + "…"
	}
	return raw
}

// integer returns a whole-number argument of at least minimum (0 when absent).
func (a *args) integer(key string, minimum int) int {
	v, ok := a.get(key)
	if !ok {
		return 0
	}
	f, isNum := v.Num, v.Type == gjson.Number
	if isNum && f == math.Trunc(f) && math.Abs(f) > 1<<53 { // ±Inf too (1e400)
		a.fail(fmt.Sprintf("argument %q is out of range (%s)", key, clipArg(v.Raw)),
			fmt.Sprintf("send a whole number up to %d, e.g. %q: %d", int64(1)<<53, key, max(minimum, 1)))
		return 0
	}
	if !isNum || f != math.Trunc(f) {
		what := jsonType(v)
		if isNum {
			what = "a fraction (" + clipArg(v.Raw) + ")"
		}
		a.fail(fmt.Sprintf("argument %q must be a whole number, got %s", key, what),
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
	if v.Type != gjson.True && v.Type != gjson.False {
		a.fail(fmt.Sprintf("argument %q must be true or false, got %s", key, jsonType(v)), "")
		return false
	}
	return v.Type == gjson.True
}

// enum returns a string argument that must be one of allowed (or absent).
func (a *args) enum(key string, allowed ...string) string {
	s := a.str(key, false, "")
	if s != "" && !slices.Contains(allowed, s) {
		a.fail(fmt.Sprintf("argument %q must be one of %s, got %q", key, strings.Join(allowed, ", "), s), "")
	}
	return s
}

// done reports the first problem, including arguments the tool does not know (usually a typo
// such as sessionId for session_id).
func (a *args) done() error {
	if a.err != nil {
		return a.err
	}
	var unknown []string
	for _, f := range a.fields {
		if !slices.Contains(a.seen, f.Key) {
			unknown = append(unknown, f.Key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		unknown = slices.Compact(unknown) // a key sent twice is named once
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

func jsonType(v gjson.Result) string {
	switch v.Type {
	case gjson.Null:
		return "null"
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	}
	if v.IsArray() {
		return "an array"
	}
	return "an object"
}

// argText returns a string argument as encoding/json would decode it: a string of its own,
// each byte that is not UTF-8 replaced by U+FFFD (the transports refuse such text before it
// gets here; this keeps a request built another way from passing it on).
func argText(v gjson.Result) string {
	if utf8.ValidString(v.Str) {
		return strings.Clone(v.Str)
	}
	return strings.ToValidUTF8(v.Str, "\uFFFD")
}
