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
	"github.com/sessionmem/sessionmem/storage"
)

// Import stores a foreign transcript in the session req.SessionID, creating it with that id if
// it does not exist. Messages whose id is already stored, and summaries whose key is, are
// skipped, so importing the same transcript again adds nothing and importing a grown one adds
// only the new part. Everything is validated before anything is written.
func (s *Service) Import(ctx context.Context, req ImportRequest) (ImportResult, error) {
	if err := checkSessionID("session_id", req.SessionID); err != nil {
		return ImportResult{}, err
	}
	if err := checkWorkingDir(req.WorkingDir); err != nil {
		return ImportResult{}, err
	}
	if err := checkMeta(req.Name, req.Model, req.Provider); err != nil {
		return ImportResult{}, err
	}
	for i := range req.Items {
		it := &req.Items[i]
		switch {
		case it.Message != nil && it.Summary != "":
			return ImportResult{}, invalidf("give each item either a message or a summary", "items[%d] has both", i)
		case it.Message != nil:
			if err := validateMessage(it.Message); err != nil {
				return ImportResult{}, invalidf(err.Hint, "items[%d]: %s", i, err.Msg)
			}
		case it.Summary == "":
			return ImportResult{}, invalidf("give each item a message or a summary", "items[%d] is empty", i)
		}
	}
	res := ImportResult{SessionID: req.SessionID}
	if _, err := s.store.Get(ctx, req.SessionID); err != nil {
		if !isNotFound(err) {
			return ImportResult{}, mapStoreErr(req.SessionID, err)
		}
		if req.WorkingDir == "" {
			return ImportResult{}, invalidf("pass the transcript's working directory", "working_dir is required to create session %s", req.SessionID)
		}
		created := req.Created
		if created.IsZero() {
			created = s.now()
		}
		h := storage.Header{ID: req.SessionID, Created: created, WorkingDir: req.WorkingDir}
		err := s.create(ctx, h, storage.Meta{ID: req.SessionID, WorkingDir: req.WorkingDir, Created: created, Updated: created})
		if err != nil && !isExists(err) {
			return ImportResult{}, mapStoreErr(req.SessionID, fmt.Errorf("create session %s: %w", req.SessionID, err))
		}
		res.Created = err == nil
	}
	err := s.update(ctx, req.SessionID, func(w storage.Writer) error {
		st, err := s.current(req.SessionID, w)
		if err != nil {
			return err
		}
		defer st.mu.Unlock()
		last := st.updated
		b := newBatch(st, st.leaf, s.now())
		// The state holds what went through the gate: compare with what the gate makes of
		// the request (ids become their stand-ins, names are redacted).
		salt := gateSalt(st.header)
		dir := s.redact(req.WorkingDir)
		name, model, provider := s.redact(req.Name), s.redact(req.Model), s.redact(req.Provider)
		if name != "" && name != st.name {
			b.add(Entry{Type: KindSessionInfo, SessionInfo: &SessionInfo{Name: name}, Time: req.Created})
		}
		if (model != "" && model != st.model) || (provider != "" && provider != st.provider) {
			b.add(Entry{Type: KindModelChange, ModelChange: &ModelChange{Model: model, Provider: provider}, Time: req.Created})
		}
		pinned := st.pinnedCost
		var files fileops.Sets
		if hasSummary(req.Items) {
			// An imported summary's file lists cover the whole session before it, including
			// what earlier imports stored.
			if files, err = s.storedFiles(w, st, dir); err != nil {
				return err
			}
		}
		for _, it := range req.Items {
			if it.Time.After(last) {
				last = it.Time
			}
			e := Entry{Time: it.Time}
			eid := s.gateID(salt, it.EntryID)
			if eid != "" && validID(eid) && !st.has(eid) && !b.taken[eid] {
				e.ID = eid
			}
			if it.Message != nil {
				if it.Message.ID != "" {
					cid := s.gateID(salt, it.Message.ID)
					if _, dup := st.client[cid]; dup || b.taken["client:"+cid] {
						continue
					}
					b.taken["client:"+cid] = true
				}
				m, err := s.gateMessage(salt, *it.Message)
				if err != nil {
					return err
				}
				files.Add(s.files.Message(mustJSON(m), dir)...)
				e.Type, e.Message = KindMessage, &m
				b.add(e)
				res.Added++
				if m.Pinned {
					// The pinned cap holds for imports too: the first pins that fit stay pinned,
					// the rest are stored unpinned and counted.
					raw, err := marshalNoEscape(m)
					if err != nil {
						return err
					}
					if c := pinCost(raw, b.entries[len(b.entries)-1].ID); pinned+c <= MaxPinnedTokens {
						pinned += c
					} else {
						m.Pinned = false
						res.Unpinned++
					}
				}
				continue
			}
			text := summaryText(s.redact(it.Summary))
			// A summary is the same one again when its entry id (kept from an export or a
			// foreign transcript) or its key is already stored.
			if eid != "" && (st.has(eid) || b.taken[eid]) {
				continue
			}
			key := s.gateID(salt, it.Key)
			if key == "" && it.EntryID == "" {
				sum := sha256.Sum256([]byte(text))
				key = "import-" + hex.EncodeToString(sum[:8])
			}
			if key != "" {
				if _, dup := st.client[key]; dup || b.taken["client:"+key] {
					continue
				}
				b.taken["client:"+key] = true
			}
			read, modified := it.ReadFiles, it.ModifiedFiles
			if len(read) == 0 && len(modified) == 0 {
				read, modified = files.Lists()
			} else {
				files.AddLists(read, modified)
			}
			kept := s.gateID(salt, it.FirstKeptID)
			if kept != "" && !st.has(kept) && !b.taken[kept] {
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
			b.add(e)
			res.Added++
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
