package postgres

import (
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
)

// Chunk levels. Every chunk is one zstd frame; what differs is how many records it holds, so
// how well it compresses (a single ~2 KB message about 2x, 32 of them about 4x, a thousand
// 6-7x on the corpus).
const (
	// level0: one Append's batch, as written by the save that made it.
	level0 = 0
	// level1: the level-0 chunks merged once they hold Options.TailRecords or TailBytes.
	level1 = 1
	// level2: level-1 chunks merged, Options.MergeChunks at a time, into the session's open
	// level-2 chunk until it holds ChunkRecords or ChunkBytes; then a new one starts.
	level2 = 2
)

// layout is where a session's chunks stand, kept in its row: records up to l2End are in
// level-2 chunks (the last of which starts at openL2 and may still grow, unless openL2 is 0),
// records up to l1End in l1Chunks level-1 chunks, and the rest, l0Bytes of JSONL, in
// level-0 chunks.
type layout struct {
	last, l2End, l1End, openL2 uint64
	l1Chunks                   int
	l0Bytes                    int64
}

// writer is the storage.Writer of an Update: its reads and writes go through the Update's
// transaction, which holds the session row's lock.
type writer struct {
	reader
	lay     layout
	pending *pgx.Batch // statements queued for the next round trip (at the latest, COMMIT's)
	// docsThrough is the session's docs_through as this transaction will leave it, docsGen
	// its docs_gen as it was read.
	docsThrough uint64
	docsGen     int64
	// docRecs are the records appended, whose documents are queued once the Update
	// committed (docqueue.go).
	docRecs []storage.Record
}

// Append validates recs and queues the statements that store them with their keys and m (the
// chunk, the keys, the session row); they go to the server with the next read, merge or the
// Update's COMMIT, in one round trip. A merge of chunks reads them first, so it sends what is
// queued. A failed statement aborts the transaction: the writer then refuses further use and
// Update rolls back and returns the error (so an Append whose statements fail at COMMIT
// returned nil, but nothing of the Update is stored).
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
	var keys []int64
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
			keys = append(keys, keyHash(rec.Key))
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
	p := &plan{w: w, lay: w.lay}
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
		w.pending.Queue("INSERT INTO sessionmem_keys (sid, key_hash) SELECT $1, unnest($2::bigint[])", w.sid, keys)
	}
	if w.s.opts.Docs != nil && len(out) > 0 {
		// The records' search documents are written after the commit, off the save's path
		// (docqueue.go); docs_through stays where it is until they are.
		for _, r := range out {
			r.Data = append([]byte(nil), r.Data...)
			w.docRecs = append(w.docRecs, r)
		}
	}
	l := p.lay
	w.pending.Queue(`UPDATE sessionmem_sessions SET name = $2, model = $3, provider = $4, updated_ns = $5,
		messages = $6, compactions = $7, context_tokens = $8, preview = $9, match_name = $10, match_preview = $11,
		leaf = $12, checkpoint = $13, last_seq = $14, l2_end = $15, l1_end = $16, l1_chunks = $17, l0_bytes = $18,
		open_l2 = $19, docs_through = $20 WHERE sid = $1`,
		w.sid, pgText(m.Name), pgText(m.Model), pgText(m.Provider), updated, m.Messages, m.Compactions, m.ContextTokens, pgText(m.Preview),
		pgText(strings.ToLower(m.Name)), pgText(strings.ToLower(m.Preview)), m.Leaf, int64(m.Checkpoint), int64(l.last),
		int64(l.l2End), int64(l.l1End), l.l1Chunks, l.l0Bytes, int64(l.openL2), int64(w.docsThrough))
	w.last, w.lay = l.last, l
	return out, nil
}

// keyHash is what sessionmem_keys stores of a key.
func keyHash(key string) int64 { return int64(xxhash.Sum64String(key)) }

// lineStart is the offset in the batch buffer where record k's line starts.
func lineStart(ends []int, k int) int {
	if k == 0 {
		return 0
	}
	return ends[k-1]
}

// plan queues the statements of one Append and keeps the layout they lead to.
type plan struct {
	w   *writer
	lay layout
}

// add stores n records (lines, each ending in a newline) after the last one. A barrier first
// merges everything below level 2 into level 2 and closes the open level-2 chunk, so the
// barrier record starts a chunk (a resume from a compaction decodes from there).
func (p *plan) add(lines []byte, n int, barrier bool) error {
	o := p.w.s.opts
	l := &p.lay
	if barrier && l.last > l.l2End {
		if err := p.toLevel2(nil, 0); err != nil {
			return err
		}
	}
	if barrier {
		l.openL2 = 0
	}
	l0Records := int(l.last-l.l1End) + n
	l0Bytes := l.l0Bytes + int64(len(lines))
	switch {
	case l0Records >= o.MergeChunks*o.TailRecords || l0Bytes >= int64(o.MergeChunks)*int64(o.TailBytes):
		// As much as level-1 chunks merge at once (a large batch, an import): straight to
		// level 2, rather than written once more as a level-1 chunk first.
		return p.toLevel2(lines, n)
	case l0Records >= o.TailRecords || l0Bytes >= int64(o.TailBytes):
		content, err := p.take(l.l1End)
		if err != nil {
			return err
		}
		content = append(content, lines...)
		first := l.l1End + 1
		last := l.l1End + uint64(l0Records)
		p.queueChunk(content, first, last, level1)
		l.last, l.l1End, l.l0Bytes = last, last, 0
		l.l1Chunks++
		if l.l1Chunks >= o.MergeChunks {
			return p.toLevel2(nil, 0)
		}
		return nil
	default:
		first := l.last + 1
		l.last += uint64(n)
		l.l0Bytes += int64(len(lines))
		p.queueChunk(lines, first, l.last, level0)
		return nil
	}
}

// toLevel2 merges the open level-2 chunk, every level-1 and level-0 chunk and n more records
// (lines) into level-2 chunks of at most ChunkRecords and ChunkBytes; the last of them stays
// open unless full.
func (p *plan) toLevel2(lines []byte, n int) error {
	o := p.w.s.opts
	l := &p.lay
	from := l.l2End
	if l.openL2 != 0 {
		from = l.openL2 - 1
	}
	content, err := p.take(from)
	if err != nil {
		return err
	}
	content = append(content, lines...)
	seq := from + 1
	l.last += uint64(n)
	start, count := 0, 0
	flush := func(end int) {
		p.queueChunk(content[start:end], seq, seq+uint64(count)-1, level2)
		l.openL2 = seq
		seq += uint64(count)
		start, count = end, 0
	}
	for i := 0; i < len(content); {
		nl := i + indexNL(content[i:])
		// Cut before this line if it would overflow a non-empty chunk.
		if count > 0 && nl+1-start > o.ChunkBytes {
			flush(i)
		}
		count++
		i = nl + 1
		if count >= o.ChunkRecords || i-start >= o.ChunkBytes {
			flush(i)
			l.openL2 = 0 // full
		}
	}
	if count > 0 {
		flush(len(content))
	}
	if seq != l.last+1 {
		return fmt.Errorf("session %s: merged chunks end at %d, the session at %d: %w", p.w.hdr.ID, seq-1, l.last, storage.ErrCorrupt)
	}
	l.l2End, l.l1End, l.l1Chunks, l.l0Bytes = l.last, l.last, 0, 0
	return nil
}

// take sends what is queued, reads the chunks holding the records after seq (up to the
// last), queues their deletion and returns their lines.
func (p *plan) take(after uint64) ([]byte, error) {
	l := &p.lay
	if l.last == after {
		return nil, nil
	}
	w := p.w
	if err := w.flush(); err != nil {
		return nil, err
	}
	ctx, cancel := w.s.stmtCtx(w.ctx)
	defer cancel()
	rows, err := w.q.Query(ctx, `SELECT first_seq, last_seq, raw_bytes, level, data FROM sessionmem_chunks
		WHERE sid = $1 AND first_seq > $2 ORDER BY first_seq`, w.sid, int64(after))
	if err != nil {
		return nil, w.s.wrap(w.ctx, "merge chunks of session "+w.hdr.ID, err)
	}
	chunks, err := scanChunks(rows)
	if err != nil {
		return nil, w.s.wrap(w.ctx, "merge chunks of session "+w.hdr.ID, err)
	}
	var out []byte
	want := after + 1
	for i := range chunks {
		c := &chunks[i]
		if c.first != want {
			return nil, fmt.Errorf("session %s: chunks do not continue at %d: %w", w.hdr.ID, want, storage.ErrCorrupt)
		}
		if out, err = c.decodeAppend(w.hdr.ID, out); err != nil {
			return nil, err
		}
		want = c.last + 1
	}
	if want != l.last+1 {
		return nil, fmt.Errorf("session %s: chunks end at %d, the session at %d: %w", w.hdr.ID, want-1, l.last, storage.ErrCorrupt)
	}
	w.pending.Queue("DELETE FROM sessionmem_chunks WHERE sid = $1 AND first_seq > $2", w.sid, int64(after))
	return out, nil
}

func (p *plan) queueChunk(lines []byte, first, last uint64, level int) {
	p.w.pending.Queue(`INSERT INTO sessionmem_chunks (sid, first_seq, last_seq, raw_bytes, level, data)
		VALUES ($1, $2, $3, $4, $5, $6)`, p.w.sid, int64(first), int64(last), int64(len(lines)), int16(level), compress(lines, level))
}

// flush sends the queued statements as one round trip. A failure poisons the writer.
func (w *writer) flush() error {
	if w.err != nil {
		return w.err
	}
	if w.pending.Len() == 0 {
		return nil
	}
	ctx, cancel := w.s.stmtCtx(w.ctx)
	defer cancel()
	b := w.pending
	w.pending = &pgx.Batch{}
	// Close reads every result and returns the first error.
	if err := w.q.SendBatch(ctx, b).Close(); err != nil {
		return w.fail(w.s.wrap(w.ctx, "write session "+w.hdr.ID, err))
	}
	return nil
}
