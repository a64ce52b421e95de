package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"

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
	// A writer's reader reads through its transaction: writing is set, flushFn sends the
	// writer's queued statements before a read, and err is a failed statement (the
	// transaction is lost).
	writing bool
	flushFn func() error
	err     error
}

// sessionRow is what View and Update read of the session row.
const sessionRow = `SELECT sid, format, nonce, created_ns, working_dir, parent_session, last_seq,
	l2_end, l1_end, l1_chunks, l0_bytes, open_l2, docs_through, docs_gen FROM sessionmem_sessions WHERE id = $1`

type rowState struct {
	sid  int64
	hdr  storage.Header
	last uint64
	lay  layout
	// docsThrough: every record up to it has its search documents (docs.go); docsGen: how
	// many times the session's records were rewritten (docqueue.go).
	docsThrough uint64
	docsGen     int64
}

func (s *Store) readSession(ctx context.Context, q dbtx, id, suffix string) (rowState, error) {
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	return scanSession(q.QueryRow(sctx, sessionRow+suffix, id), id)
}

// scanSession reads the columns of sessionRow.
func scanSession(row pgx.Row, id string) (rowState, error) {
	var (
		r                                            rowState
		format                                       int16
		created, last, l2End, l1End, openL2, n, docs int64
	)
	err := row.Scan(&r.sid, &format, &r.hdr.Nonce, &created, &r.hdr.WorkingDir,
		&r.hdr.ParentSession, &last, &l2End, &l1End, &n, &r.lay.l0Bytes, &openL2, &docs, &r.docsGen)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFound(id)
	}
	if err != nil {
		return r, err
	}
	if int(format) > FormatVersion {
		return r, &storage.NewerFormatError{What: "session " + id, Version: int(format), Newest: FormatVersion}
	}
	r.hdr.Version, r.hdr.ID, r.hdr.Created = int(format), id, fromNanos(created)
	r.last, r.docsThrough = uint64(last), uint64(docs)
	r.lay.last, r.lay.l2End, r.lay.l1End, r.lay.openL2, r.lay.l1Chunks = r.last, uint64(l2End), uint64(l1End), uint64(openL2), int(n)
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
	row, err := s.readSession(ctx, s.db(), id, "")
	if err != nil {
		return s.wrap(ctx, "read session "+id, err)
	}
	r := &reader{s: s, ctx: ctx, q: s.db(), sid: row.sid, hdr: row.hdr, last: row.last}
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
		if r.flushFn != nil {
			if err := r.flushFn(); err != nil {
				yield(storage.Record{}, err)
				return
			}
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
	rows, err := r.q.Query(ctx, `SELECT `+chunkColumns+` FROM sessionmem_chunks
		WHERE sid = $1 AND first_seq <= $3 AND first_seq >= coalesce(
			(SELECT max(first_seq) FROM sessionmem_chunks WHERE sid = $1 AND first_seq <= $2), 1)
		ORDER BY first_seq LIMIT $4`, r.sid, int64(next), int64(last), pageRows)
	if err != nil {
		return nil, r.fail(r.s.wrap(r.ctx, "read session "+r.hdr.ID, err))
	}
	out, err := scanChunks(rows)
	if err != nil {
		return nil, r.fail(r.s.wrap(r.ctx, "read session "+r.hdr.ID, err))
	}
	return out, nil
}

// fail records a failed statement of a writer: its transaction is aborted, so the Update
// must roll back. A View's reader just returns the error.
func (r *reader) fail(err error) error {
	if r.writing && r.err == nil {
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

// Update runs fn in one transaction holding the session row's lock (SELECT ... FOR NO KEY
// UPDATE), so writers on every server queue on it and sequence numbers are assigned under it;
// COMMIT makes everything fn appended durable at once. If fn or a statement fails, the
// transaction rolls back and nothing of it is stored.
//
// The lock is FOR NO KEY UPDATE, not FOR UPDATE: it serialises writers all the same, but does
// not wait for the FOR KEY SHARE lock that the writer of search documents holds on the row
// while it inserts them (docqueue.go), nor block it.
func (s *Store) Update(ctx context.Context, id string, fn func(w storage.Writer) error) error {
	return s.updateLock(ctx, id, lockWrite, fn)
}

// Row locks an Update takes on the session row.
const (
	lockWrite = " FOR NO KEY UPDATE"
	// lockRewrite also excludes FOR KEY SHARE: a Rewrite waits for a batch of documents
	// being written, and a batch waits for the Rewrite, then sees its docs_gen (docqueue.go).
	lockRewrite = " FOR UPDATE"
)

func (s *Store) updateLock(ctx context.Context, id, lock string, fn func(w storage.Writer) error) error {
	if err := checkID(id); err != nil {
		return err
	}
	done, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer done()
	for attempt := 0; ; attempt++ {
		err, retry := s.update(ctx, id, lock, fn)
		if retry && attempt == 0 && ctx.Err() == nil {
			// The pooled connection was dead (the database restarted since it was last
			// used) and nothing was sent: try once more on a fresh one. Not after a timeout
			// (update says so): a database that does not answer would only make the call
			// wait as long again.
			continue
		}
		return err
	}
}

// update is one attempt of Update. retry reports a failure before fn ran, which wrote
// nothing and may be tried again, other than a timeout.
//
// The transaction is driven by hand on one pooled connection so that it costs two round
// trips: BEGIN with the row lock, and the queued appends with COMMIT.
func (s *Store) update(ctx context.Context, id, lock string, fn func(w storage.Writer) error) (err error, retry bool) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return s.wrap(ctx, "lock session "+id, err), unavailable(err) && !timedOut(err)
	}
	open := true
	defer func() {
		if open {
			// Release destroys a connection left inside a transaction, so a failed ROLLBACK
			// cannot leak one; the server ends the transaction when the connection goes.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.stmt)
			_, _ = conn.Exec(rctx, "ROLLBACK")
			cancel()
		}
		conn.Release()
	}()
	sctx, cancel := s.stmtCtx(ctx)
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sessionRow+lock, id)
	br := conn.SendBatch(sctx, b)
	_, err = br.Exec()
	var row rowState
	if err == nil {
		row, err = scanSession(br.QueryRow(), id)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	cancel()
	if err != nil {
		return s.wrap(ctx, "lock session "+id, err), unavailable(err) && !timedOut(err)
	}
	w := &writer{reader: reader{s: s, ctx: ctx, q: conn, sid: row.sid, hdr: row.hdr, last: row.last, writing: true},
		lay: row.lay, docsThrough: row.docsThrough, docsGen: row.docsGen, pending: &pgx.Batch{}}
	w.flushFn = w.flush
	ferr := fn(w)
	w.done = true
	if ferr != nil {
		return ferr, false
	}
	if w.err != nil {
		return w.err, false
	}
	w.pending.Queue("COMMIT")
	if err := w.flush(); err != nil {
		return err, false
	}
	open = false
	if len(w.docRecs) > 0 {
		// Committed: its records' search documents follow shortly (docqueue.go).
		s.docs.enqueue(docBatch{sid: w.sid, id: w.hdr.ID, gen: w.docsGen, hdr: w.hdr, recs: w.docRecs})
	}
	return nil, false
}
