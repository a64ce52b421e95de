package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
)

var (
	_ storage.Rewriter = (*Store)(nil)
	_ storage.Settings = (*Store)(nil)
)

// Rewrite implements storage.Rewriter in one transaction holding the session's row lock, as
// an Update: it reads every record, re-encodes each chunk whose records changed (same
// boundaries and levels, so barriers still start chunks), rewrites the header's working
// directory and parent, the listing metadata, and every search document of the session
// (deleted and built again from the new records, when the store has Options.Docs; otherwise
// deleted, and the backfill of a store with Docs builds them). A crash or failure leaves the
// old session whole.
//
// PostgreSQL's MVCC keeps the replaced rows (chunks, documents, the session row with its old
// name and preview) as dead tuples until VACUUM, and even then their bytes stay in the data
// files until the space is reused; WAL segments, archives and backups keep them as long as
// those are kept. See the package doc ("Rewriting").
func (s *Store) Rewrite(ctx context.Context, id string, fn storage.RewriteFunc) (bool, error) {
	changed := false
	err := s.updateLock(ctx, id, lockRewrite, func(sw storage.Writer) error {
		w := sw.(*writer)
		h := w.Header()
		var recs []storage.Record
		var lines [][]byte
		for rec, err := range w.Records(1) {
			if err != nil {
				return err
			}
			rec.Data = bytes.Clone(rec.Data)
			recs = append(recs, rec)
			lines = append(lines, rec.Data)
		}
		nh, data, m, err := fn(h, recs)
		if err != nil {
			return err
		}
		if len(data) != len(recs) {
			return fmt.Errorf("rewrite session %s: %d records returned for %d", id, len(data), len(recs))
		}
		nh.ID, nh.Version, nh.Created, nh.Nonce = h.ID, h.Version, h.Created, h.Nonce
		changed = nh != h
		dirty := make([]bool, len(recs))
		for i, d := range data {
			if d == nil {
				continue
			}
			line, _, err := storage.AppendRecord(nil, storage.Record{Kind: recs[i].Kind, Data: d}, recs[i].Seq)
			if err != nil {
				return fmt.Errorf("rewrite session %s: record %d: %w", id, recs[i].Seq, err)
			}
			line = bytes.TrimSuffix(line, []byte{'\n'})
			if !bytes.Equal(line, lines[i]) {
				lines[i], dirty[i], changed = line, true, true
				recs[i].Data = line
			}
		}
		if !changed {
			return nil
		}
		if err := w.rewriteChunks(lines, dirty); err != nil {
			return err
		}
		// docs_gen + 1: documents queued from the old records (docqueue.go) or built by a
		// backfill that read them are no longer written.
		w.pending.Queue(`UPDATE sessionmem_sessions SET working_dir = $2, dir_key = $3, parent_session = $4,
			docs_gen = docs_gen + 1 WHERE sid = $1`,
			w.sid, nh.WorkingDir, dirKey(nh.WorkingDir), nh.ParentSession)
		w.hdr.WorkingDir, w.hdr.ParentSession = nh.WorkingDir, nh.ParentSession
		w.pending.Queue(`DELETE FROM sessionmem_documents WHERE sid = $1`, w.sid)
		w.docsThrough = 0
		if s.opts.Docs != nil {
			s.queueDocs(w.pending, w.sid, w.hdr, recs)
			w.docsThrough = w.last
		}
		// The metadata, the layout (l0_bytes changed) and docs_through, as an empty Append.
		_, err = w.Append(nil, m)
		return err
	})
	if err != nil {
		return false, err
	}
	return changed, nil
}

// rewriteChunks queues the re-encoding of every chunk holding a dirty record, with the same
// boundaries and level, and sets the layout's l0Bytes to the new size of the level-0 chunks.
func (w *writer) rewriteChunks(lines [][]byte, dirty []bool) error {
	if err := w.flush(); err != nil {
		return err
	}
	ctx, cancel := w.s.stmtCtx(w.ctx)
	defer cancel()
	rows, err := w.q.Query(ctx, `SELECT first_seq, last_seq, level FROM sessionmem_chunks WHERE sid = $1 ORDER BY first_seq`, w.sid)
	if err != nil {
		return w.fail(w.s.wrap(w.ctx, "rewrite session "+w.hdr.ID, err))
	}
	type span struct {
		first, last int64
		level       int16
	}
	spans, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (span, error) {
		var sp span
		return sp, r.Scan(&sp.first, &sp.last, &sp.level)
	})
	if err != nil {
		return w.fail(w.s.wrap(w.ctx, "rewrite session "+w.hdr.ID, err))
	}
	var l0 int64
	for _, sp := range spans {
		if sp.first < 1 || sp.last > int64(len(lines)) || sp.first > sp.last {
			return fmt.Errorf("session %s: chunk %d-%d outside records 1-%d: %w", w.hdr.ID, sp.first, sp.last, len(lines), storage.ErrCorrupt)
		}
		var content []byte
		touched := false
		for i := sp.first - 1; i < sp.last; i++ {
			content = append(append(content, lines[i]...), '\n')
			touched = touched || dirty[i]
		}
		if sp.level == level0 {
			l0 += int64(len(content))
		}
		if touched {
			w.pending.Queue(`UPDATE sessionmem_chunks SET raw_bytes = $3, data = $4 WHERE sid = $1 AND first_seq = $2`,
				w.sid, sp.first, int64(len(content)), compress(content, int(sp.level)))
		}
	}
	w.lay.l0Bytes = l0
	return nil
}

// CompactMeta implements storage.Rewriter. PostgreSQL keeps no superseded copy of the
// metadata beside the current row that a statement could drop: the old row versions are
// dead tuples, which only VACUUM reclaims (see Rewrite). It does nothing.
func (s *Store) CompactMeta(ctx context.Context) error {
	done, err := s.start(ctx)
	if err != nil {
		return err
	}
	done()
	return nil
}

// GetSetting implements storage.Settings (the sessionmem_settings table).
func (s *Store) GetSetting(ctx context.Context, key string) (string, bool, error) {
	done, err := s.start(ctx)
	if err != nil {
		return "", false, err
	}
	defer done()
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	var v string
	err = s.db().QueryRow(sctx, `SELECT value FROM sessionmem_settings WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.wrap(ctx, "read setting "+key, err)
	}
	return v, true, nil
}

// PutSetting implements storage.Settings.
func (s *Store) PutSetting(ctx context.Context, key, value string) error {
	done, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer done()
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	_, err = s.db().Exec(sctx, `INSERT INTO sessionmem_settings (key, value, updated_ns) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_ns = excluded.updated_ns`, key, value, s.now().UnixNano())
	return s.wrap(ctx, "write setting "+key, err)
}
