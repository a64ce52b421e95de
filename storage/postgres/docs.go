package postgres

import (
	"context"
	"errors"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// maxTSVectorLiteral bounds the tsvector literal of one document. PostgreSQL refuses a
// tsvector whose lexemes take 1 MB or more; the lexemes are a part of the literal, so a
// literal under this bound is always accepted.
const maxTSVectorLiteral = 1_000_000

// docColumns are the columns of the documents of one or more records, as arrays for unnest.
type docColumns struct {
	seq               []int64
	n                 []int16
	entry, kind, role []string
	time              []int64
	files, terms      []string // text[] and tsvector literals
	length            []int32  // terms of the text indexed (BM25's document length)
	count             int
	textBytes         int64
}

// add appends the documents of one stored record.
func (c *docColumns) add(docs storage.DocsFunc, h storage.Header, rec storage.Record, maxText int) {
	n := int16(0)
	for _, d := range docs(h, rec) {
		if d.Kind != fts.KindMessage && d.Kind != fts.KindSummary {
			continue // not searchable as either kind
		}
		text := d.Text
		if len(text) > maxText {
			text = text[:maxText]
		}
		terms := fts.TSVector(text)
		for len(terms) > maxTSVectorLiteral {
			// Distinct terms of a giant output (hashes, minified code): index a prefix.
			text = text[:len(text)*3/4]
			terms = fts.TSVector(text)
		}
		var t int64
		if !d.Time.IsZero() {
			t = d.Time.UnixNano()
		}
		c.seq = append(c.seq, int64(rec.Seq))
		c.n = append(c.n, n)
		c.entry = append(c.entry, d.EntryID)
		c.kind = append(c.kind, d.Kind)
		c.role = append(c.role, d.Role)
		c.time = append(c.time, t)
		c.files = append(c.files, textArray(d.Files))
		c.terms = append(c.terms, terms)
		c.length = append(c.length, int32(termCount(text)))
		c.count++
		c.textBytes += int64(len(text))
		n++
	}
}

// insertDocs inserts the documents; a document already there (same record and number) is
// left as it is, records being immutable.
const insertDocs = `INSERT INTO sessionmem_documents (sid, seq, n, entry_id, kind, role, time_ns, files, terms, len)
	SELECT $1, u.seq, u.n, u.entry_id, u.kind, u.role, u.time_ns, u.files::text[], u.terms::tsvector, u.len
	FROM unnest($2::bigint[], $3::smallint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::int[])
		AS u(seq, n, entry_id, kind, role, time_ns, files, terms, len)
	ON CONFLICT DO NOTHING`

func (c *docColumns) queue(b *pgx.Batch, sid int64) {
	if c.count == 0 {
		return
	}
	b.Queue(insertDocs, sid, c.seq, c.n, c.entry, c.kind, c.role, c.time, c.files, c.terms, c.length)
}

// queueDocs queues the insertion of the documents of recs (stored records) into b.
func (s *Store) queueDocs(b *pgx.Batch, sid int64, h storage.Header, recs []storage.Record) {
	var c docColumns
	for _, rec := range recs {
		c.add(s.opts.Docs, h, rec, s.opts.MaxTextBytes)
	}
	c.queue(b, sid)
}

// termCount is the number of terms of text (fts.Terms), counted without keeping them.
func termCount(text string) int {
	buf := termBufs.Get().(*[]byte)
	var n int
	*buf, n = fts.AppendTerms((*buf)[:0], text)
	if cap(*buf) <= 1<<20 {
		termBufs.Put(buf)
	}
	return n
}

var termBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// textArray renders paths as a PostgreSQL text[] literal, cleaned as the file filter
// compares them.
func textArray(files []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range files {
		if i > 0 {
			b.WriteByte(',')
		}
		f = path.Clean(f)
		b.WriteByte('"')
		for _, r := range f {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// IndexProgress is how far the search documents are: Records of Total records have them.
type IndexProgress struct {
	// Sessions is how many sessions have records without documents.
	Sessions int64
	// Records and Total count records with documents and all records.
	Records, Total int64
}

// Done reports whether every record has its documents.
func (p IndexProgress) Done() bool { return p.Records >= p.Total }

func (p IndexProgress) reindexProgress() storage.ReindexProgress {
	return storage.ReindexProgress{PerRecord: true, Records: p.Records, TotalRecords: p.Total}
}

// IndexStats implements storage.IndexStatser: how many records have their documents (one
// scan of the sessions table, as Progress) and the size of the documents table with its
// TOAST and indexes.
func (s *Store) IndexStats(ctx context.Context) (storage.IndexStats, error) {
	p, err := s.Progress(ctx)
	if err != nil {
		return storage.IndexStats{}, err
	}
	u, err := s.Usage(ctx)
	if err != nil {
		return storage.IndexStats{}, err
	}
	return storage.IndexStats{PerRecord: true, Records: p.Records, TotalRecords: p.Total, Bytes: u.Documents}, nil
}

// Progress measures how far the search documents are (one scan of the sessions table).
func (s *Store) Progress(ctx context.Context) (IndexProgress, error) {
	done, err := s.start(ctx)
	if err != nil {
		return IndexProgress{}, err
	}
	defer done()
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	var p IndexProgress
	err = s.db().QueryRow(sctx, `SELECT count(*) FILTER (WHERE docs_through < last_seq),
		coalesce(sum(least(docs_through, last_seq)), 0)::bigint, coalesce(sum(last_seq), 0)::bigint
		FROM sessionmem_sessions`).Scan(&p.Sessions, &p.Records, &p.Total)
	if err != nil {
		return IndexProgress{}, s.wrap(ctx, "measure the search documents", err)
	}
	return p, nil
}

// backfillBatch is how many records one backfill transaction covers: the session's row lock
// is held only for the insert of their documents (built before), so a save to that session
// waits for at most that.
const backfillBatch = 500

// Reindex implements storage.Reindexer: it builds the search documents of every record that
// has none (records stored before schema version 2, or by a handle without Options.Docs), in
// batches of backfillBatch records per transaction, and calls progress after each (Records
// of TotalRecords); then it fills the length of the documents written before schema 4 and
// checks the documents' statistics (docslen.go). It can be interrupted at any time and
// resumed: each batch commits with the session's docs_through. Saves keep working meanwhile:
// a batch reads its records without a lock and holds the session's row lock only for the
// insert. Several processes may run it at once; what one did, the others skip.
func (s *Store) Reindex(ctx context.Context, progress func(storage.ReindexProgress)) error {
	if s.opts.Docs == nil {
		return errors.New("reindex: the store was opened without Options.Docs")
	}
	done, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer done()
	var report func(IndexProgress)
	if progress != nil {
		report = func(p IndexProgress) { progress(p.reindexProgress()) }
	}
	if err := s.reindex(ctx, report); err != nil {
		return err
	}
	return s.checkDocStats(ctx)
}

func (s *Store) reindex(ctx context.Context, progress func(IndexProgress)) error {
	p, err := s.Progress(ctx)
	if err != nil {
		return err
	}
	s.backfill.set(p)
	if progress != nil {
		progress(p)
	}
	var after int64
	for {
		sctx, cancel := s.stmtCtx(ctx)
		var sid int64
		var id string
		err := s.db().QueryRow(sctx, `SELECT sid, id FROM sessionmem_sessions WHERE docs_through < last_seq AND sid > $1
			ORDER BY sid LIMIT 1`, after).Scan(&sid, &id)
		cancel()
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err != nil {
			return s.wrap(ctx, "find records without search documents", err)
		}
		after = sid
		for {
			n, again, err := s.backfillSession(ctx, sid, id, backfillBatch)
			if err != nil {
				if errors.Is(err, storage.ErrNotFound) {
					break // deleted meanwhile
				}
				return err
			}
			if !again {
				break
			}
			p.Records += int64(n)
			s.backfill.set(p)
			if progress != nil {
				progress(p)
			}
		}
	}
	if err := s.fillLengthsLogged(ctx); err != nil {
		return err
	}
	if p, err = s.Progress(ctx); err != nil {
		return err
	}
	s.backfill.set(p)
	if progress != nil {
		progress(p)
	}
	return nil
}

// backfillSession builds the documents of the next batch records of a session after its
// docs_through and returns how many records it covered, and whether to call it again
// (false: the session has documents for all its records).
func (s *Store) backfillSession(ctx context.Context, sid int64, id string, batch int) (int, bool, error) {
	var from, through uint64
	var gen int64
	var cols docColumns
	err := s.View(ctx, id, func(r storage.Reader) error {
		rr := r.(*reader)
		if rr.sid != sid {
			return notFound(id) // deleted and created again: its own turn comes
		}
		sctx, cancel := s.stmtCtx(ctx)
		defer cancel()
		var dt int64
		if err := s.db().QueryRow(sctx, `SELECT docs_through, docs_gen FROM sessionmem_sessions WHERE sid = $1`, sid).Scan(&dt, &gen); err != nil {
			return err
		}
		from = uint64(dt) + 1
		if from > r.LastSeq() {
			return nil
		}
		through = min(r.LastSeq(), from+uint64(batch)-1)
		h := r.Header()
		for rec, err := range r.Records(from) {
			if err != nil {
				return err
			}
			if rec.Seq > through {
				break
			}
			rec.Data = append([]byte(nil), rec.Data...)
			cols.add(s.opts.Docs, h, rec, s.opts.MaxTextBytes)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, false, notFound(id)
		}
		return 0, false, s.wrap(ctx, "build search documents of session "+id, err)
	}
	if through == 0 {
		return 0, false, nil
	}
	// Under the row lock, only if nobody moved docs_through past from-1 meanwhile (another
	// backfill, the queued documents of a save) and no Rewrite changed the records since they
	// were read (docs_gen; a Rewrite may also have set docs_through back to 0).
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	err = pgx.BeginFunc(sctx, s.db(), func(tx pgx.Tx) error {
		var dt, g int64
		if err := tx.QueryRow(sctx, `SELECT docs_through, docs_gen FROM sessionmem_sessions WHERE sid = $1 FOR UPDATE`, sid).Scan(&dt, &g); err != nil {
			return err
		}
		if uint64(dt) != from-1 || g != gen {
			through = from - 1 // someone else did it; look again
			return nil
		}
		b := &pgx.Batch{}
		cols.queue(b, sid)
		b.Queue(`UPDATE sessionmem_sessions SET docs_through = $2 WHERE sid = $1`, sid, int64(through))
		return tx.SendBatch(sctx, b).Close()
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, notFound(id)
	}
	if err != nil {
		return 0, false, s.wrap(ctx, "write search documents of session "+id, err)
	}
	if through < from {
		return 0, true, nil // someone else moved docs_through: look again
	}
	return int(through - from + 1), true, nil
}

// backfillState is what the background backfill last saw.
type backfillState struct {
	mu  sync.Mutex
	p   IndexProgress
	err error
}

func (b *backfillState) set(p IndexProgress) {
	b.mu.Lock()
	b.p, b.err = p, nil
	b.mu.Unlock()
}

// BackfillStatus returns the background backfill's last progress and its last error (nil
// when it ran without one, or has not run).
func (s *Store) BackfillStatus() (IndexProgress, error) {
	s.backfill.mu.Lock()
	defer s.backfill.mu.Unlock()
	return s.backfill.p, s.backfill.err
}

// startBackfill starts the background backfill once, when Docs is set and the interval is
// not negative: a pass at start, then one every BackfillInterval.
func (s *Store) startBackfill() {
	if s.opts.Docs == nil || s.opts.BackfillInterval < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.bgCancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.bgCancel, s.bgDone = cancel, make(chan struct{})
	go func() {
		defer close(s.bgDone)
		for {
			start := time.Now()
			err := s.reindex(ctx, nil)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.backfill.mu.Lock()
				s.backfill.err = err
				s.backfill.mu.Unlock()
				s.log.Warn("storage: building search documents failed; retrying later", "store", s.label, "err", err)
			} else if p, _ := s.BackfillStatus(); p.Total > 0 && time.Since(start) > time.Second {
				s.log.Info("storage: search documents built", "store", s.label, "records", p.Records, "took", time.Since(start).Round(time.Millisecond))
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.opts.BackfillInterval):
			}
		}
	}()
}

// stopBackfill stops the background backfill and waits for it.
func (s *Store) stopBackfill() {
	s.mu.Lock()
	cancel, done := s.bgCancel, s.bgDone
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
