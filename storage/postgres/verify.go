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
// row's bookkeeping (which records are in which level of chunk) agrees with them. A transaction commits whole
// or not at all, so nothing can be torn and repair has nothing to cut: the report's Torn is
// always false and repair changes nothing. Damage is reported in Damaged, wrapping
// storage.ErrCorrupt; the error result is for the database being unreachable and the like.
func (s *Store) Verify(ctx context.Context, id string, repair bool) (storage.VerifyReport, error) {
	if err := checkID(id); err != nil {
		return storage.VerifyReport{}, err
	}
	done, err := s.start(ctx)
	if err != nil {
		return storage.VerifyReport{}, err
	}
	defer done()
	rep := storage.VerifyReport{ID: id}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		row, err := s.readSession(ctx, tx, id, "")
		if err != nil {
			if errors.Is(err, storage.ErrNewerFormat) {
				rep.NewerFormat = err
				return nil
			}
			return err
		}
		rep.Damaged, err = s.verifyChunks(ctx, tx, row, &rep)
		return err
	})
	if err != nil {
		return storage.VerifyReport{}, s.wrap(ctx, "verify session "+id, err)
	}
	return rep, nil
}

// verifyChunks walks the chunks page by page. It returns the damage found (nil if none) and
// an error only when the database failed.
func (s *Store) verifyChunks(ctx context.Context, tx pgx.Tx, row rowState, rep *storage.VerifyReport) (damage, err error) {
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
			rep.Frames++
			rep.Records += int(c.last - c.first + 1)
			rep.LastSeq = c.last
			expect = c.last + 1
		}
		if len(page) < pageRows {
			break
		}
	}
	if rep.LastSeq != row.last {
		return damaged("the session row says last_seq %d, its records end at %d", row.last, rep.LastSeq), nil
	}
	if l0 != lay.l0Bytes || l1 != lay.l1Chunks || (lay.openL2 != 0 && lay.openL2 != lastL2) {
		return damaged("the session row's layout %+v disagrees with its chunks (%d level-0 bytes, %d level-1 chunks, last level-2 chunk at %d)",
			lay, l0, l1, lastL2), nil
	}
	rep.TailRecords = int(row.last - lay.l1End)
	return nil, nil
}
