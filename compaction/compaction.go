package compaction

// API CONTRACT (written by the lead before implementation; the compaction owner implements it
// and may add to it, but must not change these exported names or their meaning without telling
// the lead, because memory/ and mcpserver/ are being written against it at the same time).
//
// compaction never imports memory: it sees messages as JSON in the contract's block form
// (../shared/CONTRACT.md, "Message shape"), read with gjson, e.g.
//   {"role":"assistant","content":[{"type":"text","text":"…"},{"type":"tool_call","id":"c1","name":"read","arguments":{"path":"a.go"}}],"usage":{"input_tokens":1200,"output_tokens":80}}
//   {"role":"tool_result","content":[{"type":"tool_result",…the call's id…,"content":[{"type":"text","text":"…"}],"is_error":false}]}

import (
	"context"
	"errors"
	"net/http"
)

// Defaults from the contract and ../shared/reference/COMPACTION.md.
const (
	DefaultKeepRecentTokens = 20000
	// ReserveTokens is the most should_compact keeps free below the window (or a quarter of
	// the window, whichever is smaller).
	ReserveTokens = 16384
	// ToolResultChars bounds each tool result in the text given to a summarizer.
	ToolResultChars = 2000
	// ImageTokens is the fixed estimate of one image block.
	ImageTokens = 1200
	// SummaryMaxTokens caps a summary's output: 0.8 × ReserveTokens, as pi does.
	SummaryMaxTokens = ReserveTokens * 8 / 10
	// TurnPrefixMaxTokens caps a split turn's prefix summary: 0.5 × ReserveTokens.
	TurnPrefixMaxTokens = ReserveTokens / 2
)

// Kind of an entry on the path being compacted.
type Kind string

// Entry kinds compaction distinguishes.
const (
	KindMessage       Kind = "message"
	KindCompaction    Kind = "compaction"
	KindBranchSummary Kind = "branch_summary"
	KindOther         Kind = "other" // labels, renames, model changes: never cut points, zero tokens
)

// Entry is one entry of a session path (root to leaf order), as compaction needs it.
type Entry struct {
	ID      string // entry id
	Kind    Kind
	Message []byte // KindMessage: the message JSON (contract block form)
	Summary string // KindCompaction / KindBranchSummary: the summary text
}

// Cut is where a compaction splits a path.
type Cut struct {
	// FirstKept is the index in the path of the first entry kept verbatim; len(path) when
	// nothing is kept. Never a tool_result message.
	FirstKept int
	// TurnStart is the index of the user message that starts the turn FirstKept falls in, when
	// the cut splits a turn (SplitTurn); entries [TurnStart, FirstKept) are summarized as the
	// turn prefix, entries [Start, TurnStart) as history. When the turn is not split,
	// TurnStart == FirstKept, so [Start, TurnStart) is always the history.
	TurnStart int
	SplitTurn bool
	// Start is the index of the first entry to summarize: just after the previous compaction's
	// kept boundary (its first kept entry), or 0.
	Start int
}

// Request is everything a summarizer gets. A request with a TurnPrefix and no History asks for
// the split-turn layout (Run sends the prefix half of a split turn that way); with both, the
// two form one conversation (the agent's single-call flow).
type Request struct {
	History         []Entry // entries to fold into the summary (may be empty)
	TurnPrefix      []Entry // early part of a split turn (may be empty)
	PreviousSummary string  // previous compaction's summary text without the file and ledger blocks, "" if none
	Instructions    string  // optional "additional focus" from the user
	ReadFiles       []string
	ModifiedFiles   []string
	MaxInputTokens  int // 0: no cap; otherwise the serialized input is trimmed (oldest first) to fit
	// Ledger is the durable-facts ledger the compaction will store, this request's facts
	// included (see UpdateLedger); nil when the caller keeps none. Prompts show it to the model
	// and ask it not to repeat it; the extractive summarizer leaves out what it holds.
	Ledger *Ledger
	// MaxSummaryTokens caps the summary text (0: SummaryMaxTokens): the prose budget left by
	// the file lists and the ledger (ProseBudget). Prompts state it and ask a model for no
	// more; callers still cut longer answers with FitProse.
	MaxSummaryTokens int
}

// Summarizer writes a summary. Implementations must honour ctx cancellation.
type Summarizer interface {
	// Name is "agent", "sampling", "llm" or "extractive".
	Name() string
	// Summarize returns the summary text (without file tags; the caller appends them).
	Summarize(ctx context.Context, req Request) (string, error)
}

// SummarizerFunc adapts a function (e.g. MCP sampling in mcpserver) to Summarizer.
type SummarizerFunc struct {
	N string
	F func(ctx context.Context, req Request) (string, error)
}

// Name implements Summarizer.
func (f SummarizerFunc) Name() string { return f.N }

// Summarize implements Summarizer.
func (f SummarizerFunc) Summarize(ctx context.Context, req Request) (string, error) {
	return f.F(ctx, req)
}

// Errors of the summarizers. Callers compare with errors.Is.
var (
	// ErrNotConfigured is returned when a summarizer is selected but not available.
	ErrNotConfigured = errors.New("summarizer not configured")
	// ErrModelResponse is returned when a model endpoint answers with an error status or
	// without a usable summary (no choices, empty text).
	ErrModelResponse = errors.New("summarizer model gave no usable answer")
)

// Prompt is a rendered summarization request for a model: what the agent (two-step flow),
// sampling and llm summarizers all send.
type Prompt struct {
	System string // system prompt
	User   string // user message: conversation, previous summary, instructions, template
	// Conversation is the serialized conversation as embedded in User (after any trimming).
	Conversation string
	// MaxTokens is the output cap to ask the model for: SummaryMaxTokens, or
	// TurnPrefixMaxTokens for a turn-prefix-only request.
	MaxTokens int
}

// LLMConfig configures an OpenAI-compatible chat-completions endpoint.
type LLMConfig struct {
	URL             string // e.g. https://api.openai.com/v1/chat/completions
	Model           string
	APIKey          string // from the environment, never a flag
	MaxInputTokens  int    // cap on the prompt; default 100000
	MaxOutputTokens int    // default 13107 (0.8 × ReserveTokens)
	// HTTPClient may be nil (a client with a DefaultLLMTimeout timeout is used).
	HTTPClient *http.Client
}

// Extractive is the summarizer that needs no model: a deterministic summary in the template's
// sections built from the messages.
type Extractive struct{}
