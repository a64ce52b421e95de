// Package prompts holds the text sessionmem gives to summarizing models: the summarizer's
// system prompt and the user-message templates for a first summary, an update of an earlier
// summary, and the prefix of a split turn, plus the note (Facts) that shows a model the facts the
// server records itself and the summary's size limit. The templates are embedded Markdown files
// (templates/*.md), rendered by pure functions, and listed by All so that mcpserver can offer
// them as MCP prompts and compaction can build its requests from the same text.
//
// prompts imports nothing of sessionmem; compaction and mcpserver import it.
//
// Concurrency: everything here is immutable after package initialisation; all functions and
// Template values are safe for concurrent use.
package prompts
