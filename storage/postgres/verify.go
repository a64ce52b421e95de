package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/storage"
)

// Verify reads every chunk of a session in one read-only snapshot and checks that each
// decodes (zstd checksum, size), that every line is the JSON record its seq says, that the
// chunks run from 1 to the session's last_seq with no gap or overlap, and that the session
// row's bookkeeping (which records are in which level of chunk) agrees with them. A
// transaction commits whole or not at all, so nothing can be torn and repair has nothing to
// cut: the report never lists a torn problem and repair changes nothing. Damage is a
// problem whose Err wraps storage.ErrCorrupt; the error result is for the database being
// unreachable and the like.
func (s *Store) Verify(ctx context.Context, id string, repair bool) (storage.VerifyReport, error) {
	rep, err := s.verifyChunkReport(ctx, id)
	if err != nil {
		return storage.VerifyReport{}, err
	}
	return rep.report(), nil
}

// chunkReport is what Verify found, in the terms of this store's layout.
type chunkReport struct {
	id string
	// chunks is the number of chunks that decoded intact, records the records they hold,
	// lastSeq the last of them.
	chunks, records int
	lastSeq         uint64
	// level0 is how many records the session row says are in level-0 chunks (those after
	// the last level-1 one).
	level0 int
	// damaged wraps storage.ErrCorrupt and says where; newer wraps storage.ErrNewerFormat.
	damaged, newer error
}

// report words r in the terms every backend shares.
func (r chunkReport) report() storage.VerifyReport {
	rep := storage.VerifyReport{ID: r.id, Records: r.records, LastSeq: r.lastSeq}
	for _, err := range []error{r.damaged, r.newer} {
		if err != nil {
			rep.Problems = append(rep.Problems, storage.ProblemOf(r.id, err))
		}
	}
	return rep
}

// verifyChunkReport is Verify, reporting in the terms of the chunks.
func (s *Store) verifyChunkReport(ctx context.Context, id string) (chunkReport, error) {
	if err := checkID(id); err != nil {
		return chunkReport{}, err
	}
	done, err := s.start(ctx)
	if err != nil {
		return chunkReport{}, err
	}
	defer done()
	rep := chunkReport{id: id}
	err = pgx.BeginTxFunc(ctx, s.db(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		row, err := s.readSession(ctx, tx, id, "")
		if err != nil {
			if errors.Is(err, storage.ErrNewerFormat) {
				rep.newer = err
				return nil
			}
			return err
		}
		rep.damaged, err = s.verifyChunks(ctx, tx, row, &rep)
		return err
	})
	if err != nil {
		return chunkReport{}, s.wrap(ctx, "verify session "+id, err)
	}
	return rep, nil
}

// verifyChunks walks the chunks page by page. It returns the damage found (nil if none) and
// an error only when the database failed.
func (s *Store) verifyChunks(ctx context.Context, tx pgx.Tx, row rowState, rep *chunkReport) (damage, err error) {
	id := row.hdr.ID
	damaged := func(format string, a ...any) error {
		return fmt.Errorf("session %s: %s: %w", id, fmt.Sprintf(format, a...), storage.ErrCorrupt)
	}
	expect := uint64(1)
	lay := row.lay
	var l0 int64
	var l1 int
	var lastL2 uint64
	var buf []byte
	for {
		sctx, cancel := s.stmtCtx(ctx)
		rows, err := tx.Query(sctx, `SELECT `+chunkColumns+` FROM sessionmem_chunks
			WHERE sid = $1 AND first_seq >= $2 ORDER BY first_seq LIMIT $3`, row.sid, int64(expect), pageRows)
		if err != nil {
			cancel()
			return nil, err
		}
		page, err := scanChunks(rows)
		cancel()
		if err != nil {
			return nil, err
		}
		for i := range page {
			c := &page[i]
			if c.first != expect {
				return damaged("records %d-%d are missing", expect, c.first-1), nil
			}
			if buf, err = c.decode(id, buf); err != nil {
				return err, nil
			}
			for rest := buf; len(rest) > 0; {
				nl := indexNL(rest)
				if !gjson.ValidBytes(rest[:nl]) {
					seq, _ := storage.RecordSeq(rest[:nl])
					return damaged("record %d is not valid JSON", seq), nil
				}
				rest = rest[nl+1:]
			}
			want := level0
			switch {
			case c.last <= lay.l2End:
				want = level2
			case c.last <= lay.l1End:
				want = level1
				l1++
			default:
				l0 += c.raw
			}
			if c.level != want || (c.first <= lay.l2End && c.last > lay.l2End) || (c.first <= lay.l1End && c.last > lay.l1End) {
				return damaged("chunk %d-%d of level %d does not fit the session's layout %+v", c.first, c.last, c.level, lay), nil
			}
			if c.level == level2 {
				lastL2 = c.first
			}
			rep.chunks++
			rep.records += int(c.last - c.first + 1)
			rep.lastSeq = c.last
			expect = c.last + 1
		}
		if len(page) < pageRows {
			break
		}
	}
	if rep.lastSeq != row.last {
		return damaged("the session row says last_seq %d, its records end at %d", row.last, rep.lastSeq), nil
	}
	if l0 != lay.l0Bytes || l1 != lay.l1Chunks || (lay.openL2 != 0 && lay.openL2 != lastL2) {
		return damaged("the session row's layout %+v disagrees with its chunks (%d level-0 bytes, %d level-1 chunks, last level-2 chunk at %d)",
			lay, l0, l1, lastL2), nil
	}
	rep.level0 = int(row.last - lay.l1End)
	return nil, nil
}
