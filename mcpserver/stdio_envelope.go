package mcpserver

import "github.com/tidwall/gjson"

// envelope is what the sequencer reads of a message before routing it. It is read in one
// pass over the message's top level and one over its params: gjson's Get scans from the
// start for every path, and a save's line skipped its ~2 KB of messages once per Get (six
// times). Like Get, the first of duplicate keys counts.
type envelope struct {
	method, id, jsonrpc gjson.Result
	answer              bool // it has a result or an error: an answer, not a request
	// From params, when it is an object.
	name, args, uri, requestID, meta gjson.Result
}

func parseEnvelope(msg gjson.Result) envelope {
	var e envelope
	var params gjson.Result
	first := func(dst *gjson.Result, v gjson.Result) {
		if !dst.Exists() {
			*dst = v
		}
	}
	msg.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "method":
			first(&e.method, v)
		case "id":
			first(&e.id, v)
		case "jsonrpc":
			first(&e.jsonrpc, v)
		case "result", "error":
			e.answer = true
		case "params":
			first(&params, v)
		}
		return true
	})
	if params.IsObject() {
		params.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "name":
				first(&e.name, v)
			case "arguments":
				first(&e.args, v)
			case "uri":
				first(&e.uri, v)
			case "requestId":
				first(&e.requestID, v)
			case "_meta":
				first(&e.meta, v)
			}
			return true
		})
	}
	return e
}

// sessionID is a tools/call's arguments.session_id (not Exists when absent).
func (e *envelope) sessionID() gjson.Result {
	if !e.args.IsObject() {
		return gjson.Result{}
	}
	return e.args.Get("session_id")
}
