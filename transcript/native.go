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
//	{"id":…,"entry_id":…,"role":…,"content":[block,…],"usage":…}   one line per message
//	{"type":"compaction","summary":…,"read_files":[…],"modified_files":[…],"first_kept_id":…}
//
// Message lines are the contract's message shape (block form). "id" is the client's id, or
// the entry id for messages saved without one, so importing an export twice adds nothing.
// A compaction line sits right before the first message it kept (at the end when it kept
// none). Message lines have "role" and no "type"; every other line has "type". Importing an
// export restores the session id, message ids, entry ids and compaction, so export, import
// into a fresh store and export again gives the same bytes.

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

// ExportCompaction is a compaction line of an export.
type ExportCompaction struct {
	Type          string   `json:"type"`
	Summary       string   `json:"summary"`
	ReadFiles     []string `json:"read_files"`
	ModifiedFiles []string `json:"modified_files"`
	FirstKeptID   string   `json:"first_kept_id,omitempty"`
}

// Export writes session sessionID to w in sessionmem's export format: a header line, then every
// message of the current path oldest first, with the latest compaction's summary line placed
// before the first message it kept.
//
// Messages without a client id are written with their entry id as "id", so importing the
// export twice stores nothing new. Only the latest compaction is written, because
// memory.Transcript reports only that one; its summarizer is not carried (it imports as
// "import"), and message times are not either.
func Export(ctx context.Context, svc *memory.Service, sessionID string, w io.Writer) error {
	tr, err := svc.Transcript(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("export %s: %w", sessionID, err)
	}
	firstKept := ""
	if tr.Summary != "" {
		res, err := svc.Resume(ctx, memory.ResumeRequest{SessionID: sessionID, MaxTokens: 1 << 30})
		if err != nil {
			return fmt.Errorf("export %s: find the compaction: %w", sessionID, err)
		}
		if len(res.Messages) > 0 {
			firstKept = res.Messages[0].EntryID
		}
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
	comp := ExportCompaction{Type: "compaction", Summary: tr.Summary, ReadFiles: nonNil(tr.ReadFiles),
		ModifiedFiles: nonNil(tr.ModifiedFiles), FirstKeptID: firstKept}
	placed := tr.Summary == ""
	for _, m := range tr.Messages {
		if !placed && m.EntryID == firstKept {
			if err := enc.Encode(comp); err != nil {
				return fmt.Errorf("export %s: write compaction: %w", sessionID, err)
			}
			placed = true
		}
		if m.ID == "" {
			m.ID = m.EntryID
		}
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("export %s: write message %s: %w", sessionID, m.ID, err)
		}
	}
	if !placed {
		// The compaction kept nothing: it comes after every message.
		if err := enc.Encode(comp); err != nil {
			return fmt.Errorf("export %s: write compaction: %w", sessionID, err)
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
			FirstKeptID: c.FirstKeptID})
	case probe.Type == "" && probe.Role != "":
		var m memory.Message
		if err := json.Unmarshal(b, &m); err != nil {
			p.st.Unparsable++
			return nil
		}
		entryID := m.EntryID
		m.EntryID = ""
		if m.ID == "" {
			m.ID = "L" + strconv.Itoa(idx)
		}
		p.add(memory.ImportItem{Message: &m, EntryID: entryID})
	default:
		p.st.unknown(probe.Type)
	}
	return nil
}
