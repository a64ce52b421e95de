package transport

import (
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
)

// JSON-RPC batches: one message that is an array of requests, notifications or answers.
// MCP 2025-03-26 says servers must accept them; 2025-06-18 removed them, and so every later
// revision. mcp-go decodes every message into a struct, so it answers a batch with -32700
// (parse error) on every transport, as if it were not JSON. The transports read batches
// themselves: for a session that negotiated 2025-03-26 or earlier each element is served as
// if it had come alone, and the answers go back as one array (none for notifications and
// answers; nothing at all, or HTTP 202, when no element is answered), as JSON-RPC 2.0 says.
// For a later version (or none negotiated yet) the batch is refused as a whole with one
// Invalid Request to id null that says to send requests one at a time. In a batch, an empty
// array and an element that is not an object are Invalid Request too; so are initialize
// (2025-03-26: it "MUST NOT be part of a JSON-RPC batch") and subscriptions/listen (it never
// ends, so the batch would never be answered).
//
// The version comes from where each transport knows it: stdio, the initialize it read;
// streamable HTTP, the MCP-Protocol-Version header (without one, 2025-03-26, as the spec
// says); SSE, the session's negotiated version.

// lastBatchVersion is the last protocol version with batches.
const lastBatchVersion = mcp.ProtocolVersion20250326

// batchAllowed reports whether a session of protocol version may send batches. Versions are
// dates, so they compare as strings.
func batchAllowed(version string) bool { return version != "" && version <= lastBatchVersion }

// errEmptyBatch answers [].
var errEmptyBatch = rpcError{nil, codeInvalidRequest, "invalid request: an empty batch ([]); a batch holds at least one request"}

// batchRefusal is the answer to a batch in a session of version, where batches are not served.
func batchRefusal(version string) rpcError {
	if version == "" {
		return rpcError{nil, codeInvalidRequest, "invalid request: JSON-RPC batches are served only in protocol versions " +
			lastBatchVersion + " and earlier, and no protocol version has been negotiated (send initialize first, on its own); " +
			"send requests one at a time"}
	}
	return rpcError{nil, codeInvalidRequest, "invalid request: JSON-RPC batches are not supported in protocol version " + version +
		" (MCP removed them after " + lastBatchVersion + "); send requests one at a time"}
}

// openBatch returns the elements of a batch from a session of version, or the one answer
// that refuses it.
func openBatch(batch gjson.Result, version string) ([]gjson.Result, rpcError, bool) {
	if !batchAllowed(version) {
		return nil, batchRefusal(version), false
	}
	elems := batch.Array()
	if len(elems) == 0 {
		return nil, errEmptyBatch, false
	}
	return elems, rpcError{}, true
}

// batchVersion is the protocol version a 2026-07-28 request states in its _meta, for the
// first element of batch that is one ("" if none): such a client negotiates nothing.
func batchVersion(batch gjson.Result) string {
	v := ""
	batch.ForEach(func(_, el gjson.Result) bool {
		v = el.Get("params._meta." + gjsonEscape(mcp.MetaKeyProtocolVersion)).String()
		return v == ""
	})
	return v
}

// refuseInBatch returns the answer to an element of a batch that must come alone: initialize
// and subscriptions/listen. id is the element's id, one idError let through.
func refuseInBatch(method, id gjson.Result) (rpcError, bool) {
	switch method.Str {
	case string(mcp.MethodInitialize):
		return rpcError{rawID(id), codeInvalidRequest,
			"invalid request: initialize must not be part of a JSON-RPC batch (MCP 2025-03-26); send it on its own"}, true
	case string(mcp.MethodSubscriptionsListen):
		return rpcError{rawID(id), codeInvalidRequest,
			"invalid request: subscriptions/listen cannot be part of a JSON-RPC batch (it is never answered); send it on its own"}, true
	}
	return rpcError{}, false
}

// joinBatch returns the answers of a batch as one JSON array.
func joinBatch(answers [][]byte) []byte {
	n := 1
	for _, a := range answers {
		n += len(a) + 1
	}
	out := make([]byte, 0, n+1)
	out = append(out, '[')
	for i, a := range answers {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, a...)
	}
	return append(out, ']')
}

// encodeAnswer returns msg encoded as one piece, for an array of answers: EncodeMessage's
// pieces copied into one (a resume page's raw content is copied, so its buffer may be
// recycled once this returns).
func encodeAnswer(msg any) ([]byte, error) {
	parts, err := EncodeMessage(msg)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}
