// Package fileops extracts the files a coding agent read and modified from the tool calls of
// its messages, keeps the cumulative read/modified sets across compactions, and formats and
// strips the <read-files>/<modified-files> blocks appended to compaction summaries (stripping
// also removes the ledger blocks that follow them, see LedgerTags, and CleanSummary keeps a
// summarizer from forging any of these blocks).
//
// It owns the knowledge of which tool names and arguments name files: pi (read, write, edit
// with path), Claude Code (Read, Write, Edit, MultiEdit, NotebookRead, NotebookEdit with
// file_path or notebook_path), opencode (filePath), Codex (apply_patch headers; reads by shell
// commands such as `cat f` or `sed -n 1,5p f` when unambiguous) and a user Mapping for other
// tools. Messages are read with gjson in the block form of the tool contract; whole messages
// are never decoded.
//
// Paths are normalized as slash-separated text (see Normalize): relative to the session's
// working directory when inside it, absolute otherwise.
//
// Imports: the standard library and gjson only; nothing of sessionmem.
//
// Concurrency: an Extractor may be used from several goroutines at once provided its Mapping
// is not changed meanwhile. Sets is not safe for concurrent use. The functions are pure.
package fileops
