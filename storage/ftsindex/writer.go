package ftsindex

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sessionmem/sessionmem/internal/buildinfo"
)

// The sessionmem version that created an index file is recorded in it, beside the schema
// version in PRAGMA user_version, so that a build too old to read the file can name the
// version it needs. It lives in a table of its own, outside the schema proper: files of
// earlier builds lack it (and any build ignores it), so it needs no new schema version.

// recordWriter records this build's version in a database being created.
func recordWriter(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS sessionmem_writer (version TEXT NOT NULL)`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO sessionmem_writer (version) VALUES (?)`, buildinfo.Version())
	return err
}

// newerError is Open's refusal of a database of a newer schema version v, naming the
// sessionmem version that created it when the file records one.
func newerError(ctx context.Context, db *database, v int) error {
	var by string
	// No table (a file of a build that did not record it): the message goes without.
	_ = db.r.QueryRowContext(ctx, `SELECT version FROM sessionmem_writer LIMIT 1`).Scan(&by)
	msg := fmt.Sprintf("%s is version %d", db.path, v)
	if by = buildinfo.Recorded(by); by != "" {
		msg += ", written by sessionmem " + by
	}
	return fmt.Errorf("%w: %s; this sessionmem (%s) reads up to %d: %s", ErrNewerFormat, msg, buildinfo.Version(), schemaVersion, buildinfo.Upgrade(by))
}
