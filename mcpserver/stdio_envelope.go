package mcpserver

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
	// (session_id) and the tool (newArgs), instead of a Get that skips a save's messages and a
	// second pass in the tool.
	argFields []argField
}

// answer reports whether the message answers a request of the server's (it has a result or
// an error).
func (e *envelope) answer() bool { return e.result.Exists() || e.error.Exists() }

func parseEnvelope(msg gjson.Result) envelope {
	var e envelope
	var params gjson.Result
	readFirst(msg, []field{{"method", &e.method}, {"id", &e.id}, {"jsonrpc", &e.jsonrpc},
		{"result", &e.result}, {"error", &e.error}, {"params", &params}})
	if params.IsObject() {
		readFirst(params, []field{{"name", &e.name}, {"arguments", &e.args}, {"uri", &e.uri},
			{"requestId", &e.requestID}, {"_meta", &e.meta}})
		if e.args.IsObject() {
			e.argFields = argFields(e.args)
		}
	}
	return e
}

// field is a key to read and where its value goes.
type field struct {
	key string
	dst *gjson.Result
}

// readFirst sets each of fields to the first value of its key in obj, in one pass.
func readFirst(obj gjson.Result, fields []field) {
	obj.ForEach(func(k, v gjson.Result) bool {
		for _, f := range fields {
			if f.key == k.Str {
				if !f.dst.Exists() {
					*f.dst = v
				}
				break
			}
		}
		return true
	})
}

// sessionID is a tools/call's arguments.session_id (not Exists when absent). Unlike the
// envelope's own fields, of duplicate keys the last counts: the one the tool reads (args.get).
func (e *envelope) sessionID() gjson.Result {
	v, _ := lastField(e.argFields, "session_id")
	return v
}
