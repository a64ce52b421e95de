package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessionmem/sessionmem/storage"
)

//go:embed schema/*.sql
var schemaFiles embed.FS

// migration is one versioned schema change: schema/NNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded schema changes in version order. Versions start at 1 and
// leave no gap (a test checks it).
func migrations() []migration {
	ents, err := fs.ReadDir(schemaFiles, "schema")
	if err != nil {
		panic(err)
	}
	var out []migration
	for _, e := range ents {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("storage/postgres: schema file without a version: " + e.Name())
		}
		b, err := schemaFiles.ReadFile("schema/" + e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out
}

// SchemaVersion is the newest schema this build knows; a database at a newer version is
// refused with storage.ErrNewerFormat.
var SchemaVersion = len(migrations())

// schemaLockKey is the advisory lock that serialises schema changes between processes.
const schemaLockKey = 0x73657373696f6e6d // "sessionm"

// ensureSchema brings the database's schema to SchemaVersion. When it is already there it
// only reads the version (no DDL, so a user without CREATE rights can run sessionmem once
// the owner has set it up). Otherwise it takes an advisory lock, so servers starting at once
// migrate once, and applies the missing versions in one transaction.
func (s *Store) ensureSchema(ctx context.Context) error {
	v, err := s.schemaVersion(ctx, s.db())
	if err != nil {
		return s.wrap(ctx, "connect", err)
	}
	if v == SchemaVersion {
		return nil
	}
	if v > SchemaVersion {
		return s.newerSchema(ctx, s.db(), v)
	}
	if v == 0 && s.opts.NoCreate {
		return s.noStore(ctx, s.db())
	}
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	err = pgx.BeginFunc(sctx, s.db(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(sctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLockKey)); err != nil {
			return err
		}
		v, err := s.schemaVersion(sctx, tx)
		if err != nil {
			return err
		}
		if v > SchemaVersion {
			return s.newerSchema(sctx, tx, v)
		}
		if v == 0 && s.opts.NoCreate {
			// The tables were there a moment ago (an older version, to migrate) and have been
			// dropped since: the same refusal as had they never been there.
			return s.noStore(sctx, tx)
		}
		if v == 0 {
			_, err := tx.Exec(sctx, `CREATE TABLE IF NOT EXISTS sessionmem_schema (
				id int PRIMARY KEY CHECK (id = 1),
				version int NOT NULL,
				updated_ns bigint NOT NULL)`)
			if err != nil {
				return err
			}
		}
		for _, m := range migrations() {
			if m.version <= v {
				continue
			}
			if _, err := tx.Exec(sctx, m.sql); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
		}
		_, err = tx.Exec(sctx, `INSERT INTO sessionmem_schema (id, version, updated_ns) VALUES (1, $1, $2)
			ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_ns = excluded.updated_ns`,
			SchemaVersion, s.now().UnixNano())
		if err != nil {
			return err
		}
		return recordWriter(sctx, tx)
	})
	if errors.Is(err, storage.ErrNewerFormat) || errors.Is(err, ErrNoStore) {
		return err
	}
	if err != nil {
		return s.wrap(ctx, "create or migrate the sessionmem tables", err)
	}
	if v == 0 {
		s.log.Info("storage: created the sessionmem tables", "store", s.label, "schema", SchemaVersion)
	} else {
		s.log.Info("storage: migrated the sessionmem tables", "store", s.label, "from", v, "to", SchemaVersion)
	}
	return nil
}

// dbtx is what both the pool and a transaction offer.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// schemaVersion reads the schema version, 0 when the tables do not exist yet.
func (s *Store) schemaVersion(ctx context.Context, q dbtx) (int, error) {
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	// pg_tables is read with the statement's snapshot; to_regclass would consult this
	// connection's catalog cache, which may not yet know a table another server just created
	// while we waited for the advisory lock.
	var exists bool
	err := q.QueryRow(sctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables
		WHERE schemaname = current_schema() AND tablename = 'sessionmem_schema')`).Scan(&exists)
	if err != nil || !exists {
		return 0, err
	}
	var v int
	err = q.QueryRow(sctx, "SELECT version FROM sessionmem_schema WHERE id = 1").Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

// recordWriter records, in the transaction that moved the schema to SchemaVersion, the
// sessionmem version that did: a build that finds the schema newer than it knows then names
// the version it needs (newerSchema). written_by is not part of the versioned schema: it is
// added here when missing, so databases of earlier builds gain it at their next migration,
// and a build that does not know it ignores it.
func recordWriter(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `ALTER TABLE sessionmem_schema ADD COLUMN IF NOT EXISTS written_by text NOT NULL DEFAULT ''`); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE sessionmem_schema SET written_by = $1 WHERE id = 1`, storage.WriterVersion())
	return err
}

// newerSchema is the refusal of a database whose schema version v is newer than this build
// knows, naming the sessionmem version that migrated it when the database records one.
func (s *Store) newerSchema(ctx context.Context, q dbtx, v int) error {
	var by string
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	// No column (a database migrated by a build that did not record it): no name. In a
	// transaction the failed statement aborts it, which the caller rolls back anyway.
	_ = q.QueryRow(sctx, `SELECT written_by FROM sessionmem_schema WHERE id = 1`).Scan(&by)
	return &storage.NewerFormatError{What: "the database's sessionmem schema", Version: v, Newest: SchemaVersion, WrittenBy: by}
}

// ErrNoStore is wrapped by the error of a Store opened with Options.NoCreate on a database
// (or the schema its search_path selects) that holds no sessionmem tables.
var ErrNoStore = errors.New("no sessionmem store")

// noStoreError is ErrNoStore with where the tables were looked for; its text holds no part of
// the URL but the database, schema and host names.
type noStoreError struct{ where string }

func (e *noStoreError) Error() string { return "no sessionmem store in " + e.where }
func (e *noStoreError) Unwrap() error { return ErrNoStore }

// noStore is the refusal of a database without sessionmem tables for a NoCreate store. It
// names the database and schema as the server resolved them (a URL without a database name
// means the user's), and the host from the URL; the schema only when it is not public, so
// that a search_path naming a schema of its own is visible in the message.
func (s *Store) noStore(ctx context.Context, q dbtx) error {
	var db, schema string
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	err := q.QueryRow(sctx, `SELECT current_database(), coalesce(current_schema(), '')`).Scan(&db, &schema)
	if err != nil {
		return s.wrap(ctx, "connect", err)
	}
	where := "database " + db
	switch schema {
	case "public":
	case "":
		// search_path names no schema that exists: the tables could not be anywhere.
		where += " (its search_path names no existing schema)"
	default:
		where += " (schema " + schema + ")"
	}
	cc := s.pool.Config().ConnConfig
	if strings.HasPrefix(cc.Host, "/") {
		where += " on the local socket in " + cc.Host // a Unix socket's directory
	} else {
		where += " at " + net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	}
	return &noStoreError{where: RedactText(where, s.secret)}
}
