package memory

import (
	"time"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/message"
)

// The message of the contract is package message's; these names keep memory's API whole.
type (
	// Role is who produced a message (message.Role).
	Role = message.Role
	// Message is one conversation message (message.Message).
	Message = message.Message
	// Block is one content block (message.Block).
	Block = message.Block
	// Usage is the token usage of an assistant turn (message.Usage).
	Usage = message.Usage
	// InputError is a message a client sent that cannot be stored (message.InputError).
	InputError = message.InputError
)

// Message roles and block types of the contract (package message).
const (
	RoleSystem     = message.RoleSystem
	RoleUser       = message.RoleUser
	RoleAssistant  = message.RoleAssistant
	RoleToolResult = message.RoleToolResult

	BlockText       = message.BlockText
	BlockThinking   = message.BlockThinking
	BlockToolCall   = message.BlockToolCall
	BlockToolResult = message.BlockToolResult
	BlockImage      = message.BlockImage
)

// DecodeInputMessage decodes one message object as a client sent it (message.DecodeInput).
func DecodeInputMessage(raw []byte) (Message, error) { return message.DecodeInput(raw) }

// Entry kinds stored in a session log.
const (
	KindMessage       = "message"
	KindCompaction    = "compaction"
	KindBranchSummary = "branch_summary"
	KindLabel         = "label"
	KindSessionInfo   = "session_info"
	KindModelChange   = "model_change"
)

// Entry is one node of a session's tree, stored as one record. Exactly one of the payload
// pointers is set, matching Type.
type Entry struct {
	Type     string    `json:"type"`
	ID       string    `json:"id" gate:"id"`
	ParentID string    `json:"parent_id,omitempty" gate:"id"`
	Time     time.Time `json:"ts"`

	Message       *Message       `json:"message,omitempty"`
	Compaction    *Compaction    `json:"compaction,omitempty"`
	BranchSummary *BranchSummary `json:"branch_summary,omitempty"`
	Label         *Label         `json:"label,omitempty"`
	SessionInfo   *SessionInfo   `json:"session_info,omitempty"`
	ModelChange   *ModelChange   `json:"model_change,omitempty"`
}

// Compaction replaces the path before FirstKeptID with Summary.
type Compaction struct {
	// Summary is the summary text followed by the <read-files>/<modified-files> blocks.
	Summary       string   `json:"summary"`
	FirstKeptID   string   `json:"first_kept_id" gate:"id"`
	TokensBefore  int      `json:"tokens_before"`
	TokensAfter   int      `json:"tokens_after"`
	ReadFiles     []string `json:"read_files"`
	ModifiedFiles []string `json:"modified_files"`
	// Summarizer names who wrote the summary: agent, sampling, llm, extractive or import.
	Summarizer string `json:"summarizer"`
	// Facts is the durable-facts ledger, cumulative over the session's compactions; its blocks
	// end Summary. Nil for compactions stored before it existed and for imported ones.
	Facts *compaction.Ledger `json:"facts,omitempty"`
	// Key is an imported compaction's idempotency key, so importing it again adds nothing.
	Key string `json:"key,omitempty" gate:"id"`
}

// BranchSummary summarizes an abandoned branch when the leaf moves back in the tree.
type BranchSummary struct {
	FromID  string `json:"from_id" gate:"id"`
	Summary string `json:"summary"`
}

// Label names (or, when empty, un-names) an entry.
type Label struct {
	TargetID string `json:"target_id" gate:"id"`
	Label    string `json:"label"`
}

// SessionInfo renames the session.
type SessionInfo struct {
	Name string `json:"name"`
}

// ModelChange records a switch of model or provider.
type ModelChange struct {
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
}

// Session is a session's metadata as tools report it.
type Session struct {
	ID              string    `json:"session_id"`
	Name            string    `json:"name"`
	WorkingDir      string    `json:"working_dir"`
	Model           string    `json:"model"`
	Provider        string    `json:"provider,omitempty"`
	ParentSessionID string    `json:"parent_session_id,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	MessageCount    int       `json:"message_count"`
	Compactions     int       `json:"compactions"`
	ContextTokens   int       `json:"context_tokens"`
	Preview         string    `json:"preview"`
}
