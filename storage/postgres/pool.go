package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// boundedPool is the pool as the store's statements use it: each statement (or transaction)
// gets its connection through Store.acquire, within the connect timeout, and gives it back
// when done, as pgxpool's own methods do. Through pgxpool's methods the wait for a connection
// was bounded only by the statement's deadline (20 s): with the database hung, the pool pinged
// each idle connection in turn (5 s each) before connecting (5 s more).
type boundedPool struct{ s *Store }

// db returns the store's pool with bounded connection waits.
func (s *Store) db() boundedPool { return boundedPool{s} }

var _ dbtx = boundedPool{}

// Exec runs a statement on a pooled connection.
func (b boundedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c, err := b.s.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.Exec(ctx, sql, args...)
}

// Query runs a query; the connection goes back to the pool when the rows are closed.
func (b boundedPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c, err := b.s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &releasingRows{Rows: rows, c: c}, nil
}

// QueryRow runs a query; the connection goes back to the pool after Scan.
func (b boundedPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c, err := b.s.acquire(ctx)
	if err != nil {
		return errRow{err}
	}
	return &releasingRow{row: c.QueryRow(ctx, sql, args...), c: c}
}

// SendBatch sends a batch; the connection goes back to the pool when the results are closed.
func (b boundedPool) SendBatch(ctx context.Context, batch *pgx.Batch) pgx.BatchResults {
	c, err := b.s.acquire(ctx)
	if err != nil {
		return errBatch{err}
	}
	return &releasingBatch{BatchResults: c.SendBatch(ctx, batch), c: c}
}

// Begin starts a transaction (pgx.BeginFunc).
func (b boundedPool) Begin(ctx context.Context) (pgx.Tx, error) {
	return b.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx starts a transaction; the connection goes back to the pool at Commit or Rollback
// (a connection left inside a transaction is closed by Release).
func (b boundedPool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	c, err := b.s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := c.BeginTx(ctx, opts)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &releasingTx{Tx: tx, c: c}, nil
}

type releasingRows struct {
	pgx.Rows
	c    *pgxpool.Conn
	once sync.Once
}

func (r *releasingRows) Close() {
	r.Rows.Close()
	r.once.Do(r.c.Release)
}

func (r *releasingRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close() // pgx closes rows at their end; so does this their connection
	return false
}

type releasingRow struct {
	row pgx.Row
	c   *pgxpool.Conn
}

func (r *releasingRow) Scan(dest ...any) error {
	defer r.c.Release()
	return r.row.Scan(dest...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type releasingBatch struct {
	pgx.BatchResults
	c    *pgxpool.Conn
	once sync.Once
}

func (r *releasingBatch) Close() error {
	err := r.BatchResults.Close()
	r.once.Do(r.c.Release)
	return err
}

type errBatch struct{ err error }

func (e errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, e.err }
func (e errBatch) Query() (pgx.Rows, error)         { return nil, e.err }
func (e errBatch) QueryRow() pgx.Row                { return errRow{e.err} }
func (e errBatch) Close() error                     { return e.err }
func (e errBatch) Tx() pgx.Tx                       { return nil }

type releasingTx struct {
	pgx.Tx
	c    *pgxpool.Conn
	once sync.Once
}

func (t *releasingTx) Commit(ctx context.Context) error {
	err := t.Tx.Commit(ctx)
	t.once.Do(t.c.Release)
	return err
}

func (t *releasingTx) Rollback(ctx context.Context) error {
	err := t.Tx.Rollback(ctx)
	t.once.Do(t.c.Release)
	return err
}
