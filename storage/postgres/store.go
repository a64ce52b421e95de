package postgres

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessionmem/sessionmem/storage"
)

// FormatVersion is the session format this build writes (Header.Version) and reads up to.
const FormatVersion = 1

// Defaults for Options.
const (
	// DefaultTailRecords and DefaultTailBytes: a session's level-0 chunks (one per Append)
	// are merged into a level-1 chunk when they hold this many records or raw bytes.
	DefaultTailRecords = 32
	DefaultTailBytes   = 32 << 10
	// DefaultMergeChunks: that many level-1 chunks are merged into the open level-2 chunk.
	DefaultMergeChunks = 4
	// DefaultChunkRecords and DefaultChunkBytes bound a level-2 chunk, so a read from any
	// record decodes at most this much before it (docs/BENCHMARKS.md has the ratios).
	DefaultChunkRecords = 1024
	DefaultChunkBytes   = 1 << 20
	// DefaultStatementTimeout bounds every statement on the server (statement_timeout) and,
	// with a few seconds of slack, on the client.
	DefaultStatementTimeout = 15 * time.Second
	// DefaultConnectTimeout bounds a connection attempt, so a call while the database is
	// unreachable fails within seconds.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultIdleInTransactionTimeout ends a transaction whose client stopped talking (a
	// server frozen or cut off while holding a session's row lock), releasing the lock.
	DefaultIdleInTransactionTimeout = time.Minute
	// DefaultMaxConns is the pool size unless the URL sets pool_max_conns.
	DefaultMaxConns = 8
	// DefaultScoreBudget is how many documents one page of a search scores at most (see
	// search_rank.go).
	DefaultScoreBudget = 20000
	// DefaultMaxTextBytes is how much of a document's text is indexed.
	DefaultMaxTextBytes = 1 << 20
	// DefaultBackfillInterval is how often the backfill looks for records without documents.
	DefaultBackfillInterval = time.Minute
)

// clientSlack is how much longer the client waits for a statement than the server's
// statement_timeout, so the server's own timeout (a clear error) normally fires first.
const clientSlack = 5 * time.Second

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// TailRecords, TailBytes, MergeChunks, ChunkRecords and ChunkBytes: see the defaults of
	// the same names. Tests lower them.
	TailRecords  int
	TailBytes    int
	MergeChunks  int
	ChunkRecords int
	ChunkBytes   int
	// StatementTimeout overrides DefaultStatementTimeout; a statement_timeout in the URL
	// wins over both.
	StatementTimeout time.Duration
	// ConnectTimeout overrides DefaultConnectTimeout; a connect_timeout in the URL wins.
	ConnectTimeout time.Duration
	// IdleInTransactionTimeout overrides DefaultIdleInTransactionTimeout; an
	// idle_in_transaction_session_timeout in the URL wins.
	IdleInTransactionTimeout time.Duration
	// Logger receives warnings. nil discards.
	Logger *slog.Logger
	// Now is the clock for times the store sets (Create without Created). nil is time.Now.
	Now func() time.Time
	// Docs turns a stored record into its search documents (memory.Docs). With it, the
	// documents of every Update's records are written right after it committed (DocsDelay;
	// docqueue.go), Search on this Store finds them at once and on other servers after
	// DocsDelay and the write, and a background backfill builds the documents of records
	// stored without them (before schema 2, by a handle without Docs, or by a process that
	// died before it wrote them). nil: no documents are written, and Search finds only what
	// handles with Docs wrote.
	Docs storage.DocsFunc
	// ScoreBudget is how many documents one page of a search scores at most (default
	// DefaultScoreBudget; negative: no limit). Past it the result is Windowed. See
	// search_rank.go.
	ScoreBudget int
	// StatsMaxAge is how long a process reuses a term's document frequency (default
	// DefaultStatsMaxAge; negative: count at every search). See search_stats.go.
	StatsMaxAge time.Duration
	// tier overrides minTier, and roundDocs the ranker's roundDocs (tests: a tier of a few
	// documents, a round per term).
	tier, roundDocs int
	// MaxTextBytes is how much of a document's text is indexed (default 1 MiB, as the local
	// index); the rest of a giant tool output is not searchable.
	MaxTextBytes int
	// BackfillInterval is how often the background backfill looks for records without
	// documents after its first pass at start (default DefaultBackfillInterval; negative:
	// only Reindex builds them).
	BackfillInterval time.Duration
	// DocsDelay is how long after a save its documents are written, so that the saves of
	// that time share one write (default DefaultDocsDelay; negative: at once).
	DocsDelay time.Duration
	// NoCreate refuses a database (the schema search_path selects) that holds no sessionmem
	// tables instead of creating them: Ready, and so every call, fails with an error wrapping
	// ErrNoStore and nothing is written to the database. It is for the commands that only read
	// or change what is stored, where an empty database most often means a URL naming the
	// wrong one. A schema of an older version is still migrated, one of a newer version still
	// refused (storage.ErrNewerFormat).
	NoCreate bool
}

// Store is a PostgreSQL session store: a storage.Store that any number of processes on any
// number of machines share. It is safe for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	secret   string        // the password, scrubbed from every error text
	stmt     time.Duration // client-side bound of one statement
	label    string        // the URL without its password
	readyMu  sync.Mutex    // serialises schema checks
	readyAt  bool          // the schema was checked (or migrated) by this process
	readyErr error         // the last failed check, repeated to calls within readyRetry
	failedAt time.Time
	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	// The background backfill (docs.go): started by the first successful ready when Docs
	// is set, stopped by Close.
	bgCancel context.CancelFunc
	bgDone   chan struct{}
	backfill backfillState
	// docs is the queue of documents written after their saves committed (docqueue.go).
	docs docQueue
	// stats remembers document frequencies for searches (search_stats.go).
	stats statsCache
	// scored and rounds count the documents searches scored and the rounds they ran
	// (tests and benchmarks read them).
	scored, rounds atomic.Int64
}

var _ storage.Store = (*Store)(nil)

// New returns a Store for the database at url (postgres:// or postgresql://, the scheme in
// any letter case, or a key=value connection string) without connecting: the first call connects and checks the schema, and
// each call retries what failed before, so a server can start while the database is down.
// Only a malformed url is an error (wrapping ErrMalformedURL, refused before any connection
// attempt; see CheckURL).
func New(url string, opts Options) (*Store, error) {
	if err := CheckURL(url); err != nil {
		return nil, err
	}
	url = NormalizeURL(url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, parseError(url, err)
	}
	for _, o := range []struct {
		v   *int
		def int
	}{{&opts.TailRecords, DefaultTailRecords}, {&opts.TailBytes, DefaultTailBytes}, {&opts.MergeChunks, DefaultMergeChunks},
		{&opts.ChunkRecords, DefaultChunkRecords}, {&opts.ChunkBytes, DefaultChunkBytes}} {
		if *o.v <= 0 {
			*o.v = o.def
		}
	}
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = DefaultStatementTimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.IdleInTransactionTimeout <= 0 {
		opts.IdleInTransactionTimeout = DefaultIdleInTransactionTimeout
	}
	if opts.ScoreBudget == 0 {
		opts.ScoreBudget = DefaultScoreBudget
	}
	if opts.StatsMaxAge == 0 {
		opts.StatsMaxAge = DefaultStatsMaxAge
	}
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = DefaultMaxTextBytes
	}
	if opts.BackfillInterval == 0 {
		opts.BackfillInterval = DefaultBackfillInterval
	}
	if opts.DocsDelay == 0 {
		opts.DocsDelay = DefaultDocsDelay
	}
	if opts.DocsDelay < 0 {
		opts.DocsDelay = 0
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = opts.ConnectTimeout
	}
	rp := cc.RuntimeParams
	stmt := opts.StatementTimeout
	if v, ok := rp["statement_timeout"]; ok {
		if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
			stmt = time.Duration(ms) * time.Millisecond
		}
	} else {
		rp["statement_timeout"] = strconv.FormatInt(stmt.Milliseconds(), 10)
	}
	if _, ok := rp["idle_in_transaction_session_timeout"]; !ok {
		rp["idle_in_transaction_session_timeout"] = strconv.FormatInt(opts.IdleInTransactionTimeout.Milliseconds(), 10)
	}
	if _, ok := rp["jit"]; !ok {
		// JIT compilation of a plan costs 100 ms or more, far more than any query here saves
		// by it: the planner's cost estimates of a search on a large documents table passed
		// jit_above_cost and made every search take 0.3 s.
		rp["jit"] = "off"
	}
	if _, ok := rp["application_name"]; !ok {
		rp["application_name"] = "sessionmem"
	}
	if !hasParam(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	// A pooled connection is pinged before use when it sat idle for a second (pgxpool's
	// default); bound that ping so a database that stopped answering fails the call fast.
	cfg.PingTimeout = opts.ConnectTimeout
	cfg.HealthCheckPeriod = 15 * time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL pool: %s", RedactText(err.Error(), cc.Password))
	}
	s := &Store{pool: pool, opts: opts, log: opts.Logger, now: opts.Now, secret: cc.Password,
		stmt: stmt + clientSlack, label: Redact(url), docs: docQueue{wake: make(chan struct{}, 1)}}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Open is New followed by Ready: it fails at once, with an error wrapping
// storage.ErrUnavailable, when the database cannot be reached or refuses the credentials,
// with one wrapping storage.ErrNewerFormat when its schema is newer than this build, and
// with Options.NoCreate, with one wrapping ErrNoStore when it has no sessionmem tables.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	s, err := New(url, opts)
	if err != nil {
		return nil, err
	}
	if err := s.Ready(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Ready connects, and creates (unless Options.NoCreate) or migrates the schema if this process
// has not done so yet. Every call runs it first, so it only needs calling to find problems
// early.
func (s *Store) Ready(ctx context.Context) error {
	done, err := s.enter()
	if err != nil {
		return err
	}
	defer done()
	return s.ready(ctx)
}

// ready checks the schema once per process; a failure is retried by the next call.
func (s *Store) ready(ctx context.Context) error {
	s.readyMu.Lock()
	defer s.readyMu.Unlock()
	if s.readyAt {
		return nil
	}
	if s.readyErr != nil && time.Since(s.failedAt) < readyRetry {
		return s.readyErr
	}
	if err := s.ensureSchema(ctx); err != nil {
		if ctx.Err() == nil {
			s.readyErr, s.failedAt = err, time.Now()
		}
		return err
	}
	s.readyAt, s.readyErr = true, nil
	s.startDocWriter()
	s.startBackfill()
	return nil
}

// readyRetry: while the database is unreachable at start, calls within this long of a failed
// check get its error at once instead of each waiting for a connection attempt in turn.
const readyRetry = time.Second

// Label is the store's URL without its password, for logs and messages.
func (s *Store) Label() string { return s.label }

// enter registers a call, failing after Close.
func (s *Store) enter() (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, storage.ErrClosed
	}
	s.inflight.Add(1)
	return s.inflight.Done, nil
}

// start registers a call and makes sure the schema is ready.
func (s *Store) start(ctx context.Context) (func(), error) {
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		done()
		return nil, err
	}
	return done, nil
}

// Close waits for running calls and closes the connection pool. Later calls return
// storage.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stopBackfill()
	s.inflight.Wait()
	s.stopDocWriter() // after the saves: it writes what they queued
	s.pool.Close()
	return nil
}

// acquire takes a pooled connection within the connect timeout. The pool pings a connection
// that sat idle before handing it out and connects anew when none is left, each bounded by
// the connect timeout; with the database hung (stopped, or its host frozen) every idle
// connection's ping timed out in turn, then the connection attempt, and a save answered after
// 20-25 s. One bound over all of it keeps a call that cannot get a connection to ~5 s.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	return s.pool.Acquire(actx)
}

// stmtCtx bounds one statement on the client side.
func (s *Store) stmtCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.stmt)
}

func checkID(id string) error {
	if !storage.ValidID(id) {
		return fmt.Errorf("%w %q: use 1-128 characters from A-Z a-z 0-9 _ . - (not \".\" or \"..\")", storage.ErrInvalidID, id)
	}
	return nil
}

func notFound(id string) error {
	return fmt.Errorf("session %s: %w", id, storage.ErrNotFound)
}
