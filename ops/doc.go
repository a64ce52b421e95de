// Package ops is what an operator of a sessionmem server reads: /healthz (the process
// serves), /readyz (the store is usable) and Prometheus metrics (/metrics). Each is a plain
// http.Handler whose dependencies are passed in; cmd/sessionmem decides where they are
// served and behind what (see its ops.go).
//
// Metrics implements mcpserver.Observer, so it counts every tool call whatever the transport,
// and reads the store's figures (storage.IndexLagger, a PostgreSQL pool's pgxpool.Stat
// through PoolStatter) only when scraped. Failed calls are classified by what their error wraps (outcome.go): a caller's
// mistake (memory's sentinels), a store failure by kind (storage's sentinels), a timeout.
//
// Imports: the standard library, prometheus/client_golang, pgx's pgxpool (the Stat type),
// mcpserver (the ToolCall it observes, never mcp-go itself), memory and storage (their
// sentinel errors), internal/buildinfo.
package ops
