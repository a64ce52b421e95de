// Package transcript brings other coding agents' transcripts into sessionmem and writes
// sessionmem sessions back out as plain JSONL.
//
// It owns four readers: Claude Code project transcripts (~/.claude/projects/*/*.jsonl), Codex
// CLI rollouts (~/.codex/sessions/**/rollout-*.jsonl), pi sessions (format versions 1 to 3,
// ~/.pi/agent/sessions) and sessionmem's own export format (see Export). Each turns a file into
// a memory.ImportRequest. Readers stream the file line by line; a line that does not parse, is
// too long or has a type they do not know is skipped and counted in Stats, never fatal. Every
// imported message carries a deterministic id (Message.ID) derived from the source, so
// importing the same file twice stores nothing new.
//
// Importer adds incremental import: it remembers, per source file, the byte offset (and the
// little parser state) already imported, in one small JSON file per source under StateDir,
// written atomically, so a poll of a growing transcript parses only the new part. Watch polls
// files for growth. The state passes memory's redaction gate before it is written (it keeps a
// transcript's path, name, model and working directory); RedactState re-applies it to state
// files an older version wrote.
//
// Imports: transcript uses memory, internal/jsonscan (to find tool arguments nested deeper
// than a message may be), the standard library and gjson. It never imports
// mcp-go, mcpserver, storage or cmd; the command line wires it up.
//
// Concurrency: the parse functions are pure and safe to call concurrently. An Importer is safe
// for concurrent use; imports of one source file are serialized within the process and, on
// Unix, across processes by an advisory lock on the source's state file. Message ids make a
// race that slips through harmless.
package transcript
