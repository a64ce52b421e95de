package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/fileops"
	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/storage"
)

// Import stores a foreign transcript in the session req.SessionID, creating it with that id if
// it does not exist. Messages whose id is already stored, and summaries whose key is, are
// skipped, so importing the same transcript again adds nothing and importing a grown one adds
// only the new part. Everything is validated before anything is written.
func (s *Service) Import(ctx context.Context, req ImportRequest) (ImportResult, error) {
	if err := validateImport(req); err != nil {
		return ImportResult{}, err
	}
	res := ImportResult{SessionID: req.SessionID}
	created, err := s.createForImport(ctx, req)
	if err != nil {
		return ImportResult{}, err
	}
	res.Created = created
	err = s.update(ctx, req.SessionID, func(w storage.Writer) error {
		st, err := s.current(req.SessionID, w)
		if err != nil {
			return err
		}
		defer st.mu.Unlock()
		last := st.updated
		b := newBatch(st, st.leaf, s.now())
		s.addMetaChanges(b, req.Name, req.Model, req.Provider, req.Created)
		im := importer{s: s, st: st, b: b, res: &res, salt: gateSalt(st.header), dir: s.redact(req.WorkingDir), pinned: st.pinnedCost}
		if hasSummary(req.Items) {
			// An imported summary's file lists cover the whole session before it, including
			// what earlier imports stored.
			if im.files, err = s.storedFiles(w, st, im.dir); err != nil {
				return err
			}
		}
		for _, it := range req.Items {
			if it.Time.After(last) {
				last = it.Time
			}
			if it.Message != nil {
				err = im.message(it)
			} else {
				im.summary(it)
			}
			if err != nil {
				return err
			}
		}
		if last.IsZero() {
			last = s.now()
		}
		return s.commit(w, st, b, last)
	})
	if err != nil {
		return ImportResult{}, mapStoreErr(req.SessionID, err)
	}
	return res, nil
}

// validateImport checks an import request whole, as Save checks a save.
func validateImport(req ImportRequest) error {
	if err := checkSessionID("session_id", req.SessionID); err != nil {
		return err
	}
	if err := checkWorkingDir(req.WorkingDir); err != nil {
		return err
	}
	if err := checkMeta(req.Name, req.Model, req.Provider); err != nil {
		return err
	}
	for i := range req.Items {
		it := &req.Items[i]
		switch {
		case it.Message != nil && it.Summary != "":
			return invalidf("give each item either a message or a summary", "items[%d] has both", i)
		case it.Message != nil:
			if err := validateMessage(it.Message); err != nil {
				return invalidf(err.Hint, "items[%d]: %s", i, err.Msg)
			}
		case it.Summary == "":
			return invalidf("give each item a message or a summary", "items[%d] is empty", i)
		}
	}
	return nil
}

// createForImport creates the session an import names unless it exists, and reports whether
// it did.
func (s *Service) createForImport(ctx context.Context, req ImportRequest) (bool, error) {
	_, err := s.store.Get(ctx, req.SessionID)
	switch {
	case err == nil:
		return false, nil
	case !isNotFound(err):
		return false, mapStoreErr(req.SessionID, err)
	case req.WorkingDir == "":
		return false, invalidf("pass the transcript's working directory", "working_dir is required to create session %s", req.SessionID)
	}
	created := req.Created
	if created.IsZero() {
		created = s.now()
	}
	h := storage.Header{ID: req.SessionID, Created: created, WorkingDir: req.WorkingDir}
	err = s.create(ctx, h, storage.Meta{ID: req.SessionID, WorkingDir: req.WorkingDir, Created: created, Updated: created})
	if err != nil && !isExists(err) {
		return false, mapStoreErr(req.SessionID, fmt.Errorf("create session %s: %w", req.SessionID, err))
	}
	return err == nil, nil
}

// importer adds an import's items to a batch. The state holds what went through the gate:
// it compares with what the gate makes of the request (ids become their stand-ins, names are
// redacted).
type importer struct {
	s      *Service
	st     *state
	b      *batch
	res    *ImportResult
	salt   string
	dir    string       // the working directory, redacted
	files  fileops.Sets // the session's files so far, for summaries without their own lists
	pinned int          // the pinned messages' tokens so far
}

// entry returns the entry an item starts: its time, and the entry id it came with when that
// is free.
func (im *importer) entry(it ImportItem) (Entry, string) {
	e := Entry{Time: it.Time}
	eid := im.s.gateID(im.salt, it.EntryID)
	if eid != "" && validID(eid) && !im.st.has(eid) && !im.b.taken[eid] {
		e.ID = eid
	}
	return e, eid
}

// message adds an item's message unless its id is already stored.
func (im *importer) message(it ImportItem) error {
	e, _ := im.entry(it)
	if it.Message.ID != "" && !im.b.claimClient(im.s.gateID(im.salt, it.Message.ID)) {
		return nil
	}
	m, err := im.s.gateMessage(im.salt, *it.Message)
	if err != nil {
		return err
	}
	im.files.Add(im.s.files.Message(mustJSON(m), im.dir)...)
	e.Type, e.Message = KindMessage, &m
	im.b.add(e)
	im.res.Added++
	if !m.Pinned {
		return nil
	}
	// The pinned cap holds for imports too: the first pins that fit stay pinned, the rest
	// are stored unpinned and counted.
	raw, err := message.MarshalNoEscape(m)
	if err != nil {
		return err
	}
	if c := pinCost(raw, im.b.entries[len(im.b.entries)-1].ID); im.pinned+c <= MaxPinnedTokens {
		im.pinned += c
	} else {
		m.Pinned = false
		im.res.Unpinned++
	}
	return nil
}

// summary adds an item's summary as a compaction unless it is already stored: the same entry
// id (kept from an export or a foreign transcript) or the same key.
func (im *importer) summary(it ImportItem) {
	s := im.s
	e, eid := im.entry(it)
	text := summaryText(s.redact(it.Summary))
	if eid != "" && (im.st.has(eid) || im.b.taken[eid]) {
		return
	}
	key := s.gateID(im.salt, it.Key)
	if key == "" && it.EntryID == "" {
		sum := sha256.Sum256([]byte(text))
		key = "import-" + hex.EncodeToString(sum[:8])
	}
	if key != "" && !im.b.claimClient(key) {
		return
	}
	read, modified := it.ReadFiles, it.ModifiedFiles
	if len(read) == 0 && len(modified) == 0 {
		read, modified = im.files.Lists()
	} else {
		im.files.AddLists(read, modified)
	}
	kept := s.gateID(im.salt, it.FirstKeptID)
	if kept != "" && !im.st.has(kept) && !im.b.taken[kept] {
		kept = ""
	}
	who := it.Summarizer
	if who == "" {
		who = SummarizerImport
	}
	after := it.TokensAfter
	if after == 0 {
		after = estimateText(text)
	}
	e.Type = KindCompaction
	e.Compaction = &Compaction{Summary: fileops.AppendTags(text, read, modified), FirstKeptID: kept,
		ReadFiles: nonNil(read), ModifiedFiles: nonNil(modified), Summarizer: who, Key: key,
		TokensBefore: it.TokensBefore, TokensAfter: after}
	// A sessionmem export's summary ends with the durable-facts ledger: keep it.
	if l, ok := compaction.LedgerFromSummary(s.redact(it.Summary)); ok {
		e.Compaction.Summary = compaction.AppendLedger(e.Compaction.Summary, &l)
		e.Compaction.Facts = &l
	}
	im.b.add(e)
	im.res.Added++
}

func hasSummary(items []ImportItem) bool {
	for _, it := range items {
		if it.Summary != "" {
			return true
		}
	}
	return false
}

// storedFiles returns the cumulative file sets of what a session already holds: the newest
// compaction's lists plus the tool calls of every message from its checkpoint on (the kept
// messages and everything newer, which that compaction did not count).
func (s *Service) storedFiles(r storage.Reader, st *state, workingDir string) (fileops.Sets, error) {
	var sets fileops.Sets
	if st.lastSeq == 0 {
		return sets, nil
	}
	from := st.checkpoint
	if from == 0 {
		from = 1
	}
	var newest *Compaction
	for rec, err := range r.Records(from) {
		if err != nil {
			return sets, err
		}
		switch rec.Kind {
		case KindMessage:
			sets.Add(s.files.Message([]byte(gjson.GetBytes(rec.Data, "message").Raw), workingDir)...)
		case KindCompaction:
			e, err := decodeEntry(rec.Data)
			if err != nil {
				return sets, err
			}
			newest = e.Compaction
		}
	}
	if newest != nil {
		sets.AddLists(newest.ReadFiles, newest.ModifiedFiles)
	}
	return sets, nil
}

func isNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }
func isExists(err error) bool   { return errors.Is(err, storage.ErrExists) }

// mustJSON encodes a validated message (which cannot fail).
func mustJSON(m Message) []byte {
	b, _ := json.Marshal(m)
	return b
}
