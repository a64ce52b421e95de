// Package mcpserver exposes a memory.Service over the Model Context Protocol: the seven session_*
// tools (schemas, argument checks, error mapping, bounded and sanitised output), the compaction
// prompt templates as MCP prompts, session resources (session://{id}, …/summary, …/files) and an
// MCP-sampling summarizer for session_compact.
//
// It also owns what the transports do with raw messages: ServeStdio serves stdio itself and
// keeps a pipelined client's requests in order (stdio.go, stdio_serve.go, stdio_session.go),
// encodeMessage writes tool answers without re-encoding stored JSON (encode.go), refuse.go
// answers messages nested too deep for the parsers and requests whose id JSON-RPC does not
// allow before anything reads them, CheckUTF8 refuses text that is not valid UTF-8 before
// mcp-go's decoder replaces it, and FixResponse / WrapHTTP give a missing session's resource
// the spec's error code. NewHTTP wires the HTTP transports (streamable HTTP and legacy SSE)
// behind those checks, so that cmd serves HTTP without importing mcp-go. See docs/PROTOCOL.md. An Observer (Options.Observer, observe.go)
// is told about every tool call, whatever its transport: what operators' metrics count. It
// serves the session viewer as an MCP App (app.go): the ui:// resource with viewer.AppHTML,
// named in the read tools' _meta.
//
// It is the only non-test package that imports mcp-go; it must not be imported by memory or any
// package below it (imports point inward: cmd → mcpserver → viewer → memory). It owns no state of its own
// beyond configuration: every tool call is one call into memory.Service, which is safe for
// concurrent use, so the returned server may serve many sessions and transports at once.
package mcpserver
