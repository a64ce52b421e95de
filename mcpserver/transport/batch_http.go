package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"
)

// Batches over HTTP (batch.go says what is served and what refused).

// streamableBatch serves a batch POSTed to streamable HTTP. Each element goes to mcp-go's
// handler as a POST of its own, with the batch's headers, through the checks a message sent
// alone gets; what it answers in the body is collected, and the answers go back as one JSON
// array (200), or as 202 with no body when no element was answered. The recorder an element
// is served into cannot stream, so mcp-go answers in JSON, never as an event stream (a
// progress notification sent during the call is dropped; it could not be part of the array).
// A response that is not a JSON-RPC message (an unknown session: 404; a wrong Accept or
// Host: 4xx) depends on the headers, the same for every element: the first element's
// refuses the batch as a whole, as it is. Elements are served one after the other.
func (h *checked) streamableBatch(w http.ResponseWriter, r *http.Request, batch gjson.Result) {
	version := r.Header.Get(mcp.HeaderProtocolVersion)
	if version == "" {
		version = mcp.ProtocolVersion20250326 // what the spec says to assume without the header
	}
	elems, e, ok := openBatch(batch, version)
	if !ok {
		writeHTTPError(w, e)
		return
	}
	var answers [][]byte
	served := false // whether an element has reached mcp-go
	for _, el := range elems {
		answer, done := checkElement(el)
		if !done {
			var rec *recorder
			if answer, rec = h.streamableElement(r, el); rec != nil {
				if !served {
					rec.copyTo(w)
					return
				}
				// Later (the session ended meanwhile): an error to the element, if a request.
				if id := rawID(el.Get("id")); id != nil && el.Get("method").Exists() {
					answer = rpcError{id, codeInvalidRequest, fmt.Sprintf("invalid request: refused by the HTTP transport: %d %s",
						rec.status, strings.TrimSpace(rec.body.String()))}.encode()
				}
			}
			served = true
		}
		if answer != nil {
			answers = append(answers, answer)
		}
	}
	writeBatch(w, answers)
}

// streamableElement serves one element of a batch through the handler: its answer (nil:
// none), or, when the handler's response is not a JSON-RPC message, that response.
func (h *checked) streamableElement(r *http.Request, el gjson.Result) ([]byte, *recorder) {
	rec := &recorder{}
	h.serveOne(rec, r.Clone(r.Context()), []byte(el.Raw))
	body := bytes.TrimSpace(rec.body.Bytes())
	switch {
	case len(body) == 0 && rec.status < http.StatusMultipleChoices:
		return nil, nil // a notification or an answer: 202
	case len(body) > 0 && body[0] == '{' && gjson.GetBytes(body, "jsonrpc").Exists():
		return FixResponse(body), nil
	}
	return nil, rec
}

// checkElement returns the answer to an element of a batch that is refused before it is
// served (done): one that is not an object, is refused alone (checkHTTP), or must come
// alone (refuseInBatch).
func checkElement(el gjson.Result) (answer []byte, done bool) {
	if !el.IsObject() {
		return errNotObject.encode(), true
	}
	if e, v, _ := checkHTTP([]byte(el.Raw)); v == refuse {
		return e.encode(), true
	}
	if e, refused := refuseInBatch(el.Get("method"), el.Get("id")); refused {
		return e.encode(), true
	}
	return nil, false
}

// writeBatch answers a batch over HTTP: the answers as a JSON array, or 202 when there are none.
func writeBatch(w http.ResponseWriter, answers [][]byte) {
	if len(answers) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(joinBatch(answers), '\n'))
}

// recorder is the response of a request served in memory. It is no http.Flusher, so
// mcp-go's streamable HTTP handler answers in JSON.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header {
	if r.header == nil {
		r.header = http.Header{}
	}
	return r.header
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// copyTo sends the recorded response to w.
func (r *recorder) copyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	w.Write(r.body.Bytes())
}

// SSE. mcp-go's message endpoint answers 202 at once and sends each answer later on the
// session's event stream, from a queue of the session that only mcp-go reaches; an element
// POSTed to it alone would be answered in an event of its own. So a batch is served here,
// with the session's context (its session, for notifications and the protocol version),
// which mcp-go hands only to its SSE context function: a probe, an answer to no request of
// the server's (mcp-go drops it unread, as it drops any answer), is POSTed to the endpoint
// with the batch's query, and the context function keeps the context it is given. The
// answers go out as one event (SSEServer.SendEventToSession).

// probeMessage is the probe: an answer, which MCPServer.HandleMessage drops unread.
const probeMessage = `{"jsonrpc":"2.0","id":"sessionmem/batch-probe","result":{}}`

// probeKey is the request context key of where the probe's context goes.
type probeKey struct{}

// keepProbeContext is the SSE server's context function: it keeps the context of a probe.
func keepProbeContext(ctx context.Context, r *http.Request) context.Context {
	if dst, ok := r.Context().Value(probeKey{}).(*context.Context); ok {
		*dst = ctx
	}
	return ctx
}

// sseQueueWait bounds how long a batch's answer waits for room in a session's event queue
// (100 events), which mcp-go's SendEventToSession does not wait for.
const sseQueueWait = time.Minute

// sseBatch serves a batch POSTed to SSE's message endpoint: 202 at once, as mcp-go answers a
// message, and the answers as one event, once all are in.
func (h *HTTP) sseBatch(w http.ResponseWriter, r *http.Request, batch gjson.Result) {
	var ctx context.Context
	probe := r.Clone(context.WithValue(r.Context(), probeKey{}, &ctx))
	probe.Body = io.NopCloser(strings.NewReader(probeMessage))
	probe.ContentLength = int64(len(probeMessage))
	rec := &recorder{}
	h.sse.MessageHandler().ServeHTTP(rec, probe)
	if ctx == nil { // no such session: mcp-go's answer to it
		rec.copyTo(w)
		return
	}
	version := server.RequestProtocolVersion(ctx)
	if version == "" {
		version = batchVersion(batch)
	}
	elems, e, ok := openBatch(batch, version)
	if !ok {
		writeHTTPError(w, e)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	go h.answerSSEBatch(context.WithoutCancel(ctx), r.URL.Query().Get("sessionId"), elems)
}

// answerSSEBatch serves the elements of a batch one after the other and sends the answers.
func (h *HTTP) answerSSEBatch(ctx context.Context, session string, elems []gjson.Result) {
	var answers [][]byte
	for _, el := range elems {
		answer, done := checkElement(el)
		if !done {
			line, _ := CheckUTF8([]byte(el.Raw))
			if resp := handleMessage(ctx, h.srv, line, h.log); resp != nil {
				var err error
				if answer, err = encodeAnswer(resp); err != nil {
					h.log.Warn("sse: encode answer", "err", err)
				}
			}
		}
		if answer != nil {
			answers = append(answers, answer)
		}
	}
	if len(answers) == 0 {
		return
	}
	event := json.RawMessage(joinBatch(answers))
	for deadline := time.Now().Add(sseQueueWait); ; time.Sleep(10 * time.Millisecond) {
		err := h.sse.SendEventToSession(session, event)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "queue full") || time.Now().After(deadline) {
			h.log.Warn("sse: the answers to a batch were not sent", "session", session, "err", err)
			return
		}
	}
}
