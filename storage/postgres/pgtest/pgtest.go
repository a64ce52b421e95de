// Package pgtest starts throwaway PostgreSQL clusters for tests: initdb into a temporary
// directory, pg_ctl on a free loopback port, one fresh database per test, everything removed
// afterwards. PostgreSQL refuses to run as root, so when the tests run as root the cluster
// runs as the "postgres" user (runuser) in a directory it owns.
//
// Tests call Shared(t) for the package's cluster (started on first use) and NewDatabase for
// a database of their own; the package's TestMain calls StopShared after m.Run. With
// $SESSIONMEM_TEST_POSTGRES set to an administrator URL, that server is used instead of a
// throwaway cluster. When PostgreSQL is not installed the tests skip, except with CI=true,
// where they fail: CI must run them.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names an administrator URL of an existing server to use instead of a throwaway
// cluster (it must allow CREATE DATABASE).
const EnvURL = "SESSIONMEM_TEST_POSTGRES"

// Options tune a cluster.
type Options struct {
	// Fsync keeps fsync on (benchmarks); tests turn it off for speed, which changes nothing
	// about what a committed transaction means to the server processes under test (the
	// cluster itself is never crashed, only stopped cleanly).
	Fsync bool
	// AutovacuumNaptime, when set, replaces autovacuum's default of one minute between runs
	// (size measurements set it to a second, as a busy store's autovacuum behaves).
	AutovacuumNaptime string
}

// Cluster is a running throwaway cluster (or an external server, which Stop and Start leave
// alone).
type Cluster struct {
	Dir      string // the temporary directory (data/ and the log inside)
	Port     int
	Password string // the superuser's password (user "postgres")
	bin      string
	runAs    string // "postgres" when we are root
	opts     Options
	external string // admin URL of an external server

	schemaOnce sync.Once // the database NewSchema creates schemas in
	schemaDB   string
	schemaErr  error
}

// ErrNotInstalled is returned by Start when no PostgreSQL server binaries are found.
var ErrNotInstalled = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found; install Debian's postgresql package")

// BinDir finds the directory holding initdb and pg_ctl: the newest /usr/lib/postgresql/*/bin,
// else the directory of pg_ctl on $PATH.
func BinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		d := filepath.Dir(p)
		if isExec(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o111 != 0
}

// Start creates and starts a cluster.
func Start(opts Options) (*Cluster, error) {
	if u := os.Getenv(EnvURL); u != "" {
		return &Cluster{external: u}, nil
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sessionmem-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, bin: bin, opts: opts, Password: "pgtest-" + randHex(8)}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		u, err := user.Lookup(c.runAs)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres user to run PostgreSQL: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	pwfile := filepath.Join(dir, "pw")
	if err := c.run("sh", "-c", "umask 077; printf '%s' \"$1\" > \"$2\"", "sh", c.Password, pwfile); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	err = c.run(filepath.Join(bin, "initdb"), "-D", c.dataDir(), "-U", "postgres", "--auth=scram-sha-256",
		"--pwfile="+pwfile, "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if c.Port, err = freePort(); err == nil {
			if err = c.Start(); err == nil {
				return c, nil
			}
		}
		if attempt == 2 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

func (c *Cluster) dataDir() string { return filepath.Join(c.Dir, "data") }

// run runs a command, as the postgres user when we are root.
func (c *Cluster) run(name string, args ...string) error {
	if c.runAs != "" {
		args = append([]string{"-u", c.runAs, "--", name}, args...)
		name = "runuser"
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// Start starts the (stopped) cluster on its port and waits until it accepts connections.
func (c *Cluster) Start() error {
	if c.external != "" {
		return nil
	}
	fsync := "off"
	if c.opts.Fsync {
		fsync = "on"
	}
	o := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=%s "+
		"-c full_page_writes=%s -c max_connections=300 -c shared_buffers=64MB", c.Port, c.Dir, fsync, fsync)
	if c.opts.AutovacuumNaptime != "" {
		o += " -c autovacuum_naptime=" + c.opts.AutovacuumNaptime
	}
	return c.run(filepath.Join(c.bin, "pg_ctl"), "start", "-w", "-t", "60", "-D", c.dataDir(),
		"-l", filepath.Join(c.Dir, "log"), "-o", o)
}

// Stop stops the cluster (fast shutdown: clients are disconnected, nothing committed is lost).
func (c *Cluster) Stop() error {
	if c.external != "" {
		return nil
	}
	return c.run(filepath.Join(c.bin, "pg_ctl"), "stop", "-w", "-t", "60", "-m", "fast", "-D", c.dataDir())
}

// Remove stops the cluster and deletes its directory.
func (c *Cluster) Remove() {
	if c.external != "" {
		return
	}
	_ = c.run(filepath.Join(c.bin, "pg_ctl"), "stop", "-w", "-t", "60", "-m", "immediate", "-D", c.dataDir())
	os.RemoveAll(c.Dir)
}

// Log returns the server's log (for failure messages).
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log"))
	return string(b)
}

// URL returns a URL for database db as the superuser.
func (c *Cluster) URL(db string) string {
	if c.external != "" {
		u, err := url.Parse(c.external)
		if err != nil {
			return c.external
		}
		u.Path = "/" + db
		return u.String()
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", c.Password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// CreateDatabase creates a new empty database and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, string, error) {
	name := "sessionmem_test_" + randHex(6)
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", err
	}
	return name, c.URL(name), nil
}

// DropDatabase drops a database, disconnecting its clients.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

// Tables counts the tables where a store opened on URL u would create its own: the schemas
// u's search_path selects, and public. Tests of what a command must not create count them
// before and after.
func Tables(t testing.TB, u string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_tables
		WHERE schemaname = ANY (current_schemas(false)) OR schemaname = 'public'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// NewDatabase creates a database for one test and drops it when the test ends.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, u, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(ctx, name); err != nil {
			t.Logf("pgtest: drop database %s: %v", name, err)
		}
	})
	return u
}

// NewSchema creates a schema (a namespace) for one test in a database the cluster keeps for
// such tests, and returns a URL whose search_path selects it; it is dropped when the test
// ends. Creating a schema takes milliseconds where a database takes a few hundred, so the
// contract suite's many small subtests use schemas; tests of whole processes use databases.
func (c *Cluster) NewSchema(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.schemaOnce.Do(func() { c.schemaDB, _, c.schemaErr = c.CreateDatabase(ctx) })
	if c.schemaErr != nil {
		t.Fatalf("pgtest: create database: %v", c.schemaErr)
	}
	name := "t_" + randHex(6)
	base := c.URL(c.schemaDB)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err == nil {
			_, err = conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
			conn.Close(ctx)
		}
		if err != nil {
			t.Logf("pgtest: drop schema %s: %v", name, err)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + name
}

var (
	sharedMu  sync.Mutex
	shared    *Cluster
	sharedErr error
)

// Shared returns the test binary's cluster, starting it on first use. Without PostgreSQL it
// skips the test, or fails it when $CI is "true".
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = Start(Options{})
	}
	if sharedErr != nil {
		if errors.Is(sharedErr, ErrNotInstalled) && os.Getenv("CI") != "true" {
			t.Skipf("pgtest: %v", sharedErr)
		}
		t.Fatalf("pgtest: %v", sharedErr)
	}
	return shared
}

// Own starts a cluster of the test's own (one it may stop, restart or configure), removed when
// the test ends, after the test's later cleanups (its servers) have run. As with Shared, a
// machine without PostgreSQL skips the test, except with CI=true, where that fails it.
func Own(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(opts)
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
			t.Skipf("pgtest: %v", err)
		}
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(c.Remove)
	return c
}

// StopShared removes the shared cluster if one was started. TestMain calls it after m.Run.
func StopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.Remove()
		shared = nil
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
