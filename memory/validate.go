package memory

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/storage"
)

// Limits on what one call may store. They keep one process's memory bounded and keep a single
// runaway tool output from bloating every later resume.
const (
	MaxBatchMessages = 1000
	MaxMessageBytes  = 8 << 20  // one message, JSON-encoded
	MaxBatchBytes    = 32 << 20 // one save call, JSON-encoded
	MaxNameBytes     = 512
	MaxIDBytes       = 128
	MaxQueryBytes    = 1000
	// MaxMessageDepth bounds the JSON nesting of one message (message.MaxDepth).
	MaxMessageDepth = message.MaxDepth
	// MaxArgumentsDepth is how deep a tool call's arguments may nest (message.MaxArgumentsDepth).
	MaxArgumentsDepth = message.MaxArgumentsDepth
)

// depthRule and depthHint word the nesting limit in errors.
const (
	depthRule = message.DepthRule
	depthHint = message.DepthHint
)

// validID reports whether id is a valid session, entry or client id: [A-Za-z0-9_.-]{1,128},
// never "." or "..", so ids can name files without escaping the store.
func validID(id string) bool { return storage.ValidID(id) }

func checkSessionID(field, id string) error {
	if !validID(id) {
		return invalidf("ids are 1-128 characters of A-Z a-z 0-9 _ . - (not \".\" or \"..\"); call session_list to see valid session ids",
			"%s %q is not a valid id", field, clip(id, 80))
	}
	return nil
}

func checkWorkingDir(dir string) error {
	if dir == "" {
		return nil
	}
	if !utf8.ValidString(dir) || strings.ContainsRune(dir, 0) {
		return invalidf("pass the absolute path of the project directory", "working_dir is not valid UTF-8 text")
	}
	if !path.IsAbs(dir) && !isWindowsAbs(dir) {
		return invalidf("pass the absolute path of the project directory, e.g. /home/me/project",
			"working_dir %q is not an absolute path", clip(dir, 200))
	}
	return nil
}

// sameDir reports whether two working dirs name the same directory as written: equal once
// cleaned (a trailing slash or a "." does not count), Windows paths without regard to case or
// slash direction. It does not touch the file system: a working dir need not exist here.
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	if isWindowsAbs(a) && isWindowsAbs(b) {
		return strings.EqualFold(path.Clean(strings.ReplaceAll(a, `\`, "/")), path.Clean(strings.ReplaceAll(b, `\`, "/")))
	}
	return path.Clean(a) == path.Clean(b)
}

func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') &&
		(('a' <= p[0] && p[0] <= 'z') || ('A' <= p[0] && p[0] <= 'Z'))
}

// validateMessages checks a batch, including the size limits on its JSON encoding (block
// form), which is what gets stored.
func validateMessages(msgs []Message) error {
	if len(msgs) == 0 {
		return invalidf("send at least one message in messages", "messages is empty")
	}
	if len(msgs) > MaxBatchMessages {
		return invalidf(fmt.Sprintf("split the batch into calls of at most %d messages", MaxBatchMessages),
			"messages has %d entries", len(msgs))
	}
	total := 0
	for i := range msgs {
		if err := validateMessage(&msgs[i]); err != nil {
			return invalidf(err.Hint, "messages[%d]: %s", i, err.Msg)
		}
		// Encoding a message only to measure it costs as much as storing it, so it is measured
		// exactly only when an upper bound of its size does not already settle both limits.
		n := encodedBound(&msgs[i])
		if n > MaxMessageBytes || total+n > MaxBatchBytes {
			b, err := json.Marshal(storedMessage(msgs[i]))
			if err != nil {
				return invalidf("check the message's content", "messages[%d] cannot be encoded: %v", i, err)
			}
			n = len(b)
		}
		if n > MaxMessageBytes {
			return invalidf(fmt.Sprintf("shorten it (for example truncate long tool output) to under %d MiB", MaxMessageBytes>>20),
				"messages[%d] is %d bytes", i, n)
		}
		total += n
		if total > MaxBatchBytes {
			return invalidf(fmt.Sprintf("split the batch into calls of under %d MiB", MaxBatchBytes>>20),
				"messages add up to more than %d bytes", MaxBatchBytes)
		}
	}
	return checkDuplicateIDs(msgs)
}

// checkDuplicateIDs refuses two messages of one batch with the same id and other content:
// the second would be skipped as already stored, and its content lost without a word. The
// same message twice is a retry within the batch, and is stored once.
func checkDuplicateIDs(msgs []Message) error {
	if len(msgs) < 2 {
		return nil // most saves: nothing to compare, no map
	}
	var seen map[string]int
	for i := range msgs {
		id := msgs[i].ID
		if id == "" {
			continue
		}
		if seen == nil {
			seen = make(map[string]int, len(msgs))
		}
		j, dup := seen[id]
		if !dup {
			seen[id] = i
			continue
		}
		if !reflect.DeepEqual(storedMessage(msgs[i]), storedMessage(msgs[j])) {
			return invalidf("give each message its own id (the same id is the same message: a retry stores it once)",
				"messages[%d] has the id %q of messages[%d], with other content", i, clip(id, 80), j)
		}
	}
	return nil
}

// Bounds used by encodedBound: encoding a string or a raw JSON value writes at most
// maxEscape bytes per byte (a byte escaped as \u00XX), plus its quotes; every field adds its
// name and punctuation, under fieldBytes with the names here, and a number at most 20 digits.
const (
	maxEscape  = 6
	fieldBytes = 24
)

// encodedBound is an upper bound of len(json.Marshal(storedMessage(*m))), computed without
// encoding. validateMessage has checked m (tool_call arguments are a JSON object), so
// encoding cannot fail.
func encodedBound(m *Message) int {
	n := 2 + 4*fieldBytes + maxEscape*(len(m.ID)+len(m.Role))
	if m.Usage != nil {
		n += 2 + 2*(fieldBytes+20)
	}
	return n + blocksBound(m.Content)
}

func blocksBound(blocks []Block) int {
	n := 2
	for i := range blocks {
		b := &blocks[i]
		n += 3 + 8*fieldBytes + maxEscape*(len(b.Type)+len(b.Text)+len(b.Thinking)+len(b.ID)+len(b.Name)+
			len(b.Arguments)+len(b.ToolCallID)+len(b.MediaType)+len(b.Data))
		n += blocksBound(b.Content)
	}
	return n
}

// storedMessage is the message as stored: no entry id (the entry carries it).
func storedMessage(m Message) Message {
	m.EntryID = ""
	return m
}

func validateMessage(m *Message) *Error {
	if m.ID != "" && !validID(m.ID) {
		return invalidf("use 1-128 characters of A-Z a-z 0-9 _ . - as a message id, or omit it",
			"id %q is not a valid message id", clip(m.ID, 80))
	}
	switch m.Role {
	case RoleSystem, RoleUser, RoleAssistant, RoleToolResult:
	case "":
		return invalidf(`set role to one of "system", "user", "assistant", "tool_result"`, "role is missing")
	default:
		return invalidf(`use one of "system", "user", "assistant", "tool_result"`, "unknown role %q", clip(string(m.Role), 40))
	}
	if len(m.Content) == 0 {
		return invalidf("give content as a non-empty string or a non-empty list of blocks", "content is empty")
	}
	if m.Usage != nil && (m.Usage.InputTokens < 0 || m.Usage.OutputTokens < 0) {
		return invalidf("report usage as non-negative token counts", "usage has a negative count")
	}
	if m.Usage != nil && m.Role != RoleAssistant {
		return invalidf("send usage only with assistant messages", "usage on a %s message", m.Role)
	}
	for i := range m.Content {
		if err := validateBlock(m.Role, &m.Content[i], false); err != nil {
			err.Msg = fmt.Sprintf("content[%d]: %s", i, err.Msg)
			return err
		}
	}
	return nil
}

func validateBlock(role Role, b *Block, nested bool) *Error {
	switch b.Type {
	case BlockText:
		if !utf8.ValidString(b.Text) {
			return invalidf("send text as valid UTF-8", "text is not valid UTF-8")
		}
	case BlockThinking:
		if role != RoleAssistant {
			return invalidf("thinking blocks belong to assistant messages", "thinking block in a %s message", role)
		}
	case BlockToolCall:
		if role != RoleAssistant || nested {
			return invalidf("tool_call blocks belong to assistant messages", "tool_call block in a %s message", role)
		}
		if b.ID == "" || b.Name == "" {
			return invalidf(`give tool_call blocks an "id" and a "name"`, "tool_call block lacks id or name")
		}
		if jsonscan.Deeper(b.Arguments, MaxArgumentsDepth) {
			return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("tool_call %q arguments nest deeper than %d levels of JSON (a message may nest %d levels; %s)",
				clip(b.Name, 60), MaxArgumentsDepth, MaxMessageDepth, depthRule), Hint: depthHint}
		}
		if len(b.Arguments) > 0 {
			if !isJSONObject(b.Arguments) {
				return invalidf(`pass tool_call "arguments" as a JSON object`, "tool_call %q arguments are not a JSON object", clip(b.Name, 60))
			}
		}
	case BlockToolResult:
		if nested {
			return invalidf("do not nest tool_result blocks", "tool_result block inside a tool_result")
		}
		if role != RoleToolResult && role != RoleUser {
			return invalidf("tool_result blocks belong to tool_result (or user) messages", "tool_result block in a %s message", role)
		}
		if b.ToolCallID == "" {
			return invalidf(`give tool_result blocks the "`+message.FieldToolCallID+`" of the call they answer`, "tool_result block lacks "+message.FieldToolCallID)
		}
		for i := range b.Content {
			if err := validateBlock(role, &b.Content[i], true); err != nil {
				err.Msg = fmt.Sprintf("tool_result content[%d]: %s", i, err.Msg)
				return err
			}
		}
	case BlockImage:
		if b.MediaType == "" || b.Data == "" {
			return invalidf(`give image blocks "`+message.FieldMediaType+`" and base64 "data"`, "image block lacks "+message.FieldMediaType+" or data")
		}
	case "":
		return invalidf(`set each block's "type" to text, thinking, tool_call, tool_result or image`, "block type is missing")
	default:
		return invalidf("use text, thinking, tool_call, tool_result or image", "unknown block type %q", clip(b.Type, 40))
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isJSONObject(raw []byte) bool { return message.IsJSONObject(raw) }
