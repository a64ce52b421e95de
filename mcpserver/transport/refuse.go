package transport

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

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

// Ids. JSON-RPC 2.0 allows a string, a number or null; MCP narrows that to a string or an
// integer, never null. mcp-go serves an object, array, boolean or fractional id and echoes
// it, and takes "id": null for a notification: it answers nothing, and a client waiting for
// that answer waits forever. The transports refuse such requests instead, with Invalid
// Request to id null (the id cannot be echoed), before anything runs.

// idError returns the answer to a request (not an answer: it has no result or error) whose
// id MCP does not allow; an id that is absent (a notification), a string or an integer
// passes.
func idError(id gjson.Result) (rpcError, bool) {
	switch {
	case !id.Exists() || id.Type == gjson.String:
		return rpcError{}, false
	case id.Type == gjson.Number:
		if verbatimID(id.Raw) { // at most 15 digits: every id clients send
			return rpcError{}, false
		}
		f, err := strconv.ParseFloat(id.Raw, 64)
		switch {
		case err != nil || math.Abs(f) > 1<<53:
			return errIDs[idOutOfRange], true
		case f != math.Trunc(f):
			return errIDs[idFraction], true
		}
		return rpcError{}, false
	case id.Type == gjson.Null:
		return errIDs[idNull], true
	case id.IsObject():
		return errIDs[idObject], true
	case id.IsArray():
		return errIDs[idArray], true
	}
	return errIDs[idBoolean], true
}

// What an id MCP does not allow is, in the order of errIDs.
const (
	idNull = iota
	idBoolean
	idObject
	idArray
	idFraction
	idOutOfRange
)

// errIDs answer requests with such an id, naming what it is, made once (no allocation).
var errIDs = func() []rpcError {
	var errs []rpcError
	for _, what := range []string{"null", "a boolean", "an object", "an array", "a fraction",
		"a number beyond ±2^53 (it would not come back unchanged)"} {
		errs = append(errs, rpcError{nil, codeInvalidRequest, `invalid request: "id" must be a string or an integer (MCP), not ` + what +
			`; a notification has no "id" member at all. Nothing was processed`})
	}
	return errs
}()

// rawID is id as an rpcError's id: itself when a string or a number, else nil (null).
func rawID(id gjson.Result) json.RawMessage {
	if id.Type != gjson.String && id.Type != gjson.Number {
		return nil
	}
	return json.RawMessage(id.Raw)
}

// wantRequest is the message of Invalid Request for an object that is neither a request, a
// notification nor an answer: no "method" string, or "jsonrpc" other than "2.0".
const wantRequest = `invalid request: want {"jsonrpc":"2.0","id":…,"method":"<name>",…}`

// errNotObject answers a message, or an element of a batch, that is JSON but not an object.
var errNotObject = rpcError{nil, codeInvalidRequest,
	`invalid request: a JSON-RPC message is an object, {"jsonrpc":"2.0","id":…,"method":"<name>",…}`}

// verdict is what the HTTP transports do with a POSTed message.
type verdict int

const (
	pass    verdict = iota // to mcp-go (after CheckUTF8)
	refuse                 // answered with the rpcError
	isBatch                // a JSON array: a batch (batch.go)
)

// checkHTTP returns what to do with a POSTed message: refuse one nested too deep, JSON that
// is not an object or an array, a request whose id is not allowed (idError), or whose
// method is not a string or jsonrpc not "2.0", and an object that is neither a request nor
// an answer; serve a batch (its parsed array is returned); pass everything else to mcp-go,
// which answers what is not JSON. mcp-go answers -32700 (parse error) to valid JSON that is
// not an object, and to a method or a jsonrpc of another type, and nothing to an object with
// neither method nor id; it takes "id": null for a notification.
func checkHTTP(msg []byte) (rpcError, verdict, gjson.Result) {
	if e, ok := refuseDeep(msg); ok {
		return e, refuse, gjson.Result{}
	}
	if !gjson.ValidBytes(msg) {
		return rpcError{}, pass, gjson.Result{} // mcp-go answers it
	}
	m := gjson.ParseBytes(msg)
	switch {
	case m.IsArray():
		return rpcError{}, isBatch, m
	case !m.IsObject():
		return errNotObject, refuse, m
	}
	var id, result, errField, method, jsonrpc gjson.Result
	readFirst(m, []field{{"id", &id}, {"result", &result}, {"error", &errField}, {"method", &method}, {"jsonrpc", &jsonrpc}})
	if result.Exists() || errField.Exists() {
		return rpcError{}, pass, m // an answer to the server's own request
	}
	if e, bad := idError(id); bad {
		return e, refuse, m
	}
	// Without a method but with an id it is an empty answer, which mcp-go accepts (202).
	if method.Exists() && method.Type != gjson.String || !method.Exists() && !id.Exists() || jsonrpc.Str != "2.0" {
		return rpcError{rawID(id), codeInvalidRequest, wantRequest}, refuse, m
	}
	return rpcError{}, pass, m
}

// writeHTTPError answers an HTTP request with e, as mcp-go answers the messages it cannot
// serve: status 400 and the JSON-RPC error as the body.
func writeHTTPError(w http.ResponseWriter, e rpcError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(append(e.encode(), '\n'))
}
