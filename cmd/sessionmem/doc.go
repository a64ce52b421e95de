// Command sessionmem is an MCP server that gives coding agents a memory that outlives one
// conversation, plus a command line for people.
//
//	sessionmem serve [--store DIR|URL] [--http ADDR]   MCP over stdio, or streamable HTTP + SSE (+ the viewer at /)
//	sessionmem list | show | compact | delete | import | export | stats | verify | redact | prune | hook
//	sessionmem ui [--addr ADDR] [--open]               the session viewer in the browser (package viewer)
//	sessionmem migrate --from DIR|URL --to DIR|URL     copy a store (local or PostgreSQL)
//
// The store is a directory (storage/local) or a postgres:// URL (storage/postgres); store.go
// resolves and opens it, and storeLabel keeps a URL's password out of every log line,
// error and output. Opening is the only place a backend is named: what the commands need
// beyond storage.Store (reindex, the index's and the store's sizes, readiness, the pool's
// figures) they ask for through storage's optional interfaces and ops.PoolStatter, and
// say so when a store lacks one.
//
// This package owns flags and environment (turned into a validated config once, at start),
// logging (slog to stderr or a file, through the redactor; stdout belongs to the protocol in
// stdio mode), re-applying redaction to stores redacted with older rules (redact_marker.go), signals
// (SIGINT/SIGTERM let running calls finish, then the store is closed; a people command
// they stop says how far it got, cli_interrupt.go) and exit codes (0 success, 1 failure,
// 2 usage, 128+signal interrupted). It wires storage, memory, redaction and the summarizers into
// mcpserver for serve, and calls memory and transcript directly for the people commands; it
// serves package viewer for ui and beside /mcp (cli_ui.go).
// ops.go serves package ops's /healthz, /readyz and /metrics beside /mcp (and on the loopback
// --metrics-addr); cli_version.go prints internal/buildinfo's version.
// main stays tiny: run(ctx, args, stdin, stdout, stderr) does the work, so tests drive every
// command in process.
package main
