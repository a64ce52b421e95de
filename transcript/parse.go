package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// Format names a transcript format.
type Format string

// Supported formats. FormatAuto asks ParseFile and Importer to call Detect.
const (
	FormatAuto       Format = ""
	FormatClaudeCode Format = "claude-code"
	FormatCodex      Format = "codex"
	FormatPi         Format = "pi"
	FormatSessionmem Format = "sessionmem"
)

// Formats lists the concrete formats in the order Detect tries them.
var Formats = []Format{FormatSessionmem, FormatPi, FormatCodex, FormatClaudeCode}

// ParseFormat turns a user-supplied name into a Format; "" and "auto" mean FormatAuto.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return FormatAuto, nil
	case "claude-code", "claude", "cc":
		return FormatClaudeCode, nil
	case "codex":
		return FormatCodex, nil
	case "pi":
		return FormatPi, nil
	case "sessionmem":
		return FormatSessionmem, nil
	}
	return FormatAuto, fmt.Errorf("format %q: %w", s, ErrUnknownFormat)
}

// Sentinel errors of the package.
var (
	// ErrUnknownFormat is returned when a file's format cannot be recognized or a format name
	// is not one of Formats; pass the format explicitly or check the file.
	ErrUnknownFormat = errors.New("unknown transcript format (use claude-code, codex, pi or sessionmem)")
	// ErrUnsupportedVersion is returned for a sessionmem export written by a newer version.
	ErrUnsupportedVersion = errors.New("unsupported export version (upgrade sessionmem)")
)

// MaxLineBytes is the longest line a reader accepts; longer lines are skipped and counted as
// unparsable. Real transcripts hold lines of a few hundred KB (large tool outputs).
const MaxLineBytes = 32 << 20

// maxLine is MaxLineBytes, lowered by tests.
var maxLine = MaxLineBytes

// Stats says what a parse read and what it did with it. Counts of messages and blocks are of
// what went into the ImportRequest.
type Stats struct {
	Lines       int // lines read (blank lines included)
	Messages    int // messages produced
	UserPrompts int // user-role messages produced
	ToolCalls   int // tool_call blocks produced
	ToolResults int // tool_result blocks produced
	Compactions int // compaction summaries produced
	// Skipped counts lines of known types that are left out on purpose (progress,
	// snapshots, meta and sidechain lines, injected context, encrypted reasoning, events).
	Skipped int
	// Unparsable counts lines that were not JSON objects or exceeded MaxLineBytes.
	Unparsable int
	// Recognized counts the lines the reader took for lines of its format (whatever it then
	// did with them): none among many is how a file of another format shows.
	Recognized int
	// Empty counts messages dropped because nothing importable was left in them.
	Empty int
	// Unknown counts line (or item) types the reader does not know, by type.
	Unknown map[string]int
	// UnknownBlocks counts content block types the reader does not know, by type.
	UnknownBlocks map[string]int
	// HeldBack is true when a trailing, possibly still growing message was left for the next
	// parse (ParseOptions.HoldOpenTail).
	HeldBack bool
	// Restarted is true when the checkpoint no longer matched the file (it was rewritten or
	// truncated) and the parse started over from the beginning.
	Restarted bool
	// Next is where the next incremental parse of the same file starts.
	Next Checkpoint

	unknownLines int // lines counted in Unknown
}

// Foreign counts the lines that were neither blank nor recognized: unparsable, or of a type
// the reader does not know.
func (s *Stats) Foreign() int { return s.Unparsable + s.unknownLines }

func (s *Stats) unknown(t string) {
	s.unknownLines++
	if s.Unknown == nil {
		s.Unknown = map[string]int{}
	}
	if t == "" {
		t = "(none)"
	}
	s.Unknown[t]++
}

func (s *Stats) unknownBlock(t string) {
	if s.UnknownBlocks == nil {
		s.UnknownBlocks = map[string]int{}
	}
	s.UnknownBlocks[t]++
}

// Checkpoint is where a parse of a file stopped, with the little state a reader needs to go on
// from there as if it had read the file from the start. The zero Checkpoint means "from the
// beginning". It is JSON so Importer can keep it on disk.
type Checkpoint struct {
	Offset int64 `json:"offset"` // bytes consumed
	Line   int   `json:"line"`   // lines consumed
	// PartialEnd means the last consumed line had no newline yet; a lone newline that follows
	// finishes it rather than starting a new line.
	PartialEnd bool `json:"partial_end,omitempty"`
	// HeadLen and HeadHash fingerprint the file's first bytes, so a rewritten file is noticed.
	HeadLen  int    `json:"head_len,omitempty"`
	HeadHash string `json:"head_hash,omitempty" gate:"id"`

	Format     Format    `json:"format,omitempty"`
	SessionID  string    `json:"session_id,omitempty" gate:"id"`
	WorkingDir string    `json:"working_dir,omitempty"`
	Name       string    `json:"name,omitempty"`
	Model      string    `json:"model,omitempty"`
	Provider   string    `json:"provider,omitempty"`
	Created    time.Time `json:"created,omitzero"`
	Version    int       `json:"version,omitempty"` // pi format version
	// OpenMessageID is the Claude Code message.id of the assistant message that ended the
	// last parse; more lines of it may follow (see the Claude Code reader).
	// Import state is stored through memory's gate (Service.Gate): an id holding a secret
	// would be kept as a stand-in, which no message id of Claude Code's (msg_…) is.
	OpenMessageID string `json:"open_message_id,omitempty" gate:"id"`
}

// ParseOptions tune a parse.
type ParseOptions struct {
	// Start resumes a previous parse (Stats.Next of it). Its fingerprint is checked against
	// the file; on a mismatch the parse starts over.
	Start Checkpoint
	// HoldOpenTail leaves a trailing Claude Code assistant message (and the tool results
	// answering it) out when more blocks of it may still be written, so the next parse reads
	// it whole. Watch sets it while a file is still changing.
	HoldOpenTail bool
	// IncludeSidechains imports Claude Code sidechain (Task agent) lines too.
	IncludeSidechains bool
	// Path is the source's path, used to derive a session id when the file names none.
	Path string
}

// headLen is how many leading bytes fingerprint a file.
const headLen = 4096

// ParseFile reads a whole transcript file. FormatAuto detects the format.
func ParseFile(path string, format Format) (memory.ImportRequest, Stats, error) {
	return ParseFileWith(path, format, ParseOptions{})
}

// ParseFileWith reads a transcript file from opts.Start on.
func ParseFileWith(path string, format Format, opts ParseOptions) (memory.ImportRequest, Stats, error) {
	if format == FormatAuto {
		f, err := Detect(path)
		if err != nil {
			return memory.ImportRequest{}, Stats{}, err
		}
		format = f
	}
	f, err := os.Open(path)
	if err != nil {
		return memory.ImportRequest{}, Stats{}, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return memory.ImportRequest{}, Stats{}, fmt.Errorf("stat transcript %s: %w", path, err)
	}
	if opts.Path == "" {
		opts.Path = path
	}
	head := make([]byte, headLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return memory.ImportRequest{}, Stats{}, fmt.Errorf("read transcript %s: %w", path, err)
	}
	head = head[:n]
	restarted := false
	start := opts.Start
	if start.Offset > 0 {
		ok := start.Format == format && start.Offset <= fi.Size() && start.HeadLen <= len(head) &&
			start.HeadHash == hashHex(head[:start.HeadLen])
		if !ok {
			start = Checkpoint{}
			restarted = true
		}
	}
	if _, err := f.Seek(start.Offset, io.SeekStart); err != nil {
		return memory.ImportRequest{}, Stats{}, fmt.Errorf("seek transcript %s: %w", path, err)
	}
	opts.Start = start
	req, st, err := Parse(f, format, opts)
	if err != nil {
		return req, st, fmt.Errorf("parse %s: %w", path, err)
	}
	st.Restarted = restarted
	hl := int(min(int64(len(head)), st.Next.Offset))
	st.Next.HeadLen, st.Next.HeadHash = hl, hashHex(head[:hl])
	return req, st, nil
}

// Parse reads a transcript from r, which must be positioned at opts.Start.Offset.
func Parse(r io.Reader, format Format, opts ParseOptions) (memory.ImportRequest, Stats, error) {
	var h lineHandler
	switch format {
	case FormatClaudeCode:
		h = &claudeReader{opts: opts}
	case FormatCodex:
		h = &codexReader{}
	case FormatPi:
		h = &piReader{}
	case FormatSessionmem:
		h = &nativeReader{}
	default:
		return memory.ImportRequest{}, Stats{}, fmt.Errorf("format %q: %w", format, ErrUnknownFormat)
	}
	p := &parser{cp: opts.Start, opts: opts}
	p.cp.Format = format
	p.st.Next = p.cp
	h.begin(p)
	lr := newLineReader(r, opts.Start.Offset)
	for {
		line, term, tooLong, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return memory.ImportRequest{}, p.st, fmt.Errorf("read line %d: %w", p.cp.Line+1, err)
		}
		trimmed := bytes.TrimSpace(line)
		if !term && (tooLong || !json.Valid(trimmed)) {
			// A torn last line: the writer is still at it. Leave it for the next parse.
			break
		}
		if p.cp.PartialEnd && len(trimmed) == 0 && term {
			// The newline that completes a line the previous parse already took.
			p.cp.PartialEnd = false
			p.cp.Offset = lr.off
			continue
		}
		idx := p.cp.Line
		p.prev = p.cp
		p.cp.Line++
		p.cp.Offset = lr.off
		p.cp.PartialEnd = !term
		p.st.Lines++
		switch {
		case tooLong:
			p.st.Unparsable++
			continue
		case len(trimmed) == 0:
			continue
		case trimmed[0] != '{':
			// Readers count the objects they cannot decode themselves; validating here as
			// well would cost a third pass over every line.
			p.st.Unparsable++
			continue
		}
		foreign := p.st.Foreign()
		if err := h.line(p, idx, trimmed); err != nil {
			return memory.ImportRequest{}, p.st, fmt.Errorf("line %d: %w", idx+1, err)
		}
		if p.st.Foreign() == foreign {
			p.st.Recognized++
		}
	}
	h.end(p)
	p.st.Next = p.cp
	p.st.Next.Format = format
	p.finishRequest()
	return p.req, p.st, nil
}

// lineHandler is one format's reader.
type lineHandler interface {
	begin(p *parser)
	line(p *parser, idx int, b []byte) error
	end(p *parser)
}

// parser is the state shared by all readers.
type parser struct {
	opts ParseOptions
	cp   Checkpoint // request-level facts live here, so they survive in Stats.Next
	prev Checkpoint // cp before the current line
	st   Stats
	req  memory.ImportRequest
}

// add appends an item and counts it.
func (p *parser) add(it memory.ImportItem) {
	if it.Message == nil {
		it.Summary = summaryText(it.Summary)
		if it.Summary == "" {
			return
		}
		p.st.Compactions++
		p.req.Items = append(p.req.Items, it)
		return
	}
	m := it.Message
	if len(m.Content) == 0 {
		p.st.Empty++
		return
	}
	p.st.Messages++
	if m.Role == memory.RoleUser {
		p.st.UserPrompts++
	}
	for _, b := range m.Content {
		switch b.Type {
		case memory.BlockToolCall:
			p.st.ToolCalls++
		case memory.BlockToolResult:
			p.st.ToolResults++
		}
	}
	p.req.Items = append(p.req.Items, it)
}

func (p *parser) setCreated(t time.Time) {
	if p.cp.Created.IsZero() && !t.IsZero() {
		p.cp.Created = t
	}
}

func (p *parser) setWorkingDir(d string) {
	if p.cp.WorkingDir == "" && d != "" {
		p.cp.WorkingDir = d
	}
}

func (p *parser) setSessionID(prefix, id string) {
	if p.cp.SessionID == "" && id != "" {
		p.cp.SessionID = sessionID(prefix, id)
	}
}

// finishRequest copies the request-level facts into the request.
func (p *parser) finishRequest() {
	if p.cp.SessionID == "" && p.opts.Path != "" {
		p.cp.SessionID = sessionIDFromPath(p.cp.Format, p.opts.Path)
		p.st.Next.SessionID = p.cp.SessionID
	}
	p.req.SessionID = p.cp.SessionID
	p.req.WorkingDir = p.cp.WorkingDir
	p.req.Name = p.cp.Name
	p.req.Model = p.cp.Model
	p.req.Provider = p.cp.Provider
	p.req.Created = p.cp.Created
	// The next parse must know these even though it will not see the lines that set them.
	n := &p.st.Next
	n.SessionID, n.WorkingDir, n.Name, n.Model, n.Provider, n.Created, n.Version =
		p.cp.SessionID, p.cp.WorkingDir, p.cp.Name, p.cp.Model, p.cp.Provider, p.cp.Created, p.cp.Version
}
