package ftsindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SchemaVersion is the format of the database (PRAGMA user_version). An index of an older
// version is replaced by an empty one, which callers then fill again from the store.
const SchemaVersion = 2

// schemaVersion is SchemaVersion, variable so tests can pretend to be a newer release.
var schemaVersion = SchemaVersion

var (
	// ErrNewerFormat is returned by Open when the newest index in the directory was written
	// by a newer sessionmem: rebuilding it would downgrade it under that newer version.
	ErrNewerFormat = errors.New("search index has a newer format")
	// ErrCorrupt wraps SQLite's report that the database is damaged (from any call, and from
	// Verify). Call Reset, then feed the index again from the store.
	ErrCorrupt = errors.New("search index is damaged")
	// ErrClosed is returned by calls on a closed Index.
	ErrClosed = errors.New("search index is closed")
	// ErrInvalid is wrapped by Search for a query it cannot run (bad limit, cursor or filter)
	// and by Index for a malformed batch; the message says what to fix.
	ErrInvalid = errors.New("invalid search")
)

// Options configure an Index. The zero value is usable.
type Options struct {
	// BusyTimeout is how long a write waits for another process's write transaction
	// (default 10 s).
	BusyTimeout time.Duration
	// ReadConns is the size of the read connection pool (default 4).
	ReadConns int
	// MaxTextBytes is how much of a Doc's text is indexed (default 1 MiB); the rest of a
	// giant tool output is not searchable.
	MaxTextBytes int
}

func (o *Options) defaults() {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.ReadConns <= 0 {
		o.ReadConns = 4
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = 1 << 20
	}
}

// Index is the full-text index of one store. See the package doc for its files and promises.
type Index struct {
	dir  string
	opts Options
	// packBudget is packBudget, smaller in tests.
	packBudget int

	mu     sync.RWMutex // held for reading by every call, for writing to switch databases
	cur    *database
	closed bool

	// Background merges (mergeInBackground): at most one at a time, stopped by Close.
	mergeMu sync.Mutex
	merging bool
	noMore  bool
	bg      context.Context
	stopBg  context.CancelFunc
	merges  sync.WaitGroup
}

// database is one open generation of the index file.
type database struct {
	name string // file name in dir
	path string
	dev  uint64
	ino  uint64
	w    *sql.DB // one connection; BEGIN IMMEDIATE
	r    *sql.DB
	m    *sql.DB // one connection, the merges' reads: no memory map (openFile)
	view *view   // what searches cache of this database
}

const filePrefix, fileSuffix = "fts-", ".db"

// Open opens the index in dir (created if missing, 0700), creating an empty database when
// there is none and replacing one that is damaged or of an older format by an empty one. A
// replaced or new index has no progress for any session, so the caller's catch-up (which
// compares each session's last seq with Progress) re-feeds everything. It fails with
// ErrNewerFormat when the index was written by a newer version.
func Open(ctx context.Context, dir string, opts Options) (*Index, error) {
	opts.defaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open search index: %w", err)
	}
	ix := &Index{dir: dir, opts: opts, packBudget: packBudget}
	ix.bg, ix.stopBg = context.WithCancel(context.Background())
	db, err := ix.openNewest(ctx, "")
	if err != nil {
		return nil, err
	}
	ix.cur = db
	return ix, nil
}

// Close closes the database connections. Calls after Close return ErrClosed.
func (ix *Index) Close() error {
	ix.mergeMu.Lock()
	ix.noMore = true
	ix.mergeMu.Unlock()
	ix.stopBg()
	ix.merges.Wait()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	ix.cur.tidy()
	return ix.cur.close()
}

// tidy is what Close does for the file's size, within closeTidyTimeout: it merges the newest
// small segments into one (closeRun) and gives back free pages (shrink). Both are
// housekeeping of derived data: a failure (another process holding the write lock past the
// timeout) leaves them for a later Close.
func (db *database) tidy() {
	ctx, cancel := context.WithTimeout(context.Background(), closeTidyTimeout)
	defer cancel()
	merged, err := db.mergeOnce(ctx, closeRun, closePackLimit)
	db.shrink(ctx, merged && err == nil)
}

// Close gives free pages back to the file system: merges free the pages of the segments
// they replace, and incremental auto-vacuum moves pages from the end of the file into the
// free ones before truncating it. Only when at least a quarter of the file is free, and at
// most shrinkMaxPages pages (16 MiB; tens of milliseconds), so that a process exits promptly
// whatever the index's size; Optimize gives back the rest.
const shrinkMaxPages = 4096

// closeTidyTimeout bounds Close's tidy (a variable for tests on a loaded machine).
var closeTidyTimeout = time.Second

// shrink gives free pages back when a quarter or more of the file is free (see above), or
// any after Close's merge (merged): the merge wrote its segment at the end of the file and
// freed the pages of those it replaced, and the file at rest would otherwise be larger
// than before it (80 KiB of 470 for a store of 1,000 5-message sessions).
func (db *database) shrink(ctx context.Context, merged bool) {
	var pages, free int64
	if err := db.w.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		return
	}
	if err := db.w.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
		return
	}
	if free == 0 || (!merged && 4*free < pages) {
		return
	}
	_, _ = db.w.ExecContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, min(free, shrinkMaxPages)))
}

// mergeInBackground runs Merge on another goroutine unless one is running.
func (ix *Index) mergeInBackground() {
	ix.mergeMu.Lock()
	defer ix.mergeMu.Unlock()
	if ix.merging || ix.noMore {
		return
	}
	ix.merging = true
	ix.merges.Add(1)
	go func() {
		defer ix.merges.Done()
		_ = ix.Merge(ix.bg) // a failure leaves the merge due; the next flush tries again
		ix.mergeMu.Lock()
		ix.merging = false
		ix.mergeMu.Unlock()
	}()
}

// File returns the path of the database file in use.
func (ix *Index) File() string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cur.path
}

// acquire returns the current database, reopening the newest one when the file in use was
// deleted or replaced (by another process's Reset, or by hand); release must be called when
// done. The check is one stat.
func (ix *Index) acquire(ctx context.Context) (*database, func(), error) {
	ix.mu.RLock()
	if ix.closed {
		ix.mu.RUnlock()
		return nil, nil, ErrClosed
	}
	if ix.cur.current() {
		return ix.cur, ix.mu.RUnlock, nil
	}
	ix.mu.RUnlock()
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return nil, nil, ErrClosed
	}
	if !ix.cur.current() {
		db, err := ix.openNewest(ctx, "")
		if err != nil {
			ix.mu.Unlock()
			return nil, nil, err
		}
		ix.cur.close()
		ix.cur = db
	}
	ix.mu.Unlock()
	return ix.acquire(ctx)
}

// current reports whether db's file is still the one at its path (and, where a file open
// elsewhere cannot be deleted, the newest: supersededOnDisk).
func (db *database) current() bool {
	dev, ino, err := statID(db.path)
	return err == nil && dev == db.dev && ino == db.ino && !supersededOnDisk(db.path)
}

func (db *database) close() error {
	return errors.Join(db.w.Close(), db.r.Close(), db.m.Close())
}

// openNewest opens the newest database file in the directory, or creates one when there is
// none or it cannot be used (damaged, older format). skip names a file known to be bad.
func (ix *Index) openNewest(ctx context.Context, skip string) (*database, error) {
	if err := os.MkdirAll(ix.dir, 0o700); err != nil { // removed with everything in it
		return nil, fmt.Errorf("open search index: %w", err)
	}
	for attempt := 0; ; attempt++ {
		if attempt > 8 { // files vanishing or failing faster than they are made
			return nil, fmt.Errorf("open search index in %s: gave up after %d attempts", ix.dir, attempt)
		}
		names, err := ix.list()
		if err != nil {
			return nil, err
		}
		if len(names) == 0 || names[len(names)-1] == skip {
			if _, err := ix.create(ctx); err != nil {
				return nil, err
			}
			continue
		}
		name := names[len(names)-1]
		db, err := ix.openFile(ctx, name)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // replaced under us
		case errors.Is(err, ErrNewerFormat):
			return nil, err
		case errors.Is(err, ErrCorrupt) || errors.Is(err, errOlderFormat):
			skip = name
			continue
		case err != nil:
			return nil, err
		}
		ix.removeOlder(name)
		return db, nil
	}
}

var errOlderFormat = errors.New("older format")

// list returns the database file names in the directory, oldest first.
func (ix *Index) list() ([]string, error) {
	entries, err := os.ReadDir(ix.dir)
	if err != nil {
		return nil, fmt.Errorf("list search index: %w", err)
	}
	var names []string
	for _, e := range entries {
		if _, ok := fileStamp(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	sort.Slice(names, func(i, j int) bool {
		a, _ := fileStamp(names[i])
		b, _ := fileStamp(names[j])
		return a < b
	})
	return names, nil
}

// fileStamp parses fts-<n>.db.
func fileStamp(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, filePrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, fileSuffix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

// create makes a new, empty index database, complete with its schema, and returns its file
// name (fts-<unix nanoseconds>.db). It is built under a temporary name and linked into place
// (link fails if the name exists, so two processes never share a name), so no process ever
// opens a half-made index, and incremental auto-vacuum, which only a new file can take,
// is always set.
func (ix *Index) create(ctx context.Context) (string, error) {
	stamp := time.Now().UnixNano()
	tmp := filepath.Join(ix.dir, fmt.Sprintf("%s%d%s", tmpPrefix, stamp, tmpSuffix))
	defer removeDB(tmp)
	// Made empty first, 0600: SQLite keeps a new file's mode from the umask (0644 here) and
	// gives the -wal and -shm files the database's.
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create search index: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("create search index: %w", err)
	}
	if err := initFile(ctx, tmp); err != nil {
		return "", fmt.Errorf("create search index: %w", err)
	}
	for ; ; stamp++ {
		name := fmt.Sprintf("%s%d%s", filePrefix, stamp, fileSuffix)
		err := os.Link(tmp, filepath.Join(ix.dir, name))
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("create search index: %w", err)
		}
		return name, nil
	}
}

const tmpPrefix, tmpSuffix = ".fts-", ".tmp"

// initFile creates a database at path with the current schema and closes it (its WAL is
// checkpointed and removed on close).
func initFile(ctx context.Context, path string) error {
	// _auto_vacuum is applied before journal_mode fixes the file header: incremental
	// auto-vacuum lets Optimize give back the pages merges free (a merge writes the new
	// segment before freeing the old ones, so without it the file only grows).
	db, err := sql.Open("sqlite", "file:"+escapePath(path)+"?_auto_vacuum=INCREMENTAL&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, stmt := range schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion)); err != nil {
		return err
	}
	if err := recordWriter(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return db.Close()
}

// removeDB deletes a database file and its -wal and -shm files; the -wal and -shm first: a
// database without them is a consistent (if older) database for anyone who opens it
// meanwhile, the reverse would not be.
func removeDB(path string) {
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	os.Remove(path)
}

// removeOlder deletes the database files older than keep, and temporary files a crash left.
func (ix *Index) removeOlder(keep string) {
	names, err := ix.list()
	if err != nil {
		return
	}
	k, _ := fileStamp(keep)
	for _, n := range names {
		if s, _ := fileStamp(n); s < k {
			removeDB(filepath.Join(ix.dir, n))
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(ix.dir, tmpPrefix+"*"+tmpSuffix))
	for _, t := range tmps {
		var stamp int64
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(t), tmpPrefix), tmpSuffix)
		if stamp, err = strconv.ParseInt(name, 10, 64); err == nil && time.Since(time.Unix(0, stamp)) > time.Minute {
			removeDB(t)
		}
	}
}

// openFile opens one database file and makes sure it has the current schema.
func (ix *Index) openFile(ctx context.Context, name string) (*database, error) {
	path := filepath.Join(ix.dir, name)
	dev, ino, err := statID(path)
	if err != nil {
		return nil, err
	}
	base := "file:" + escapePath(path) + "?" + fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=journal_size_limit(67108864)", ix.opts.BusyTimeout.Milliseconds())
	// Cache sizes are what a process may keep of the file in memory (SQLite allocates them
	// outside Go's heap): the writer's 4 MiB holds the pages a transaction updates and the
	// inner pages of the tables it looks up (a 110 MiB index has 2.1 MiB of those; 8 MiB
	// filled up with a large merge's rows and stayed in a saving server's memory), and
	// merges read their segments through a connection of their own that does not map the
	// file, so a process that saves and never searches keeps a bounded part of an index
	// that grows with everything it saves (a 32 MiB writer cache and merges through the
	// mapped readers took 60 MB of a server's memory over 400 MB of saves). A reader reads
	// the file through its map; what fills its cache is pages still in the WAL, which a
	// saving process's lookups (Progress, every save) keep meeting: four readers of 16 MiB
	// grew a server saving 400 MB by 8-10 MB more than readers of 2 MiB, and searches on
	// the 100 MB store were no slower with 2 MiB (docs/BENCHMARKS.md).
	w, err := sql.Open("sqlite", base+"&_txlock=immediate&_pragma=cache_size(-4096)&_pragma=temp_store(MEMORY)")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)&_pragma=cache_size(-2048)&_pragma=mmap_size(268435456)")
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(ix.opts.ReadConns)
	r.SetMaxIdleConns(ix.opts.ReadConns)
	m, err := sql.Open("sqlite", base+"&_pragma=query_only(1)&_pragma=cache_size(-2048)")
	if err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	m.SetMaxOpenConns(1)
	m.SetMaxIdleConns(1)
	db := &database{name: name, path: path, dev: dev, ino: ino, w: w, r: r, m: m, view: newView()}
	if err := db.checkVersion(ctx); err != nil {
		db.close()
		return nil, err
	}
	return db, nil
}

// schema creates every table of SchemaVersion. AUTOINCREMENT keeps session row ids from
// being reused, so a doc of a deleted session (whose row is gone) can never pass for a live
// one.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS sessions (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		sid TEXT NOT NULL UNIQUE,
		created INTEGER NOT NULL,
		working_dir TEXT NOT NULL,
		name TEXT NOT NULL,
		through INTEGER NOT NULL,
		gaps BLOB, -- seqs indexed above through (write.go)
		ndocs INTEGER NOT NULL DEFAULT 0,
		nterms INTEGER NOT NULL DEFAULT 0
	)`,
	`CREATE TABLE IF NOT EXISTS tombstones (sid TEXT PRIMARY KEY, created INTEGER NOT NULL) WITHOUT ROWID`,
	// The inverted index (segment.go): segments of docs, each with its docs' attributes,
	// and one postings row per term and segment.
	`CREATE TABLE IF NOT EXISTS segments (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		level INTEGER NOT NULL,
		lo INTEGER NOT NULL,
		hi INTEGER NOT NULL,
		ndocs INTEGER NOT NULL,
		docs BLOB NOT NULL,
		packed BLOB -- a small segment's postings (terms.go); NULL: rows in postings
	)`,
	`CREATE TABLE IF NOT EXISTS postings (
		seg INTEGER NOT NULL,
		term TEXT NOT NULL,
		data BLOB NOT NULL,
		PRIMARY KEY (seg, term)
	) WITHOUT ROWID`,
	// Counters: live docs and their terms (BM25's N and average length), a generation of
	// the sessions table that readers compare to know when to reload it, and the last doc id
	// given out (ids only grow, so a cursor's snapshot never admits a later doc).
	`CREATE TABLE IF NOT EXISTS counters (k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID`,
	`INSERT OR IGNORE INTO counters (k, v) VALUES ('docs', 0), ('terms', 0), ('sessions', 0), ('last_doc', 0)`,
}

// checkVersion checks the database's format version. Index files are created complete
// (create), so version 0 means a file that is not ours or was damaged.
func (db *database) checkVersion(ctx context.Context) error {
	var v int
	if err := db.r.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return classify(fmt.Errorf("read search index version: %w", err))
	}
	switch {
	case v == schemaVersion:
		return nil
	case v > schemaVersion:
		return newerError(ctx, db, v)
	case v > 0:
		return fmt.Errorf("%w: version %d", errOlderFormat, v)
	}
	return fmt.Errorf("%w: %s has no version", ErrCorrupt, db.path)
}

// Reset replaces the index by an empty one, in every process sharing the directory (each
// reopens at its next call). Use it after ErrCorrupt, or to rebuild from scratch; then feed
// every session again.
func (ix *Index) Reset(ctx context.Context) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return ErrClosed
	}
	if _, err := ix.create(ctx); err != nil {
		return err
	}
	db, err := ix.openNewest(ctx, "")
	if err != nil {
		return err
	}
	ix.cur.close()
	ix.cur = db
	return nil
}

// classify wraps SQLite's corruption codes in ErrCorrupt.
func classify(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	return err
}

// escapePath makes a file name safe inside a file: URI.
func escapePath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}
