package transport

import "github.com/tidwall/gjson"

// envelope is what the sequencer reads of a message before routing it. It is read in one
// pass over the message's top level and one over its params: gjson's Get scans from the
// start for every path, and a save's line skipped its ~2 KB of messages once per Get (six
// times). Like Get, the first of duplicate keys counts.
type envelope struct {
	method, id, jsonrpc gjson.Result
	result, error       gjson.Result // either makes the message an answer, not a request
	// From params, when it is an object.
	name, args, uri, requestID, meta gjson.Result
	// The fields of args, when it is an object: read here once for both the sequencer
	// (session_id) and the tool (Arguments), instead of a Get that skips a save's messages and a
	// second pass in the tool.
	argFields []Field
	// dup is the first key read above that the message (or its params) sends twice, "" when
	// none is. mcp-go decodes the message with encoding/json, where the last of duplicate keys
	// counts, so the envelope could route a request (its method, tool, id, arguments) other
	// than the one mcp-go serves: such a request is refused (handle).
	dup string
}

// answer reports whether the message answers a request of the server's (it has a result or
// an error).
func (e *envelope) answer() bool { return e.result.Exists() || e.error.Exists() }

func parseEnvelope(msg gjson.Result) envelope {
	var e envelope
	var params gjson.Result
	e.dup = readFirst(msg, []field{{"method", &e.method}, {"id", &e.id}, {"jsonrpc", &e.jsonrpc},
		{"result", &e.result}, {"error", &e.error}, {"params", &params}})
	if params.IsObject() {
		if dup := readFirst(params, []field{{"name", &e.name}, {"arguments", &e.args}, {"uri", &e.uri},
			{"requestId", &e.requestID}, {"_meta", &e.meta}}); e.dup == "" && dup != "" {
			e.dup = "params." + dup
		}
		if e.args.IsObject() {
			e.argFields = fields(e.args)
		}
	}
	return e
}

// field is a key to read and where its value goes.
type field struct {
	key string
	dst *gjson.Result
}

// readFirst sets each of fields to the first value of its key in obj, in one pass, and
// returns the first of those keys that obj holds twice ("" if none).
func readFirst(obj gjson.Result, fields []field) (dup string) {
	obj.ForEach(func(k, v gjson.Result) bool {
		for _, f := range fields {
			if f.key == k.Str {
				if !f.dst.Exists() {
					*f.dst = v
				} else if dup == "" {
					dup = f.key
				}
				break
			}
		}
		return true
	})
	return dup
}

// sessionID is a tools/call's arguments.session_id (not Exists when absent). Unlike the
// envelope's own fields, of duplicate keys the last counts: the one the tool reads (Last).
func (e *envelope) sessionID() gjson.Result {
	v, _ := Last(e.argFields, "session_id")
	return v
}
