package postgres

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
)

// writer is the storage.Writer of an Update: its reads and writes go through the Update's
// transaction, which holds the session row's lock.
type writer struct {
	reader
	sealed    uint64 // the last sealed seq
	tailBytes int64  // raw bytes of the unsealed chunks after it
}

// Append validates recs, then stores them with their keys and m in as few round trips as it
// can (usually one batch: the chunk, the keys, the session row). It becomes durable when the
// Update commits. A failed statement aborts the transaction: the writer then refuses further
// use and Update rolls back.
func (w *writer) Append(recs []storage.Record, m storage.Meta) ([]storage.Record, error) {
	if w.done {
		return nil, errReaderDone
	}
	if w.err != nil {
		return nil, w.err
	}
	id := w.hdr.ID
	next := w.last + 1
	out := make([]storage.Record, len(recs))
	ends := make([]int, len(recs))
	var buf []byte
	var keys []string
	seen := map[string]bool{}
	for i, rec := range recs {
		var kind string
		var err error
		buf, kind, err = storage.AppendRecord(buf, rec, next+uint64(i))
		if err != nil {
			return nil, fmt.Errorf("session %s: record %d: %w", id, i, err)
		}
		ends[i] = len(buf)
		out[i] = storage.Record{Seq: next + uint64(i), Kind: kind, Barrier: rec.Barrier, Key: rec.Key}
		if rec.Key != "" {
			if seen[rec.Key] {
				return nil, fmt.Errorf("session %s: record %d: key %q twice in one batch: %w", id, i, rec.Key, storage.ErrDuplicateKey)
			}
			seen[rec.Key] = true
			keys = append(keys, rec.Key)
		}
	}
	for i := range out {
		out[i].Data = buf[lineStart(ends, i) : ends[i]-1]
	}
	if m.Updated.IsZero() {
		m.Updated = w.s.now()
	}
	updated, err := toNanos(m.Updated)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	p := &plan{w: w, batch: &pgx.Batch{}, last: w.last, sealed: w.sealed, tailBytes: w.tailBytes}
	seg := 0
	for i := 1; i <= len(recs); i++ {
		if i < len(recs) && !recs[i].Barrier {
			continue
		}
		if err := p.add(buf[lineStart(ends, seg):lineStart(ends, i)], i-seg, recs[seg].Barrier); err != nil {
			return nil, w.fail(err)
		}
		seg = i
	}
	if len(keys) > 0 {
		p.batch.Queue("INSERT INTO sessionmem_keys (sid, key) SELECT $1, unnest($2::text[])", w.sid, keys)
	}
	p.batch.Queue(`UPDATE sessionmem_sessions SET name = $2, model = $3, provider = $4, updated_ns = $5,
		messages = $6, compactions = $7, context_tokens = $8, preview = $9, match_name = $10, match_preview = $11,
		leaf = $12, checkpoint = $13, last_seq = $14, sealed_seq = $15, tail_bytes = $16 WHERE sid = $1`,
		w.sid, m.Name, m.Model, m.Provider, updated, m.Messages, m.Compactions, m.ContextTokens, m.Preview,
		strings.ToLower(m.Name), strings.ToLower(m.Preview), m.Leaf, int64(m.Checkpoint), int64(p.last),
		int64(p.sealed), p.tailBytes)
	if err := p.flush(); err != nil {
		return nil, w.fail(err)
	}
	w.last, w.sealed, w.tailBytes = p.last, p.sealed, p.tailBytes
	return out, nil
}

// lineStart is the offset in the batch buffer where record k's line starts.
func lineStart(ends []int, k int) int {
	if k == 0 {
		return 0
	}
	return ends[k-1]
}

// plan queues the statements of one Append.
type plan struct {
	w         *writer
	batch     *pgx.Batch
	last      uint64 // the last seq stored or queued
	sealed    uint64
	tailBytes int64
}

// add stores n records (lines, each ending in a newline) after p.last. barrier seals what is
// unsealed first, so the segment starts a new chunk. When the unsealed records would reach
// the seal threshold, they and the segment are cut into sealed chunks, and what is left over
// stays as one unsealed chunk; otherwise the segment becomes one unsealed chunk.
func (p *plan) add(lines []byte, n int, barrier bool) error {
	opts := p.w.s.opts
	first := p.last + 1
	if barrier && p.last > p.sealed {
		pending, err := p.takePending()
		if err != nil {
			return err
		}
		p.queueChunks(pending, p.sealed+1, true)
	}
	if int(p.last-p.sealed)+n >= opts.SealRecords || p.tailBytes+int64(len(lines)) >= int64(opts.SealBytes) {
		pending, err := p.takePending()
		if err != nil {
			return err
		}
		start := p.sealed + 1
		p.queueChunks(append(pending, lines...), start, false)
		return nil
	}
	p.queueChunk(lines, first, first+uint64(n)-1, false)
	p.last = first + uint64(n) - 1
	p.tailBytes += int64(len(lines))
	return nil
}

// takePending sends what is queued, reads the unsealed chunks and queues their removal. It
// returns their lines.
func (p *plan) takePending() ([]byte, error) {
	if p.last == p.sealed {
		return nil, nil
	}
	if err := p.flush(); err != nil {
		return nil, err
	}
	w := p.w
	ctx, cancel := w.s.stmtCtx(w.ctx)
	defer cancel()
	rows, err := w.q.Query(ctx, `SELECT first_seq, last_seq, raw_bytes, sealed, data FROM sessionmem_chunks
		WHERE sid = $1 AND first_seq > $2 ORDER BY first_seq`, w.sid, int64(p.sealed))
	if err != nil {
		return nil, w.s.wrap(w.ctx, "seal session "+w.hdr.ID, err)
	}
	var chunks []chunk
	for rows.Next() {
		var c chunk
		var first, last int64
		if err := rows.Scan(&first, &last, &c.raw, &c.sealed, &c.data); err != nil {
			rows.Close()
			return nil, w.s.wrap(w.ctx, "seal session "+w.hdr.ID, err)
		}
		c.first, c.last = uint64(first), uint64(last)
		chunks = append(chunks, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, w.s.wrap(w.ctx, "seal session "+w.hdr.ID, err)
	}
	var out []byte
	want := p.sealed + 1
	for i := range chunks {
		c := &chunks[i]
		if c.first != want || c.sealed {
			return nil, fmt.Errorf("session %s: unsealed chunks do not continue at %d: %w", w.hdr.ID, want, storage.ErrCorrupt)
		}
		content, err := c.decode(w.hdr.ID, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, content...)
		want = c.last + 1
	}
	if want != p.last+1 {
		return nil, fmt.Errorf("session %s: unsealed chunks end at %d, the session at %d: %w", w.hdr.ID, want-1, p.last, storage.ErrCorrupt)
	}
	p.batch.Queue("DELETE FROM sessionmem_chunks WHERE sid = $1 AND first_seq > $2", w.sid, int64(p.sealed))
	p.last, p.tailBytes = p.sealed, 0
	return out, nil
}

// queueChunks cuts lines (records from first on) into chunks of at most the seal threshold
// and queues them sealed; the last one stays unsealed unless it is full or all is set.
func (p *plan) queueChunks(lines []byte, first uint64, all bool) {
	opts := p.w.s.opts
	seq := first
	start, n := 0, 0
	for i := 0; i < len(lines); {
		nl := i + indexNL(lines[i:])
		// Cut before this line if it would overflow a non-empty chunk.
		if n > 0 && nl+1-start > opts.SealBytes {
			p.queueSealed(lines[start:i], seq, n)
			seq += uint64(n)
			start, n = i, 0
		}
		n++
		i = nl + 1
		if n >= opts.SealRecords || i-start >= opts.SealBytes {
			p.queueSealed(lines[start:i], seq, n)
			seq += uint64(n)
			start, n = i, 0
		}
	}
	if n == 0 {
		return
	}
	rest := lines[start:]
	if all {
		p.queueSealed(rest, seq, n)
		return
	}
	p.queueChunk(rest, seq, seq+uint64(n)-1, false)
	p.last = seq + uint64(n) - 1
	p.tailBytes = int64(len(rest))
}

func (p *plan) queueSealed(lines []byte, first uint64, n int) {
	last := first + uint64(n) - 1
	p.queueChunk(lines, first, last, true)
	p.last, p.sealed, p.tailBytes = last, last, 0
}

func (p *plan) queueChunk(lines []byte, first, last uint64, sealed bool) {
	p.batch.Queue(`INSERT INTO sessionmem_chunks (sid, first_seq, last_seq, raw_bytes, sealed, data)
		VALUES ($1, $2, $3, $4, $5, $6)`, p.w.sid, int64(first), int64(last), int64(len(lines)), sealed, compress(lines))
}

// flush sends the queued statements as one round trip.
func (p *plan) flush() error {
	if p.batch.Len() == 0 {
		return nil
	}
	w := p.w
	ctx, cancel := w.s.stmtCtx(w.ctx)
	defer cancel()
	b := p.batch
	p.batch = &pgx.Batch{}
	br := w.q.SendBatch(ctx, b)
	var err error
	for range b.Len() {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return w.s.wrap(w.ctx, "append to session "+w.hdr.ID, err)
	}
	return nil
}
