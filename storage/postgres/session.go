package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessionmem/sessionmem/storage"
)

var errReaderDone = errors.New("storage: Reader or Writer used after its View or Update returned")

// pageRows is how many chunks one read fetches; the rows are read completely before any
// record is yielded, so the caller may use the connection (append) between records.
const pageRows = 32

// reader is a storage.Reader over one session. A View's reader reads through the pool, one
// statement per page (each sees a consistent snapshot, and a seal replaces chunks by chunks
// holding the same records in one transaction, so pages fit together); an Update's reads
// through its transaction.
type reader struct {
	s    *Store
	ctx  context.Context
	q    dbtx
	sid  int64
	hdr  storage.Header
	last uint64 // records after it are not seen (a View's snapshot; a writer's own last)
	done bool
	err  error // a writer's failed statement: the transaction is lost
}

// sessionRow is what View and Update read of the session row.
const sessionRow = `SELECT sid, format, nonce, created_ns, working_dir, parent_session, last_seq, sealed_seq, tail_bytes
	FROM sessionmem_sessions WHERE id = $1`

type rowState struct {
	sid          int64
	hdr          storage.Header
	last, sealed uint64
	tailBytes    int64
}

func (s *Store) readSession(ctx context.Context, q dbtx, id, suffix string) (rowState, error) {
	var (
		r                  rowState
		format             int16
		created, last, sld int64
	)
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	err := q.QueryRow(sctx, sessionRow+suffix, id).Scan(&r.sid, &format, &r.hdr.Nonce, &created, &r.hdr.WorkingDir,
		&r.hdr.ParentSession, &last, &sld, &r.tailBytes)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFound(id)
	}
	if err != nil {
		return r, err
	}
	if int(format) > FormatVersion {
		return r, fmt.Errorf("session %s has format version %d, this build reads up to %d; upgrade sessionmem: %w",
			id, format, FormatVersion, storage.ErrNewerFormat)
	}
	r.hdr.Version, r.hdr.ID, r.hdr.Created = int(format), id, fromNanos(created)
	r.last, r.sealed = uint64(last), uint64(sld)
	return r, nil
}

// View reads the session row and runs fn; records are read page by page as fn iterates, and
// none appended after the row was read is seen. No connection is held while fn runs between
// reads.
func (s *Store) View(ctx context.Context, id string, fn func(r storage.Reader) error) error {
	if err := checkID(id); err != nil {
		return err
	}
	done, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer done()
	row, err := s.readSession(ctx, s.pool, id, "")
	if err != nil {
		return s.wrap(ctx, "read session "+id, err)
	}
	r := &reader{s: s, ctx: ctx, q: s.pool, sid: row.sid, hdr: row.hdr, last: row.last}
	defer func() { r.done = true }()
	return fn(r)
}

func (r *reader) ID() string             { return r.hdr.ID }
func (r *reader) Header() storage.Header { return r.hdr }
func (r *reader) LastSeq() uint64        { return r.last }

// Records yields the records from seq from, decoding only the chunks that hold them: the
// first page starts at the chunk holding from (an index seek on (sid, first_seq)).
func (r *reader) Records(from uint64) iter.Seq2[storage.Record, error] {
	return func(yield func(storage.Record, error) bool) {
		if r.done {
			yield(storage.Record{}, errReaderDone)
			return
		}
		if r.err != nil {
			yield(storage.Record{}, r.err)
			return
		}
		next := max(from, 1)
		last := r.last
		var buf []byte
		for next <= last {
			page, err := r.page(next, last)
			if err != nil {
				yield(storage.Record{}, err)
				return
			}
			if len(page) == 0 || page[0].first > next {
				yield(storage.Record{}, r.missing(next))
				return
			}
			for i := range page {
				c := &page[i]
				if c.first > next {
					yield(storage.Record{}, r.missing(next))
					return
				}
				buf, err = c.decode(r.hdr.ID, buf)
				content := buf
				if err != nil {
					yield(storage.Record{}, err)
					return
				}
				seq := c.first
				for len(content) > 0 && seq <= last {
					nl := indexNL(content)
					line := content[:nl]
					content = content[nl+1:]
					if seq >= next {
						if !yield(storage.Record{Seq: seq, Kind: storage.RecordKind(line), Data: line}, nil) {
							return
						}
						if r.done {
							return
						}
					}
					seq++
				}
				next = max(next, min(c.last, last)+1)
				if next > last {
					return
				}
			}
		}
	}
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return len(b)
}

// page reads up to pageRows chunks from the one holding next, none starting after last.
func (r *reader) page(next, last uint64) ([]chunk, error) {
	ctx, cancel := r.s.stmtCtx(r.ctx)
	defer cancel()
	rows, err := r.q.Query(ctx, `SELECT first_seq, last_seq, raw_bytes, sealed, data FROM sessionmem_chunks
		WHERE sid = $1 AND first_seq <= $3 AND first_seq >= coalesce(
			(SELECT max(first_seq) FROM sessionmem_chunks WHERE sid = $1 AND first_seq <= $2), 1)
		ORDER BY first_seq LIMIT $4`, r.sid, int64(next), int64(last), pageRows)
	if err != nil {
		return nil, r.fail(r.s.wrap(r.ctx, "read session "+r.hdr.ID, err))
	}
	defer rows.Close()
	var out []chunk
	for rows.Next() {
		var c chunk
		var first, lastSeq int64
		if err := rows.Scan(&first, &lastSeq, &c.raw, &c.sealed, &c.data); err != nil {
			return nil, r.fail(r.s.wrap(r.ctx, "read session "+r.hdr.ID, err))
		}
		c.first, c.last = uint64(first), uint64(lastSeq)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, r.fail(r.s.wrap(r.ctx, "read session "+r.hdr.ID, err))
	}
	return out, nil
}

// fail records a failed statement of a writer: its transaction is aborted, so the Update
// must roll back. A View's reader just returns the error.
func (r *reader) fail(err error) error {
	if _, ok := r.q.(pgx.Tx); ok && r.err == nil {
		r.err = err
	}
	return err
}

// missing explains a record that should be there and is not: the session was deleted (and
// perhaps created again) while a View read it, or the chunks are damaged.
func (r *reader) missing(seq uint64) error {
	ctx, cancel := r.s.stmtCtx(r.ctx)
	defer cancel()
	var n int
	err := r.q.QueryRow(ctx, "SELECT count(*) FROM sessionmem_sessions WHERE sid = $1", r.sid).Scan(&n)
	if err == nil && n == 0 {
		return fmt.Errorf("session %s was deleted while being read: %w", r.hdr.ID, storage.ErrNotFound)
	}
	return fmt.Errorf("session %s: record %d is missing: %w", r.hdr.ID, seq, storage.ErrCorrupt)
}

// Update runs fn in one transaction holding the session row's lock (SELECT ... FOR UPDATE), so
// writers on every server queue on it and sequence numbers are assigned under it; COMMIT
// makes everything fn appended durable at once. If fn or a statement fails, the transaction
// rolls back and nothing of it is stored.
func (s *Store) Update(ctx context.Context, id string, fn func(w storage.Writer) error) error {
	if err := checkID(id); err != nil {
		return err
	}
	done, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer done()
	for attempt := 0; ; attempt++ {
		err, retry := s.update(ctx, id, fn)
		if retry && attempt == 0 && ctx.Err() == nil {
			// The pooled connection was dead (the database restarted since it was last
			// used) and nothing was sent: try once more on a fresh one.
			continue
		}
		return err
	}
}

// update is one attempt of Update. retry reports a failure before fn ran that happened
// before anything reached the server.
func (s *Store) update(ctx context.Context, id string, fn func(w storage.Writer) error) (err error, retry bool) {
	tx, err := s.begin(ctx)
	if err != nil {
		return s.wrap(ctx, "lock session "+id, err), pgconn.SafeToRetry(err)
	}
	committed := false
	defer func() {
		if !committed {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.stmt)
			_ = tx.Rollback(rctx)
			cancel()
		}
	}()
	row, err := s.readSession(ctx, tx, id, " FOR UPDATE")
	if err != nil {
		return s.wrap(ctx, "lock session "+id, err), pgconn.SafeToRetry(err)
	}
	w := &writer{reader: reader{s: s, ctx: ctx, q: tx, sid: row.sid, hdr: row.hdr, last: row.last},
		sealed: row.sealed, tailBytes: row.tailBytes}
	ferr := fn(w)
	w.done = true
	if ferr != nil {
		return ferr, false
	}
	if w.err != nil {
		return w.err, false
	}
	cctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return s.wrap(ctx, "commit to session "+id, err), false
	}
	committed = true
	return nil, false
}

func (s *Store) begin(ctx context.Context) (pgx.Tx, error) {
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	return s.pool.Begin(sctx)
}
