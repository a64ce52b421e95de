package transport

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
	"github.com/sessionmem/sessionmem/message"
)

// Messages both transports refuse as received, before anything else reads them, and the
// JSON-RPC errors they answer them with.

// maxEnvelopeDepth bounds how deep a JSON-RPC message may nest: encoding/json's own limit,
// with which mcp-go decodes every message, so nothing it could serve is refused. The readers
// in front of mcp-go (gjson's validator, CheckUTF8) recurse without a limit of their own: a
// 40 MB line of brackets overflowed the stack and killed the server. The messages inside a
// session_save have a far lower limit of their own (message.MaxDepth), which the tool
// refuses with a tool error; this one only guards the parsers.
const maxEnvelopeDepth = 10000

// codeParseError is JSON-RPC's "parse error".
const codeParseError = -32700

// rpcError is a JSON-RPC error answer of the transports' own.
type rpcError struct {
	id      json.RawMessage // nil: null
	code    int
	message string
}

// encode returns the error as one JSON-RPC message.
func (e rpcError) encode() []byte {
	id := e.id
	if id == nil {
		id = json.RawMessage("null")
	}
	type details struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   details         `json:"error"`
	}{"2.0", id, details{e.code, e.message}})
	return b
}

// refuseDeep returns the answer to msg when it nests deeper than maxEnvelopeDepth: Invalid
// Request to its id when the top level has a string or numeric id (gjson finds it without
// recursing), a parse error to null otherwise.
func refuseDeep(msg []byte) (rpcError, bool) {
	if !jsonscan.Deeper(msg, maxEnvelopeDepth) {
		return rpcError{}, false
	}
	text := fmt.Sprintf("the message nests deeper than %d levels of JSON, more than this server reads; nothing of it was processed "+
		"(one message of a session_save may nest %d levels)", maxEnvelopeDepth, message.MaxDepth)
	if id := gjson.GetBytes(msg, "id"); id.Type == gjson.String || id.Type == gjson.Number {
		return rpcError{json.RawMessage(id.Raw), codeInvalidRequest, "invalid request: " + text}, true
	}
	return rpcError{nil, codeParseError, "parse error: " + text}, true
}

// badID reports whether id, the id of a message that is not an answer, is one JSON-RPC 2.0
// does not allow (a request's id is a string, a number or null): such a request is refused
// with Invalid Request to id null. mcp-go would serve it and echo the id.
func badID(id gjson.Result) bool {
	return id.IsObject() || id.IsArray() || id.Type == gjson.True || id.Type == gjson.False
}

// errBadID answers a request with such an id.
var errBadID = rpcError{nil, codeInvalidRequest,
	`invalid request: "id" must be a string, a number or null (JSON-RPC 2.0); nothing was processed`}

// refuseHTTP returns the answer to a POSTed message the HTTP transports refuse before mcp-go
// reads it: one nested too deep, or a request whose id is not allowed.
func refuseHTTP(msg []byte) (rpcError, bool) {
	if e, ok := refuseDeep(msg); ok {
		return e, true
	}
	if !gjson.ValidBytes(msg) {
		return rpcError{}, false // mcp-go answers it
	}
	var id, result, errField gjson.Result
	readFirst(gjson.ParseBytes(msg), []field{{"id", &id}, {"result", &result}, {"error", &errField}})
	if !result.Exists() && !errField.Exists() && badID(id) {
		return errBadID, true
	}
	return rpcError{}, false
}

// writeHTTPError answers an HTTP request with e, as mcp-go answers the messages it cannot
// serve: status 400 and the JSON-RPC error as the body.
func writeHTTPError(w http.ResponseWriter, e rpcError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(append(e.encode(), '\n'))
}
