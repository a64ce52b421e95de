package ftsindex

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
)

// Stats describe the index on disk.
type Stats struct {
	// File is the database in use; Bytes its size with its -wal file.
	File  string
	Bytes int64
	// Sessions and Docs count what is indexed.
	Sessions, Docs int64
}

// Stats returns the index's size and counts.
func (ix *Index) Stats(ctx context.Context) (Stats, error) {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return Stats{}, err
	}
	defer release()
	st := Stats{File: db.path}
	st.Bytes, err = db.size()
	if err != nil {
		return Stats{}, err
	}
	err = db.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM docs)`).Scan(&st.Sessions, &st.Docs)
	return st, classify(err)
}

// Size returns the bytes the index takes on disk (database and -wal file).
func (ix *Index) Size(ctx context.Context) (int64, error) {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	return db.size()
}

// size stats the files; it never opens them (closing a descriptor of the database would drop
// this process's SQLite locks on it).
func (db *database) size() (int64, error) {
	var n int64
	for _, p := range []string{db.path, db.path + "-wal"} {
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			n += fi.Size()
		case !os.IsNotExist(err):
			return 0, err
		}
	}
	return n, nil
}

// Verify checks the whole database (SQLite's integrity_check, FTS5's integrity-check, and
// that every doc has its index row) and returns an error wrapping ErrCorrupt describing the
// first problems. It reads every page: seconds for a large index.
func (ix *Index) Verify(ctx context.Context) error {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	var problems []string
	rows, err := db.r.QueryContext(ctx, `PRAGMA integrity_check(20)`)
	if err != nil {
		return classify(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return classify(err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	// FTS5's check writes nothing but is spelled as an INSERT, so it runs on the writer.
	if err := db.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO fts(fts) VALUES ('integrity-check')`)
		return err
	}); err != nil {
		problems = append(problems, "fts5: "+err.Error())
	}
	var docs, rowsInFTS int64
	if err := db.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM docs), (SELECT count(*) FROM fts_docsize)`).Scan(&docs, &rowsInFTS); err != nil {
		return classify(err)
	}
	if docs != rowsInFTS {
		problems = append(problems, fmt.Sprintf("%d docs but %d full-text rows", docs, rowsInFTS))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, db.path, strings.Join(problems, "; "))
	}
	return nil
}

// Optimize merges the full-text index into one segment and gives the freed pages back to
// the file system: smaller and faster to search. Worth running after a full rebuild; it
// rewrites the whole index (one write transaction), so not on every save.
func (ix *Index) Optimize(ctx context.Context) error {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	err = db.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO fts(fts) VALUES ('optimize')`)
		return err
	})
	if err != nil {
		return err
	}
	return db.vacuum(ctx)
}

// vacuum returns free pages to the file system (incremental auto-vacuum) and truncates the
// WAL, so that the file's size is the index's.
func (db *database) vacuum(ctx context.Context) error {
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA incremental_vacuum`); err != nil {
		return classify(err)
	}
	_, err = conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return classify(err)
}
