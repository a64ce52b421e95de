// Package transport carries MCP messages between clients and mcp-go's MCPServer, and holds
// every place where sessionmem replaces or patches mcp-go (v1.2.1). Each workaround, and the
// mcp-go behaviour it works around:
//
//   - ServeStdio (stdio.go, stdio_serve.go, stdio_session.go, stdio_envelope.go): mcp-go's
//     stdio server runs a pipelined client's requests in any order and serves tool calls
//     before initialize; ours orders them (each tool declares its Order) and serves
//     sampling answers without blocking the connection.
//   - EncodeMessage (encode.go): mcp-go encodes every answer with json.Marshal, re-encoding
//     the stored JSON of a resume page; ours copies RawStructuredContent as it is (a resume
//     page, built ASCII by memory and EndRawPage) and writes the rest as json.Marshal would.
//   - takeArguments and Arguments (stdio_serve.go, args.go): mcp-go decodes a call's
//     arguments into a map no tool uses; over stdio they are taken out of the message first,
//     and every tool reads its arguments as sent through Arguments, whatever the transport.
//   - CheckUTF8 (utf8.go): mcp-go's decoder (encoding/json) replaces invalid UTF-8 and lone
//     surrogates with U+FFFD before a handler sees them; the call is marked so the server can
//     refuse it instead of storing changed text.
//   - refuseDeep, idError and checkHTTP (refuse.go): mcp-go serves requests whose id MCP
//     forbids (an object, an array, a boolean, a fraction), takes "id": null for a
//     notification (never answered), answers -32700 (parse error) to valid JSON that is no
//     request object, and the readers in front of it recurse without a limit on deep
//     nesting; each is answered with Invalid Request instead.
//   - Batches (batch.go, stdio_batch.go, batch_http.go): mcp-go answers every JSON-RPC batch
//     with -32700; they are served for sessions of protocol 2025-03-26 and earlier, and
//     refused with one Invalid Request for later versions, which removed them.
//   - FixResponse and WrapHTTP (wrap.go): mcp-go reports every resource handler error as
//     -32603; a missing session's resource gets the spec's code.
//   - NotificationFlush (flush.go): mcp-go drops or reorders a progress notification sent
//     just before a tool answers (upstream #969); such calls wait 10 ms before answering.
//   - NewHTTP (http.go): streamable HTTP sessions get an idle TTL, which mcp-go does not set
//     (its sessions of clients that never send DELETE leak, upstream #723).
//   - AfterAnswer (after.go): mcp-go gives a handler no way to act once its answer is sent;
//     over stdio, what a tool leaves to AfterAnswer runs when the client has the whole answer
//     but its line's end (a resume page starts building the next page then).
//
// It knows nothing of sessionmem's tools: it is given how each tool's calls are ordered
// (StdioOptions.Orders). mcpserver, the only package that imports it, builds the server.
// See docs/PROTOCOL.md.
package transport
