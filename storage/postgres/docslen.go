package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Documents written before schema 4 have no len (BM25's document length): the migration
// adds the column without touching the rows, which would have rewritten the whole table
// (and its GIN index) while every search and document write waited for the migration's lock.
// The background job of every store with Docs (docs.go), and Reindex, fill it instead, a
// batch at a time: the length read off the tsvector's positions (tsvectorLength; the records
// are not read again), in short transactions that skip the rows another server is filling.
// A search ranks a document without len as of average length meanwhile. The documents still
// to fill are the entries of a partial index, so finding them costs nothing once it is empty.

// lenBatch is how many documents one transaction of the fill covers.
const lenBatch = 500

// fillLengths sets len of every document that has none, and returns how many it set.
func (s *Store) fillLengths(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.fillLengthBatch(ctx)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

func (s *Store) fillLengthBatch(ctx context.Context) (int, error) {
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	n := 0
	err := pgx.BeginFunc(sctx, s.db(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(sctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		rows, err := tx.Query(sctx, `SELECT doc, terms::text FROM sessionmem_documents WHERE len IS NULL
			ORDER BY doc LIMIT $1 FOR UPDATE SKIP LOCKED`, lenBatch)
		if err != nil {
			return err
		}
		var docs []int64
		var lens []int32
		var buf tsvBuf
		for rows.Next() {
			var doc int64
			var vec []byte
			if err := rows.Scan(&doc, &vec); err != nil {
				rows.Close()
				return err
			}
			n, err := tsvectorLength(vec, &buf)
			if err != nil {
				rows.Close()
				return err
			}
			docs = append(docs, doc)
			lens = append(lens, int32(n))
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(docs) == 0 {
			return err
		}
		tag, err := tx.Exec(sctx, `UPDATE sessionmem_documents d SET len = u.len
			FROM unnest($1::bigint[], $2::int[]) AS u(doc, len) WHERE d.doc = u.doc AND d.len IS NULL`, docs, lens)
		n = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, s.wrap(ctx, "fill the search documents' lengths", err)
	}
	return n, nil
}

// fillLengthsLogged runs fillLengths and logs what it did when it did anything.
func (s *Store) fillLengthsLogged(ctx context.Context) error {
	start := time.Now()
	n, err := s.fillLengths(ctx)
	if n > 0 {
		s.log.Info("storage: search documents' lengths filled", "store", s.label, "documents", n, "took", time.Since(start).Round(time.Millisecond))
	}
	return err
}

// checkDocStats recounts the documents and their lengths and sets sessionmem_doc_stats to
// the count when it differs (Reindex; the triggers keep it exact, but a table emptied with
// TRUNCATE, or rows written with triggers disabled, would leave it wrong). The count holds a
// SHARE lock on the documents for one scan: documents are not written meanwhile (saves are
// not held up, their documents wait), searches go on.
func (s *Store) checkDocStats(ctx context.Context) error {
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	err := pgx.BeginFunc(sctx, s.db(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(sctx, `LOCK TABLE sessionmem_documents IN SHARE MODE`); err != nil {
			return err
		}
		var docs, lens, terms, sDocs, sLens, sTerms int64
		err := tx.QueryRow(sctx, `SELECT count(*), count(len), coalesce(sum(len), 0)::bigint,
			(SELECT coalesce(sum(docs), 0)::bigint FROM sessionmem_doc_stats), (SELECT coalesce(sum(lens), 0)::bigint FROM sessionmem_doc_stats),
			(SELECT coalesce(sum(terms), 0)::bigint FROM sessionmem_doc_stats)
			FROM sessionmem_documents`).Scan(&docs, &lens, &terms, &sDocs, &sLens, &sTerms)
		if err != nil || (docs == sDocs && lens == sLens && terms == sTerms) {
			return err
		}
		s.log.Warn("storage: search statistics did not match the documents; set to their count", "store", s.label,
			"documents", docs, "counted", sDocs, "lengths", lens, "counted_lengths", sLens)
		_, err = tx.Exec(sctx, `UPDATE sessionmem_doc_stats SET docs = CASE slot WHEN 0 THEN $1::bigint ELSE 0 END,
			lens = CASE slot WHEN 0 THEN $2::bigint ELSE 0 END, terms = CASE slot WHEN 0 THEN $3::bigint ELSE 0 END`, docs, lens, terms)
		return err
	})
	if err != nil {
		return s.wrap(ctx, "check the search statistics", err)
	}
	return nil
}
