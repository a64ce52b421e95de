package memory

// Request and result types carry the contract's snake_case JSON names so mcpserver can use them
// for schemas and structured output directly.

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/fileops"
)

// Options configure a Service.
type Options struct {
	Logger *slog.Logger
	// NoSnapshots keeps the Service from reading and writing state snapshots (see
	// snapshot.go) even when the store keeps them: every cold session is built from its log.
	NoSnapshots bool
	// LLM is the configured llm summarizer (nil when not configured).
	LLM compaction.Summarizer
	// FileMapping adds tool names to file tracking.
	FileMapping fileops.Mapping
	// Redact rewrites text before it reaches disk (secret redaction); nil keeps text as is.
	Redact func(string) string
	// Now and NewID are injectable for tests; nil means the real clock and random ids.
	Now   func() time.Time
	NewID func() string
}

// SaveRequest is session_save's input.
type SaveRequest struct {
	SessionID     string    `json:"session_id,omitempty"`
	WorkingDir    string    `json:"working_dir,omitempty"`
	Name          string    `json:"name,omitempty"`
	Model         string    `json:"model,omitempty"`
	Provider      string    `json:"provider,omitempty"`
	ParentID      string    `json:"parent_id,omitempty"`
	Messages      []Message `json:"messages"`
	ContextWindow int       `json:"context_window,omitempty"`
}

// SaveResult is session_save's output.
type SaveResult struct {
	SessionID     string `json:"session_id"`
	Saved         int    `json:"saved"`
	MessageCount  int    `json:"message_count"`
	LeafID        string `json:"leaf_id"`
	ContextTokens int    `json:"context_tokens"`
	ShouldCompact bool   `json:"should_compact"`
	// WorkingDir is the session's working directory: the one it was created with. A
	// working_dir given with session_id does not move a session to another project.
	WorkingDir string `json:"working_dir"`
	// OtherWorkingDir is set when the request gave a working_dir other than WorkingDir, so
	// that the answer can say it was not applied.
	OtherWorkingDir bool `json:"-"`
}

// ListRequest is session_list's input.
type ListRequest struct {
	WorkingDir string `json:"working_dir,omitempty"`
	Query      string `json:"query,omitempty"`
	Limit      int    `json:"limit,omitempty"`
	Cursor     string `json:"cursor,omitempty"`
}

// ListResult is session_list's output.
type ListResult struct {
	Sessions   []Session `json:"sessions"`
	NextCursor string    `json:"next_cursor"`
}

// ResumeRequest is session_resume's input.
type ResumeRequest struct {
	SessionID  string `json:"session_id,omitempty"`
	WorkingDir string `json:"working_dir,omitempty"`
	MaxTokens  int    `json:"max_tokens,omitempty"`
	Cursor     string `json:"cursor,omitempty"`
	Prune      bool   `json:"prune,omitempty"`
	// Raw asks for the messages as JSON in ResumeResult.RawMessages instead of decoded in
	// Messages: the stored bytes with entry_id added, exactly what encoding the decoded
	// messages would give, without decoding and encoding every message again (mcpserver
	// sets it; not part of the input).
	Raw bool `json:"-"`
}

// ResumeResult is session_resume's output.
type ResumeResult struct {
	SessionID  string `json:"session_id"`
	WorkingDir string `json:"working_dir"`
	// Summary is the latest compaction's summary, "" if none; it and the file lists are on
	// every page (cut to at most half of a page to fit max_tokens).
	Summary       string   `json:"summary"`
	ReadFiles     []string `json:"read_files"`
	ModifiedFiles []string `json:"modified_files"`
	// Facts is the latest compaction's durable-facts ledger (the shape session_compact
	// returns), on the first page of a session compacted with one; omitted otherwise.
	Facts *compaction.Ledger `json:"facts,omitempty"`
	// Pinned are the pinned messages before the latest compaction's kept part, oldest first,
	// verbatim: on the first page only; [] otherwise and when there are none.
	Pinned        []Message `json:"pinned"`
	Messages      []Message `json:"messages"`
	ContextTokens int       `json:"context_tokens"`
	NextCursor    string    `json:"next_cursor"`
	// RawMessages replaces Messages when the request set Raw: each message's JSON encoding,
	// its non-ASCII characters escaped (message.AppendASCII). They are views into RawPage.
	RawMessages []json.RawMessage `json:"-"`
	// RawPage, with Raw, is the page's JSON as far as its messages: `{"messages":[` and the
	// messages, comma-separated. The caller ends it with `]`, the page's other fields and `}`
	// (appending to it: it has room for them, so that a page of megabytes is built in one
	// buffer and never copied).
	RawPage []byte `json:"-"`
	// Chars is the length in characters of this result's JSON encoding as Resume measured it
	// (not part of the output).
	Chars int `json:"-"`
	// Ahead, set when there is a next page, starts building that page in the background, so
	// that the call asking for it finds it built if the session has not changed since
	// (resume_prefetch.go). Call it once this page has reached the client, which asks for the
	// next one only after taking in this one: started earlier, the building competes with
	// sending this page for the machine's cores. Not calling it builds nothing ahead.
	Ahead func() `json:"-"`
}

// CompactRequest is session_compact's input.
type CompactRequest struct {
	SessionID        string `json:"session_id"`
	Summary          string `json:"summary,omitempty"`
	CompactionID     string `json:"compaction_id,omitempty"`
	KeepRecentTokens int    `json:"keep_recent_tokens,omitempty"`
	Instructions     string `json:"instructions,omitempty"`
	Summarizer       string `json:"summarizer,omitempty"`

	// Sampler is MCP sampling for this request, nil when the client cannot sample. Set by
	// mcpserver, not by the client.
	Sampler compaction.Summarizer `json:"-"`
	// Progress, when set, is told how far a long compaction got.
	Progress func(done, total float64, message string) `json:"-"`
}

// Compaction statuses.
const (
	StatusNeedsSummary     = "needs_summary"
	StatusCompacted        = "compacted"
	StatusNothingToCompact = "nothing_to_compact"
)

// CompactResult is session_compact's output; which fields are set depends on Status.
type CompactResult struct {
	Status string `json:"status"`
	// needs_summary
	CompactionID    string `json:"compaction_id,omitempty"`
	Prompt          string `json:"prompt,omitempty"`
	Conversation    string `json:"conversation,omitempty"`
	PreviousSummary string `json:"previous_summary,omitempty"`
	// compacted
	Summary      string `json:"summary,omitempty"`
	TokensBefore int    `json:"tokens_before,omitempty"`
	TokensAfter  int    `json:"tokens_after,omitempty"`
	FirstKeptID  string `json:"first_kept_id,omitempty"`
	Summarizer   string `json:"summarizer,omitempty"`
	// needs_summary and compacted
	ReadFiles     []string `json:"read_files,omitempty"`
	ModifiedFiles []string `json:"modified_files,omitempty"`
	// Facts is the durable-facts ledger the compaction stores (needs_summary: will store).
	Facts *compaction.Ledger `json:"facts,omitempty"`
	// nothing_to_compact
	ContextTokens int `json:"context_tokens,omitempty"`
}

// ForkRequest is session_fork's input.
type ForkRequest struct {
	SessionID string `json:"session_id"`
	FromID    string `json:"from_id,omitempty"`
	Name      string `json:"name,omitempty"`
}

// ForkResult is session_fork's output.
type ForkResult struct {
	SessionID       string `json:"session_id"`
	ParentSessionID string `json:"parent_session_id"`
	MessageCount    int    `json:"message_count"`
}

// DeleteResult is session_delete's output.
type DeleteResult struct {
	Deleted bool `json:"deleted"`
}

// Transcript is a whole session for people and exports: metadata, the latest summary and file
// lists, and every message on the current path (compacted ones included), oldest first.
type Transcript struct {
	Session       Session   `json:"session"`
	Summary       string    `json:"summary"`
	ReadFiles     []string  `json:"read_files"`
	ModifiedFiles []string  `json:"modified_files"`
	Messages      []Message `json:"messages"`
	// Entries is the current path in order: every message and every compaction, with times,
	// for exports that must round-trip.
	Entries []TranscriptEntry `json:"entries"`
}

// TranscriptEntry is one message or compaction of a Transcript's path.
type TranscriptEntry struct {
	EntryID    string      `json:"entry_id"`
	Time       time.Time   `json:"ts"`
	Message    *Message    `json:"message,omitempty"`
	Compaction *Compaction `json:"compaction,omitempty"`
}

// ImportItem is one item of a foreign transcript: a message, or a compaction summary the other
// agent wrote. A summary is stored as a compaction entry (summarizer "import" unless
// Summarizer says otherwise) that keeps the entries from FirstKeptID on, or nothing when
// FirstKeptID is empty.
type ImportItem struct {
	Message *Message
	Summary string // set for a compaction; Message nil
	Time    time.Time
	// EntryID keeps the entry id a sessionmem export carried (ignored if taken or invalid).
	EntryID string
	// For summaries: what a sessionmem export carried. Empty file lists are worked out from
	// the tool calls imported before the summary.
	FirstKeptID   string
	ReadFiles     []string
	ModifiedFiles []string
	Summarizer    string
	// Key is the summary's idempotency key; empty means a hash of the summary text as stored
	// (redacted, file tags removed).
	Key string
	// TokensBefore and TokensAfter restore what a sessionmem export carried.
	TokensBefore, TokensAfter int
}

// ImportRequest brings a foreign transcript into the session SessionID (created with that id if
// missing). Items whose Message.ID is already stored are skipped, so re-importing is a no-op.
type ImportRequest struct {
	SessionID  string
	WorkingDir string
	Name       string
	Model      string
	Provider   string
	Created    time.Time
	Items      []ImportItem
}

// ImportResult says what an import added.
type ImportResult struct {
	SessionID string
	Created   bool
	Added     int
	// Unpinned counts pinned messages stored unpinned because the session's pinned messages
	// would otherwise exceed MaxPinnedTokens (the first that fit stay pinned).
	Unpinned int
}
