// Package viewer is sessionmem's session viewer: a small web application, embedded in the
// binary, for people to browse, read, search, export and delete the sessions a memory.Service
// holds, and watch an open session grow live.
//
// It owns the page assets (assets/: HTML, CSS and plain JavaScript, embedded with go:embed;
// no build step and no request to another origin) and the thin HTTP layer that serves them
// (Handler): a JSON API over memory.Service's exported methods (List, Get, Timeline, Search,
// Highlights, Delete, and transcript.Export for downloads), and Server-Sent Events for live
// updates, which poll memory.Service.Get cheaply while a page listens, so a message saved by
// any process on the store (local or PostgreSQL) appears within a second. Every query goes
// through memory: the viewer reads no file and runs no SQL.
//
// Security (security.go): loopback Host names only unless the caller allows remote access;
// a browser Origin must be the viewer's own; with a token configured every request needs it
// (a link with ?token= sets an HttpOnly, SameSite=Strict cookie); DELETE, the only write,
// also needs the page's CSRF token in a header. Pages carry a strict Content-Security-Policy
// with Trusted Types, so no message content can become markup or script: the scripts build
// the DOM from text nodes only.
//
// The same scripts also run as an MCP App (AppHTML): one self-contained document that the
// mcpserver package serves as a ui:// resource; there the data comes from the session tools,
// called through the host over the MCP Apps postMessage bridge (assets/bridge.js).
//
// Imports: viewer uses memory and transcript, never mcp-go or mcpserver (mcpserver imports
// viewer for AppHTML).
package viewer
