package transport

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
)

// mcp-go reports every error a resource handler returns as -32603 (internal error), while
// the specs want -32002 (resource not found; the 2026-07-28 revision: -32602, invalid
// params) for a session that does not exist. Our handler words that error with a fixed
// prefix per revision, and FixResponse, run on every message the transports send, turns the
// code into the right one. The replacement has the same length, so a Content-Length set
// before it stays right.
var (
	internalNotFound = []byte(`"code":-32603,"message":"` + NotFoundLegacy)
	fixedNotFound    = []byte(`"code":-32002,"message":"` + NotFoundLegacy)
	internalUnknown  = []byte(`"code":-32603,"message":"` + NotFoundModern)
	fixedUnknown     = []byte(`"code":-32602,"message":"` + NotFoundModern)
)

// Prefixes the resource handlers' not-found errors must start with.
const (
	NotFoundLegacy = "resource not found: "
	NotFoundModern = "invalid params: resource not found: "
)

// FixResponse returns msg, one JSON-RPC message the server sends, with the error code of a
// missing session's resource corrected (see above). Other messages come back unchanged.
func FixResponse(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"code":-32603`)) {
		return msg
	}
	if bytes.Contains(msg, internalNotFound) {
		msg = bytes.Replace(msg, internalNotFound, fixedNotFound, 1)
	}
	if bytes.Contains(msg, internalUnknown) {
		msg = bytes.Replace(msg, internalUnknown, fixedUnknown, 1)
	}
	return msg
}

// WrapHTTP puts the message checks of the stdio transport in front of an MCP HTTP handler
// that answers in the response body, streamable HTTP: a POSTed message nested too deep, a
// request whose id MCP does not allow (an object, an array, a boolean, null, a fraction),
// whose method is not a string or whose jsonrpc is not "2.0", and JSON that is not an object,
// are answered with a JSON-RPC error (HTTP 400, as mcp-go answers what it cannot parse) and
// not passed on (refuse.go); a batch is served element by element (batch.go,
// streamableBatch); CheckUTF8 runs on every other message, and FixResponse on what is sent
// back, in a JSON body or an event stream. SSE's message endpoint answers on its event
// stream, and its batches need the session: NewHTTP wraps it with them.
func WrapHTTP(next http.Handler) http.Handler {
	h := &checked{next: next}
	h.batch = h.streamableBatch
	return h
}

// checked is WrapHTTP's handler; batch serves a batch (nil: refused).
type checked struct {
	next  http.Handler
	batch func(w http.ResponseWriter, r *http.Request, batch gjson.Result)
}

func (h *checked) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil {
		h.next.ServeHTTP(&fixWriter{ResponseWriter: w}, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		http.Error(w, "cannot read request body", http.StatusBadRequest)
		return
	}
	switch e, v, msg := checkHTTP(bytes.TrimSpace(body)); v {
	case refuse:
		writeHTTPError(w, e)
	case isBatch:
		h.batch(w, r, msg)
	default:
		h.serveOne(&fixWriter{ResponseWriter: w}, r, body)
	}
}

// serveOne passes one message, checked, to the handler, after CheckUTF8.
func (h *checked) serveOne(w http.ResponseWriter, r *http.Request, body []byte) {
	if fixed, changed := CheckUTF8(bytes.TrimSpace(body)); changed {
		body = fixed
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.next.ServeHTTP(w, r)
}

// fixWriter applies FixResponse to each write (mcp-go writes one message, or one event,
// per call).
type fixWriter struct{ http.ResponseWriter }

func (f *fixWriter) Write(b []byte) (int, error) {
	n := len(b)
	if _, err := f.ResponseWriter.Write(FixResponse(b)); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush keeps event streams flowing.
func (f *fixWriter) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (f *fixWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }
