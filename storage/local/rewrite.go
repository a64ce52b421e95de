package local

import (
	"bytes"
	"context"
	"fmt"

	"github.com/sessionmem/sessionmem/storage"
)

var _ storage.Rewriter = (*Store)(nil)

// Rewrite implements storage.Rewriter: under the session's write lock it builds a new .zst
// beside the old one (the header frame, then the records in the frames they were in, the
// tail's lines as one more frame), fsyncs it, renames it over the old file and fsyncs the
// directory; then it empties the tail, whose lines the new file holds. A crash before the
// rename leaves the old session (and a temp file that is never read); after it, the new
// one, whose sealed seqs make recovery drop the tail's stale lines. Old bytes are not kept:
// the old file is unlinked by the rename.
func (s *Store) Rewrite(ctx context.Context, id string, fn storage.RewriteFunc) (bool, error) {
	if err := s.enter(); err != nil {
		return false, err
	}
	defer s.leave()
	var plan rewritePlan
	err := s.update(ctx, id, func(w *Writer) error {
		var err error
		if plan, err = planRewrite(w, fn); err != nil || !plan.changed {
			return err
		}
		file, err := s.encodeRewrite(w, plan)
		if err != nil {
			return err
		}
		return s.replaceSessionFile(w, file)
	})
	if err != nil || !plan.changed {
		return false, err
	}
	if s.search != nil {
		s.search.rewritten(id) // the old text's terms go; the syncer indexes the new text
	}
	// A fresh open reads the new file; its index line replaces the old metadata.
	err = s.update(ctx, id, func(w *Writer) error {
		w.putIndex(plan.meta, true)
		return nil
	})
	return true, err
}

// rewritePlan is what a RewriteFunc made of a session: the header to keep, every record's
// line as it will be stored (seq first, as AppendRecord writes it), the metadata afterwards,
// and whether any of it differs from what is stored.
type rewritePlan struct {
	header  storage.Header
	recs    []storage.Record // as stored, for their seq and kind
	lines   [][]byte
	meta    storage.Meta
	changed bool
}

// planRewrite reads every record of the session w holds, runs fn on them and encodes what
// it returns. The header's identity (id, version, creation, nonce) is kept whatever fn says.
func planRewrite(w *Writer, fn storage.RewriteFunc) (rewritePlan, error) {
	id, h := w.id, w.Header()
	var p rewritePlan
	for rec, err := range w.Records(1) {
		if err != nil {
			return p, err
		}
		line := bytes.Clone(rec.Data)
		rec.Data = line
		p.recs = append(p.recs, rec)
		p.lines = append(p.lines, line)
	}
	nh, data, m, err := fn(h, p.recs)
	if err != nil {
		return p, err
	}
	if len(data) != len(p.recs) {
		return p, fmt.Errorf("rewrite session %s: %d records returned for %d", id, len(data), len(p.recs))
	}
	nh.ID, nh.Version, nh.Created, nh.Nonce = h.ID, h.Version, h.Created, h.Nonce
	p.header, p.meta, p.changed = nh, m, nh != h
	for i, d := range data {
		if d == nil {
			continue
		}
		line, _, err := storage.AppendRecord(nil, storage.Record{Kind: p.recs[i].Kind, Data: d}, p.recs[i].Seq)
		if err != nil {
			return p, fmt.Errorf("rewrite session %s: record %d: %w", id, p.recs[i].Seq, err)
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		if !bytes.Equal(line, p.lines[i]) {
			p.lines[i], p.changed = line, true
		}
	}
	return p, nil
}

// encodeRewrite builds the new .zst: the header frame, then the records in the frames they
// were in (each compaction starts one), the tail's lines as one more frame.
func (s *Store) encodeRewrite(w *Writer, p rewritePlan) ([]byte, error) {
	id := w.id
	file, err := encodeHeaderFrame(p.header)
	if err != nil {
		return nil, fmt.Errorf("rewrite session %s: %w", id, err)
	}
	groups := make([]int, 0, len(w.v.frames)+1)
	for _, f := range w.v.frames {
		groups = append(groups, int(f.count))
	}
	if n := len(w.v.lines); n > 0 {
		groups = append(groups, n)
	}
	next := 0
	for _, n := range groups {
		var content []byte
		for _, l := range p.lines[next : next+n] {
			content = append(append(content, l...), '\n')
		}
		rec, _, err := s.encodeRecord(content, n, p.recs[next].Seq)
		if err != nil {
			return nil, fmt.Errorf("rewrite session %s: %w", id, err)
		}
		file = append(file, rec...)
		next += n
	}
	if next != len(p.lines) {
		return nil, fmt.Errorf("rewrite session %s: frames hold %d records, the session %d", id, next, len(p.lines))
	}
	return file, nil
}

// replaceSessionFile puts file in place of the session's .zst, durably, and empties the tail
// whose lines it holds.
func (s *Store) replaceSessionFile(w *Writer, file []byte) error {
	id := w.id
	// From here the cached view no longer describes the files: the next open re-reads.
	w.poison()
	// The snapshot holds strings of the old records (ids, names, a preview): it goes
	// first, so that no crash leaves it beside the new file.
	if err := s.removeSnapshot(id); err != nil {
		return fmt.Errorf("rewrite session %s: %w", id, err)
	}
	// Nothing reads the old file now: closed first, because a file system without POSIX
	// rename semantics (Windows' FAT, older Windows) refuses to replace an open file.
	w.zst.Close()
	w.zst = nil
	if err := writeFileAtomic(s.fs, s.sessDir, id+zstSuffix, file, durableName); err != nil {
		return fmt.Errorf("rewrite session %s: %w", id, err)
	}
	if w.tail != nil {
		// Its lines are stale now (dropped on read), but appends will write over them:
		// the truncation must be durable first, as a seal's is (emptyTail).
		if err := w.tail.Truncate(w.v.tailHdrLen); err == nil {
			if err := w.tail.Sync(); err != nil {
				s.log.Warn("storage: could not sync the emptied tail", "session", id, "err", err)
			}
		}
	}
	s.sealer.sealed(id) // the tail is empty: nothing left for the sealer
	return nil
}

// CompactMeta implements storage.Rewriter: it rewrites index.jsonl with one line per live
// session, dropping every older line (a rename's previous name among them).
func (s *Store) CompactMeta(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := s.compactMeta(); err != nil {
		return err
	}
	if s.search != nil {
		// The redaction this ends must leave nothing of the old text in the search index
		// either: wait for it to be replaced (see searchIdx.rewritten).
		s.search.waitReset(ctx)
	}
	return nil
}

func (s *Store) compactMeta() error {
	return s.idx.exclusive(s.idx.rewriteLocked)
}
