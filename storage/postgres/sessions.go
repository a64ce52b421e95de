package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
)

// metaColumns are the columns scanMeta reads, in its order.
const metaColumns = `id, name, working_dir, model, provider, parent_session, created_ns, updated_ns,
	messages, compactions, context_tokens, preview, leaf, checkpoint, last_seq`

func scanMeta(row pgx.Row) (storage.Meta, error) {
	var m storage.Meta
	var created, updated, messages, compactions, tokens, checkpoint, last int64
	err := row.Scan(&m.ID, &m.Name, &m.WorkingDir, &m.Model, &m.Provider, &m.ParentSession, &created, &updated,
		&messages, &compactions, &tokens, &m.Preview, &m.Leaf, &checkpoint, &last)
	if err != nil {
		return storage.Meta{}, err
	}
	m.Created, m.Updated = fromNanos(created), fromNanos(updated)
	m.Messages, m.Compactions, m.ContextTokens = int(messages), int(compactions), int(tokens)
	m.Checkpoint, m.LastSeq = uint64(checkpoint), uint64(last)
	return m, nil
}

// Times are stored as Unix nanoseconds, so what a caller stored comes back Equal, sub-
// microsecond digits included (timestamptz keeps microseconds).
func fromNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }

func toNanos(t time.Time) (int64, error) {
	if t.Year() < 1678 || t.Year() > 2261 {
		return 0, fmt.Errorf("time %s is outside the years 1678-2261 the store can hold", t.Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

// dirKey is the working directory as the list filter compares it (storage.SameDir).
func dirKey(dir string) string { return strings.TrimRight(dir, "/\\") }

// pgText returns s as the listing's text columns (name, model, provider, preview) and the
// list filter hold it. PostgreSQL's text cannot hold U+0000 ("invalid byte sequence for
// encoding UTF8: 0x00"), and JSON, so a message, may: a session whose first prompt held one
// could be neither saved nor migrated here, and a list query holding one failed. U+FFFD
// stands in for it. (memory writes previews without it; names refuse it.)
func pgText(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

func newNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Create inserts the session row. ErrExists if the id is taken.
func (s *Store) Create(ctx context.Context, h storage.Header, m storage.Meta) error {
	if err := checkID(h.ID); err != nil {
		return err
	}
	done, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer done()
	if h.Created.IsZero() {
		h.Created = s.now()
	}
	if h.Nonce == "" {
		h.Nonce = newNonce()
	}
	if m.Updated.IsZero() {
		m.Updated = h.Created
	}
	created, err := toNanos(h.Created)
	if err != nil {
		return fmt.Errorf("create session %s: %w", h.ID, err)
	}
	updated, err := toNanos(m.Updated)
	if err != nil {
		return fmt.Errorf("create session %s: %w", h.ID, err)
	}
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	tag, err := s.db().Exec(sctx, `INSERT INTO sessionmem_sessions
		(id, format, nonce, created_ns, working_dir, dir_key, parent_session, name, model, provider, updated_ns,
		 messages, compactions, context_tokens, preview, match_name, match_preview, leaf, checkpoint)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, 0)
		ON CONFLICT (id) DO NOTHING`,
		h.ID, FormatVersion, h.Nonce, created, h.WorkingDir, dirKey(h.WorkingDir), h.ParentSession,
		pgText(m.Name), pgText(m.Model), pgText(m.Provider), updated, m.Messages, m.Compactions, m.ContextTokens, pgText(m.Preview),
		pgText(strings.ToLower(m.Name)), pgText(strings.ToLower(m.Preview)), m.Leaf)
	if err != nil {
		return s.wrap(ctx, "create session "+h.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("session %s: %w", h.ID, storage.ErrExists)
	}
	return nil
}

// Get returns one session's metadata.
func (s *Store) Get(ctx context.Context, id string) (storage.Meta, error) {
	if err := checkID(id); err != nil {
		return storage.Meta{}, err
	}
	done, err := s.start(ctx)
	if err != nil {
		return storage.Meta{}, err
	}
	defer done()
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	m, err := scanMeta(s.db().QueryRow(sctx, "SELECT "+metaColumns+" FROM sessionmem_sessions WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Meta{}, notFound(id)
	}
	if err != nil {
		return storage.Meta{}, s.wrap(ctx, "get session "+id, err)
	}
	return m, nil
}

// List returns the sessions q selects, newest first, filtered and paged in SQL: one index
// range scan on (dir_key, updated_ns, id) or (updated_ns, id).
func (s *Store) List(ctx context.Context, q storage.ListQuery) ([]storage.Meta, error) {
	done, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	var sql strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	sql.WriteString("SELECT " + metaColumns + " FROM sessionmem_sessions WHERE true")
	if q.WorkingDir != "" {
		sql.WriteString(" AND dir_key = " + arg(dirKey(q.WorkingDir)))
	}
	if q.Text != "" {
		// storage.MatchText: a case-insensitive substring of the name or the preview, with Go's
		// lower-casing on both sides (match_* columns hold strings.ToLower of the fields), so
		// the database's locale plays no part.
		t := arg(pgText(strings.ToLower(q.Text)))
		sql.WriteString(" AND (strpos(match_name, " + t + ") > 0 OR strpos(match_preview, " + t + ") > 0)")
	}
	if q.After != nil {
		u, err := toNanos(q.After.Updated)
		if err != nil {
			u = math.MinInt64
			if q.After.Updated.Year() > 2000 {
				u = math.MaxInt64
			}
		}
		un, id := arg(u), arg(q.After.ID)
		sql.WriteString(" AND updated_ns <= " + un + " AND (updated_ns < " + un + " OR id > " + id + ")")
	}
	sql.WriteString(" ORDER BY updated_ns DESC, id")
	if q.Limit > 0 {
		sql.WriteString(" LIMIT " + arg(q.Limit))
	}
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	rows, err := s.db().Query(sctx, sql.String(), args...)
	if err != nil {
		return nil, s.wrap(ctx, "list sessions", err)
	}
	defer rows.Close()
	out := []storage.Meta{}
	for rows.Next() {
		m, err := scanMeta(rows)
		if err != nil {
			return nil, s.wrap(ctx, "list sessions", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, "list sessions", err)
	}
	return out, nil
}

// Delete removes the session row; its chunks and keys go with it (ON DELETE CASCADE), in one
// statement. A writer holding the session waits for it, and then finds it gone.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	done, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer done()
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	tag, err := s.db().Exec(sctx, "DELETE FROM sessionmem_sessions WHERE id = $1", id)
	if err != nil {
		return s.wrap(ctx, "delete session "+id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(id)
	}
	return nil
}

// IDs returns every session id in byte order.
func (s *Store) IDs(ctx context.Context) ([]string, error) {
	done, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	rows, err := s.db().Query(sctx, "SELECT id FROM sessionmem_sessions ORDER BY id")
	if err != nil {
		return nil, s.wrap(ctx, "list session ids", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.wrap(ctx, "list session ids", err)
	}
	return ids, nil
}

// Usage is how much of the database the store's tables take.
type Usage struct {
	// Total is pg_total_relation_size of every sessionmem table (heap, TOAST, indexes).
	Total int64
	// Records is the part of Total holding records (the chunks table, its TOAST and index).
	Records int64
	// Documents is the part of Total holding search documents (the documents table, its
	// TOAST and indexes, GIN included).
	Documents int64
	// Sessions and Chunks count rows.
	Sessions, Chunks int64
	// RawBytes is the records' size as plain JSONL (sum of the chunks' raw sizes).
	RawBytes int64
}

// Size implements storage.Sizer with Usage's figures: Sessions is the records table, Index
// the documents table.
func (s *Store) Size(ctx context.Context) (storage.Size, error) {
	u, err := s.Usage(ctx)
	if err != nil {
		return storage.Size{}, err
	}
	return storage.Size{Total: u.Total, Sessions: u.Records, Index: u.Documents}, nil
}

// Usage measures the store's tables. Sizes include dead rows that VACUUM has not reclaimed.
func (s *Store) Usage(ctx context.Context) (Usage, error) {
	done, err := s.start(ctx)
	if err != nil {
		return Usage{}, err
	}
	defer done()
	sctx, cancel := s.stmtCtx(ctx)
	defer cancel()
	var u Usage
	err = s.db().QueryRow(sctx, `SELECT
		pg_total_relation_size('sessionmem_sessions') + pg_total_relation_size('sessionmem_chunks') +
		pg_total_relation_size('sessionmem_keys') + pg_total_relation_size('sessionmem_schema') +
		pg_total_relation_size('sessionmem_documents') + pg_total_relation_size('sessionmem_settings') +
		pg_total_relation_size('sessionmem_doc_stats'),
		pg_total_relation_size('sessionmem_chunks'), pg_total_relation_size('sessionmem_documents'),
		(SELECT count(*) FROM sessionmem_sessions),
		(SELECT count(*) FROM sessionmem_chunks),
		(SELECT coalesce(sum(raw_bytes), 0) FROM sessionmem_chunks)::bigint`).
		Scan(&u.Total, &u.Records, &u.Documents, &u.Sessions, &u.Chunks, &u.RawBytes)
	if err != nil {
		return Usage{}, s.wrap(ctx, "measure the store", err)
	}
	return u, nil
}
