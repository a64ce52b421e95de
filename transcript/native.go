package transcript

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// sessionmem's export format: plain JSONL.
//
//	{"type":"sessionmem_export","version":1,"session":{"id":…,"name":…,"working_dir":…,"model":…,"provider":…,"created_at":…}}
//	{"id":…,"entry_id":…,"role":…,"content":[block,…],"usage":…,"ts":…}   one line per message
//	{"type":"compaction","entry_id":…,"ts":…,"summary":…,"first_kept_id":…,"read_files":[…],"modified_files":[…],"tokens_before":…,"tokens_after":…,"summarizer":…,"key":…}
//
// Message lines are the contract's message shape (block form) plus the entry id and time.
// "id" is the client's id, or the entry id for messages saved without one, so importing an
// export twice adds nothing. Lines follow the session's current path in order, so every
// compaction sits where it was made (after the messages it summarized, naming the first one
// it kept). Message lines have "role" and no "type"; every other line has "type". Importing an
// export restores the session id, message ids, entry ids, times and compactions, so export,
// import into a fresh store and export again gives the same bytes.

const (
	nativeHeaderType = "sessionmem_export"
	nativeVersion    = 1
)

// ExportHeader is the first line of an export.
type ExportHeader struct {
	Type    string        `json:"type"`
	Version int           `json:"version"`
	Session ExportSession `json:"session"`
}

// ExportSession is the session metadata an export carries: only what an import restores, so
// a round trip reproduces it exactly.
type ExportSession struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	WorkingDir      string    `json:"working_dir"`
	Model           string    `json:"model"`
	Provider        string    `json:"provider,omitempty"`
	ParentSessionID string    `json:"parent_session_id,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

// ExportMessage is a message line of an export.
type ExportMessage struct {
	memory.Message
	Time time.Time `json:"ts"`
}

// ExportCompaction is a compaction line of an export.
type ExportCompaction struct {
	Type          string    `json:"type"`
	EntryID       string    `json:"entry_id,omitempty"`
	Time          time.Time `json:"ts"`
	Summary       string    `json:"summary"`
	FirstKeptID   string    `json:"first_kept_id,omitempty"`
	ReadFiles     []string  `json:"read_files"`
	ModifiedFiles []string  `json:"modified_files"`
	TokensBefore  int       `json:"tokens_before,omitempty"`
	TokensAfter   int       `json:"tokens_after,omitempty"`
	Summarizer    string    `json:"summarizer,omitempty"`
	Key           string    `json:"key,omitempty"`
}

// Export writes session sessionID to w in sessionmem's export format: a header line, then every
// message and compaction of the current path, oldest first.
func Export(ctx context.Context, svc *memory.Service, sessionID string, w io.Writer) error {
	tr, err := svc.Transcript(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("export %s: %w", sessionID, err)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	s := tr.Session
	hdr := ExportHeader{Type: nativeHeaderType, Version: nativeVersion, Session: ExportSession{
		ID: s.ID, Name: s.Name, WorkingDir: s.WorkingDir, Model: s.Model, Provider: s.Provider,
		ParentSessionID: s.ParentSessionID, CreatedAt: s.CreatedAt.UTC(),
	}}
	if err := enc.Encode(hdr); err != nil {
		return fmt.Errorf("export %s: write header: %w", sessionID, err)
	}
	for _, e := range tr.Entries {
		var line any
		switch {
		case e.Message != nil:
			m := *e.Message
			m.EntryID = e.EntryID
			if m.ID == "" {
				m.ID = e.EntryID
			}
			line = ExportMessage{Message: m, Time: e.Time.UTC()}
		case e.Compaction != nil:
			c := e.Compaction
			line = ExportCompaction{Type: "compaction", EntryID: e.EntryID, Time: e.Time.UTC(), Summary: c.Summary,
				FirstKeptID: c.FirstKeptID, ReadFiles: nonNil(c.ReadFiles), ModifiedFiles: nonNil(c.ModifiedFiles),
				TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter, Summarizer: c.Summarizer, Key: c.Key}
		default:
			continue
		}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("export %s: write entry %s: %w", sessionID, e.EntryID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export %s: %w", sessionID, err)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// nativeReader reads the export format back.
type nativeReader struct{}

func (r *nativeReader) begin(p *parser) {}

func (r *nativeReader) end(p *parser) {}

func (r *nativeReader) line(p *parser, idx int, b []byte) error {
	var probe struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Version int             `json:"version"`
		Session json.RawMessage `json:"session"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		p.st.Unparsable++
		return nil
	}
	switch {
	case probe.Type == nativeHeaderType:
		if probe.Version != nativeVersion {
			return fmt.Errorf("export version %d: %w", probe.Version, ErrUnsupportedVersion)
		}
		var s ExportSession
		if err := json.Unmarshal(probe.Session, &s); err != nil {
			return fmt.Errorf("export header: %w", err)
		}
		p.setSessionID("", s.ID)
		p.setWorkingDir(s.WorkingDir)
		p.setCreated(s.CreatedAt)
		p.cp.Name, p.cp.Model, p.cp.Provider = s.Name, s.Model, s.Provider
		p.st.Skipped++
	case probe.Type == "compaction":
		var c ExportCompaction
		if err := json.Unmarshal(b, &c); err != nil {
			p.st.Unparsable++
			return nil
		}
		p.add(memory.ImportItem{Summary: c.Summary, ReadFiles: c.ReadFiles, ModifiedFiles: c.ModifiedFiles,
			FirstKeptID: c.FirstKeptID, EntryID: c.EntryID, Time: c.Time, Summarizer: c.Summarizer, Key: c.Key,
			TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter})
	case probe.Type == "" && probe.Role != "":
		var m memory.Message
		if err := json.Unmarshal(b, &m); err != nil {
			p.st.Unparsable++
			return nil
		}
		var ts struct {
			Time time.Time `json:"ts"`
		}
		_ = json.Unmarshal(b, &ts) // optional: exports made before times were carried lack it
		flattenDeepArguments(m.Content)
		entryID := m.EntryID
		m.EntryID = ""
		if m.ID == "" {
			m.ID = "L" + strconv.Itoa(idx)
		}
		p.add(memory.ImportItem{Message: &m, EntryID: entryID, Time: ts.Time})
	default:
		p.st.unknown(probe.Type)
	}
	return nil
}
