// Package mcpserver exposes a memory.Service over the Model Context Protocol: the seven session_*
// tools (schemas, argument checks, error mapping, bounded and sanitised output), the compaction
// prompt templates as MCP prompts, session resources (session://{id}, …/summary, …/files) and an
// MCP-sampling summarizer for session_compact.
//
// What the transports do with raw messages, and every patch of mcp-go, is in the subpackage
// transport: ServeStdio (here with each tool's declared ordering, hints.order) serves stdio
// in order, NewHTTP wires streamable HTTP and legacy SSE, so that cmd serves both without
// importing mcp-go. See docs/PROTOCOL.md. An Observer (Options.Observer, observe.go)
// is told about every tool call, whatever its transport: what operators' metrics count. It
// serves the session viewer as an MCP App (app.go): the ui:// resource with viewer.AppHTML,
// named in the read tools' _meta.
//
// It and its subpackage transport are the only non-test packages that import mcp-go; it must not be imported by memory or any
// package below it (imports point inward: cmd → mcpserver → viewer → memory). It owns no state of its own
// beyond configuration: every tool call is one call into memory.Service, which is safe for
// concurrent use, so the returned server may serve many sessions and transports at once.
package mcpserver
