package ftsindex

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// Session describes the session a Batch belongs to.
type Session struct {
	// ID is the session id.
	ID string
	// Created identifies this incarnation of the id: a Batch whose Created differs from the
	// indexed one means the session was deleted and created again, and replaces it.
	Created time.Time
	// WorkingDir (absolute) serves the working_dir filter and resolves relative file
	// filters. It is in every doc's filter terms, so a Batch with another WorkingDir
	// restarts the session like a new Created (progress 0: feed it again from seq 1).
	WorkingDir string
	// Name is returned with hits; every Batch updates it.
	Name string
}

// Batch is what a store hands the index for one session: the docs among the records
// From..Through of its log (records that yield no doc, like labels, still count).
type Batch struct {
	Session Session
	// From and Through are the first and last seq the batch covers (From >= 1).
	From, Through uint64
	// Docs are the searchable records in that range; each Doc's SessionID must be
	// Session.ID and its Seq within [From, Through].
	Docs []fts.Doc
	// Build, when set on a batch given to a Queue, returns Docs (which is then left nil): the
	// queue calls it when it indexes the batch, so turning records into docs happens in the
	// background instead of on the path of the save that produced them. Index ignores it.
	Build func() []fts.Doc
	// Size is what the batch holds in memory until it is indexed (the bytes of the records
	// Build reads), for a Queue's MaxPendingBytes; 0 counts its docs' text.
	Size int
}

// Progress says how far the index has a session: every record with seq <= Through is
// indexed. Deleted is true when the session was deleted from the index (its batches are
// ignored).
type Progress struct {
	SessionID string
	Created   time.Time
	Through   uint64
	Deleted   bool
}

// Index adds batches in one short transaction and returns each session's progress after it.
// A doc whose (session, seq) is already indexed is skipped (records are immutable), so
// feeding a range twice is harmless. A session's progress moves to Through only when the
// batch continues it (From <= progress+1); a batch that leaves a gap is indexed but leaves
// the progress where it was, and the caller catches up from Progress.Through+1. Batches of a
// deleted session (same id and Created as a DeleteSession) are ignored (Deleted in the
// result), so a slow writer cannot bring a deleted session back.
func (ix *Index) Index(ctx context.Context, batches ...Batch) ([]Progress, error) {
	for _, b := range batches {
		if err := b.check(); err != nil {
			return nil, err
		}
	}
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	bodies := termBodies(batches, ix.opts.MaxTextBytes)
	out := make([]Progress, 0, len(batches))
	err = db.write(ctx, func(tx *sql.Tx) error {
		// Statements run without ctx's cancellation, checked between docs instead: with a
		// cancellable context the driver starts a watcher goroutine per statement, which
		// made a rebuild a third slower. Lock waits (BEGIN) still end with ctx.
		w := writer{ctx: context.WithoutCancel(ctx), done: ctx.Err, tx: tx, stmts: map[string]*sql.Stmt{}, seg: newSegBuilder()}
		if err := tx.QueryRowContext(w.ctx, `SELECT v FROM counters WHERE k = 'last_doc'`).Scan(&w.nextDoc); err != nil {
			return err
		}
		for i, b := range batches {
			p, err := w.batch(b, bodies[i])
			if err != nil {
				return fmt.Errorf("index session %s: %w", b.Session.ID, err)
			}
			out = append(out, p)
		}
		if err := w.flushSegment(); err != nil {
			return err
		}
		return w.mergeSmall()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// body is what the index receives of one doc: its terms, space-separated, and their count.
type body struct {
	terms []byte
	n     int
}

// termBodies computes what FTS5 receives for every doc (its terms, space-separated) before
// the transaction starts, so that the write lock is held only for SQLite's own work, and on
// all cores when there is much text.
func termBodies(batches []Batch, maxText int) [][]body {
	out := make([][]body, len(batches))
	type job struct{ b, d int }
	var jobs []job
	total := 0
	for i, b := range batches {
		out[i] = make([]body, len(b.Docs))
		for j, d := range b.Docs {
			jobs = append(jobs, job{i, j})
			total += len(d.Text)
		}
	}
	run := func(jobs []job) {
		for _, jb := range jobs {
			terms, n := fts.AppendTerms(nil, clipText(batches[jb.b].Docs[jb.d].Text, maxText))
			out[jb.b][jb.d] = body{terms: terms, n: n}
		}
	}
	workers := runtime.GOMAXPROCS(0)
	if total < 256<<10 || workers == 1 {
		run(jobs)
		return out
	}
	var wg sync.WaitGroup
	per := (len(jobs) + workers - 1) / workers
	for start := 0; start < len(jobs); start += per {
		part := jobs[start:min(start+per, len(jobs))]
		wg.Go(func() { run(part) })
	}
	wg.Wait()
	return out
}

func (b *Batch) check() error {
	if b.Session.ID == "" {
		return fmt.Errorf("%w: batch without a session id", ErrInvalid)
	}
	if b.From == 0 || b.Through < b.From {
		return fmt.Errorf("%w: session %s: batch range %d..%d", ErrInvalid, b.Session.ID, b.From, b.Through)
	}
	for _, d := range b.Docs {
		if d.SessionID != b.Session.ID || d.Seq < b.From || d.Seq > b.Through {
			return fmt.Errorf("%w: doc %s/%d outside batch %s %d..%d", ErrInvalid, d.SessionID, d.Seq, b.Session.ID, b.From, b.Through)
		}
		if d.Kind != fts.KindMessage && d.Kind != fts.KindSummary {
			return fmt.Errorf("%w: doc %s/%d has kind %q", ErrInvalid, d.SessionID, d.Seq, d.Kind)
		}
	}
	return nil
}

// write runs fn in an IMMEDIATE transaction on the writer connection.
func (db *database) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return classify(err)
	}
	return classify(tx.Commit())
}

type writer struct {
	ctx   context.Context // never cancelled; see Index
	done  func() error    // the caller's ctx.Err
	tx    *sql.Tx
	stmts map[string]*sql.Stmt // prepared in this transaction, closed by its end
	seg   *segBuilder          // the docs this transaction adds, written as one segment
	// nextDoc is the last doc id given out (counters' next_doc, read when the transaction
	// starts, written back with the segment).
	nextDoc int64
}

// stmt returns q prepared in the transaction: preparing costs as much as running an insert.
func (w *writer) stmt(q string) (*sql.Stmt, error) {
	if st, ok := w.stmts[q]; ok {
		return st, nil
	}
	st, err := w.tx.PrepareContext(w.ctx, q)
	if err != nil {
		return nil, err
	}
	w.stmts[q] = st
	return st, nil
}

func (w *writer) exec(q string, args ...any) (sql.Result, error) {
	st, err := w.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(w.ctx, args...)
}

func (w *writer) query(q string, args ...any) (*sql.Rows, error) {
	st, err := w.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(w.ctx, args...)
}

// queryRow is QueryRow through the cache; a prepare error surfaces at Scan.
func (w *writer) queryRow(q string, args ...any) rowScanner {
	st, err := w.stmt(q)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(w.ctx, args...)
}

type rowScanner interface{ Scan(...any) error }

type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }

func (w *writer) batch(b Batch, bodies []body) (Progress, error) {
	p := Progress{SessionID: b.Session.ID, Created: b.Session.Created}
	sr, err := w.sessionRow(b.Session)
	if err != nil || sr.deleted {
		p.Deleted = sr.deleted
		return p, err
	}
	for i, d := range b.Docs {
		if err := w.done(); err != nil {
			return p, err
		}
		if sr.has(d.Seq) {
			continue
		}
		w.doc(sr.id, d, bodies[i])
		sr.add(d.Seq, bodies[i].n)
	}
	p.Through, err = w.finishBatch(&sr, b.From, b.Through)
	return p, err
}

// sessRowState is a session's row as a batch finds it in the transaction and changes it:
// what is indexed already (every seq up to through, and the seqs of batches that came ahead
// of a missing one: gaps), and what the batch adds.
type sessRowState struct {
	id           int64
	deleted      bool // a tombstone of this incarnation: the batch is ignored
	through      uint64
	gaps         []uint64
	added, terms int64
}

// has reports whether the doc of seq is indexed already (records are immutable: skip it).
func (sr *sessRowState) has(seq uint64) bool {
	return seq <= sr.through || slices.Contains(sr.gaps, seq)
}

// add counts a doc of n terms the batch indexes.
func (sr *sessRowState) add(seq uint64, n int) {
	sr.gaps = append(sr.gaps, seq)
	sr.added++
	sr.terms += int64(n)
}

// sessionRow finds (or creates) the row of s for a batch: a tombstone of this incarnation
// makes it deleted, another incarnation or working directory replaces the old row, and every
// batch updates the name.
func (w *writer) sessionRow(s Session) (sessRowState, error) {
	created := nanos(s.Created)
	var sr sessRowState
	var tomb int64
	switch err := w.queryRow(`SELECT created FROM tombstones WHERE sid = ?`, s.ID).Scan(&tomb); {
	case err == nil && tomb == created:
		sr.deleted = true
		return sr, nil
	case err == nil:
		if _, err := w.exec(`DELETE FROM tombstones WHERE sid = ?`, s.ID); err != nil {
			return sr, err
		}
	case !errors.Is(err, sql.ErrNoRows):
		return sr, err
	}
	var oldCreated int64
	var oldDir string
	var gapBlob []byte
	err := w.queryRow(`SELECT id, created, working_dir, through, gaps FROM sessions WHERE sid = ?`, s.ID).Scan(&sr.id, &oldCreated, &oldDir, &sr.through, &gapBlob)
	switch {
	case err == nil && (oldCreated != created || normDir(oldDir) != normDir(s.WorkingDir)):
		// The id was deleted and created again: the old incarnation goes, and the new one
		// gets a new row (its docs are told apart by the row id). A changed working directory
		// is treated alike: every doc's filters depend on it.
		if err := forget(w.ctx, w.tx, s.ID); err != nil {
			return sr, err
		}
		err = sql.ErrNoRows
	case err == nil:
		if _, err := w.exec(`UPDATE sessions SET name = ? WHERE id = ? AND name != ?`, s.Name, sr.id, s.Name); err != nil {
			return sr, err
		}
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		sr.through, gapBlob = 0, nil
		res, err := w.exec(`INSERT INTO sessions (sid, created, working_dir, name, through) VALUES (?, ?, ?, ?, 0)`, s.ID, created, s.WorkingDir, s.Name)
		if err != nil {
			return sr, err
		}
		if sr.id, err = res.LastInsertId(); err != nil {
			return sr, err
		}
		if err := bumpSessions(w.ctx, w.tx); err != nil {
			return sr, err
		}
	case err != nil:
		return sr, err
	}
	sr.gaps = decodeSeqs(gapBlob)
	return sr, nil
}

// finishBatch writes the row's progress after a batch of from..through and returns it: the
// progress moves to through only when the batch continues it.
func (w *writer) finishBatch(sr *sessRowState, from, through uint64) (uint64, error) {
	if from <= sr.through+1 && through > sr.through {
		sr.through = through
	}
	sr.gaps = slices.DeleteFunc(sr.gaps, func(seq uint64) bool { return seq <= sr.through })
	slices.Sort(sr.gaps)
	_, err := w.exec(`UPDATE sessions SET through = ?, gaps = ?, ndocs = ndocs + ?, nterms = nterms + ? WHERE id = ?`,
		sr.through, encodeSeqs(sr.gaps), sr.added, sr.terms, sr.id)
	return sr.through, err
}

// doc adds a doc to the transaction's segment, under the next doc id.
func (w *writer) doc(session int64, d fts.Doc, b body) {
	w.nextDoc++
	files := make([]string, 0, len(d.Files))
	for _, f := range d.Files {
		files = append(files, path.Clean(f))
	}
	w.seg.add(w.nextDoc, session, d, b.terms, b.n, files)
}

// encodeSeqs and decodeSeqs store a session's gaps: ascending seqs as varint deltas (nil
// for none).
func encodeSeqs(seqs []uint64) []byte {
	if len(seqs) == 0 {
		return nil
	}
	var b []byte
	prev := uint64(0)
	for _, s := range seqs {
		b = binary.AppendUvarint(b, s-prev)
		prev = s
	}
	return b
}

func decodeSeqs(b []byte) []uint64 {
	var out []uint64
	r := reader{b: b}
	prev := uint64(0)
	for r.i < len(b) && r.err == nil {
		prev += r.uvarint()
		out = append(out, prev)
	}
	return out
}

// normDir drops trailing separators from a working directory, as memory compares them.
func normDir(dir string) string {
	if d := strings.TrimRight(dir, `/\`); d != "" || dir == "" {
		return d
	}
	return dir[:1] // the root
}

// deleteDocs takes a session's docs out of the counts. Their postings stay in their segments
// until a merge drops them: a doc whose session row is gone is dead to every search (see
// liveSessions), and the caller deletes the row.
func deleteDocs(ctx context.Context, tx *sql.Tx, session int64) error {
	var n, total int64
	if err := tx.QueryRowContext(ctx, `SELECT ndocs, nterms FROM sessions WHERE id = ?`, session).Scan(&n, &total); err != nil {
		return err
	}
	return addCounts(ctx, tx, -n, -total)
}

// DeleteSession removes a session from the index and leaves a tombstone for this
// incarnation (created), so that batches still in flight in any process are ignored. A
// session created again under the same id (another Created) is indexed normally. Deleting
// an unknown session only leaves the tombstone.
func (ix *Index) DeleteSession(ctx context.Context, id string, created time.Time) error {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return db.write(ctx, func(tx *sql.Tx) error {
		if err := forget(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tombstones (sid, created) VALUES (?, ?)`, id, nanos(created))
		return err
	})
}

// ForgetSession removes a session's docs, progress and tombstone (leaving none), so that it can be
// fed again from seq 1: for a session whose store history no longer matches the index (say,
// restored from a backup to an older state, when Progress.Through exceeds its last seq).
func (ix *Index) ForgetSession(ctx context.Context, id string) error {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return db.write(ctx, func(tx *sql.Tx) error { return forget(ctx, tx, id) })
}

// forget removes id's docs, its progress and any tombstone, in tx.
func forget(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM tombstones WHERE sid = ?`, id); err != nil {
		return err
	}
	var sid int64
	switch err := tx.QueryRowContext(ctx, `SELECT id FROM sessions WHERE sid = ?`, id).Scan(&sid); {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	if err := deleteDocs(ctx, tx, sid); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, sid); err != nil {
		return err
	}
	return bumpSessions(ctx, tx)
}

// Progress returns how far a session is indexed (zero Through when it is not).
func (ix *Index) Progress(ctx context.Context, id string) (Progress, error) {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return Progress{}, err
	}
	defer release()
	p := Progress{SessionID: id}
	var created int64
	err = db.r.QueryRowContext(ctx, `SELECT created, through FROM sessions WHERE sid = ?`, id).Scan(&created, &p.Through)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		var tomb int64
		if err := db.r.QueryRowContext(ctx, `SELECT created FROM tombstones WHERE sid = ?`, id).Scan(&tomb); err == nil {
			p.Deleted, p.Created = true, unnanos(tomb)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return Progress{}, classify(err)
		}
		return p, nil
	case err != nil:
		return Progress{}, classify(err)
	}
	p.Created = unnanos(created)
	return p, nil
}

// Sessions returns the progress of every indexed session, for a catch-up pass: a session
// of the store missing here or behind its last seq needs feeding from Through+1, one whose
// Created differs needs feeding from 1, and one here that the store no longer has needs
// DeleteSession.
func (ix *Index) Sessions(ctx context.Context) ([]Progress, error) {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	rows, err := db.r.QueryContext(ctx, `SELECT sid, created, through FROM sessions ORDER BY sid`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []Progress
	for rows.Next() {
		var p Progress
		var created int64
		if err := rows.Scan(&p.SessionID, &created, &p.Through); err != nil {
			return nil, classify(err)
		}
		p.Created = unnanos(created)
		out = append(out, p)
	}
	return out, classify(rows.Err())
}

// nanos stores a time as Unix nanoseconds, the zero time as 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func unnanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
