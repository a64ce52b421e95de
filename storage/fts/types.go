package fts

import "time"

// Kinds of indexed entries (the contract's session_search "kind").
const (
	KindMessage = "message"
	KindSummary = "summary"
)

// Doc is what an index receives for one stored record: memory builds it from the record (a
// message, or a compaction's summary) after redaction, so the index never sees what the store
// does not keep.
type Doc struct {
	// SessionID and Seq identify the record: Seq is its sequence number in the session's log,
	// which is what an index's progress counts.
	SessionID string
	Seq       uint64
	// EntryID is the record's entry id (for a summary, the compaction's entry id).
	EntryID string
	// Kind is KindMessage or KindSummary.
	Kind string
	// Role is the message's role ("" for a summary).
	Role string
	// Time is when the record was written.
	Time time.Time
	// Text is all the searchable text of the record, joined with newlines: message text,
	// thinking, tool-call names and the string values of their arguments, tool output; or the
	// summary. Snippets are cut from the same text, rebuilt from the store.
	Text string
	// Files are the absolute, clean paths the record's tool calls read or modified.
	Files []string
}
