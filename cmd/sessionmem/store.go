package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/ops"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/storage/postgres"
)

// envSearchIndex turns the local store's full-text index off ("off"): for stores on a full
// disk, and to measure what the index costs a save.
const envSearchIndex = "SESSIONMEM_SEARCH_INDEX"

// resolveStore picks the store location (--store, then $SESSIONMEM_STORE, then on Windows
// %LOCALAPPDATA%\sessionmem, then $XDG_DATA_HOME/sessionmem, then ~/.local/share/sessionmem)
// and checks it: a directory becomes absolute; a URL is never taken for a directory. field
// names where the value came from, for error messages.
func resolveStore(flagVal string, getenv func(string) string) (string, error) {
	loc, field := flagVal, "--store"
	if loc == "" {
		loc, field = getenv(envStore), envStore
	}
	if loc == "" {
		switch {
		case localAppData(getenv) != "": // Windows: %LOCALAPPDATA%\sessionmem
			loc, field = filepath.Join(localAppData(getenv), "sessionmem"), "LOCALAPPDATA"
		case getenv("XDG_DATA_HOME") != "":
			loc, field = filepath.Join(getenv("XDG_DATA_HOME"), "sessionmem"), "XDG_DATA_HOME"
		case getenv("HOME") != "":
			loc, field = filepath.Join(getenv("HOME"), ".local", "share", "sessionmem"), "HOME"
		default:
			return "", &configError{Field: "--store", Msg: "no store: pass --store DIR (or a postgres:// URL) or set " + envStore}
		}
	}
	if scheme, ok := urlScheme(loc); ok {
		switch scheme {
		case "postgres", "postgresql":
			// Refused here, before anything connects: a URL the two parsers read differently
			// would send part of its password to a DNS server and into errors (CheckURL).
			if err := postgres.CheckURL(loc); err != nil {
				return "", badStoreURL(field, loc, err.Error())
			}
			return postgres.NormalizeURL(loc), nil
		default:
			return "", badStoreURL(field, loc, "unknown store URL scheme "+scheme+"://; pass a directory or a postgres:// URL")
		}
	}
	abs, err := filepath.Abs(loc)
	if err != nil {
		return "", &configError{Field: field, Value: loc, Msg: err.Error()}
	}
	return abs, nil
}

// urlScheme reports the scheme of a location written as scheme://..., lower-cased.
func urlScheme(loc string) (string, bool) {
	i := strings.Index(loc, "://")
	if i <= 0 {
		return "", false
	}
	scheme := loc[:i]
	for _, c := range scheme {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return "", false
		}
	}
	return strings.ToLower(scheme), true
}

// storeLabel is how a store location may appear in logs, errors and output: a URL loses its
// password (and any password-like query parameter); a directory is shown as it is.
func storeLabel(loc string) string {
	s, ok := urlScheme(loc)
	if !ok {
		return loc
	}
	if s == "postgres" || s == "postgresql" {
		return postgres.Redact(loc)
	}
	u, err := url.Parse(loc)
	if err != nil {
		// Unparseable: show only the scheme, never what might be credentials.
		return s + "://…"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// errBadUsage marks an error that is bad usage (exit code 2) whose message was not printed
// yet, unlike errUsage.
var errBadUsage = errors.New("bad usage")

// storeURLError is a store URL that cannot be used as written: a configError that main
// reports as bad usage (exit code 2).
type storeURLError struct{ *configError }

// Unwrap makes it both a *configError and an errBadUsage.
func (e *storeURLError) Unwrap() []error { return []error{e.configError, errBadUsage} }

// badStoreURL refuses the store URL loc given in field; msg says why without the password.
func badStoreURL(field, loc, msg string) error {
	return &storeURLError{&configError{Field: field, Value: storeLabel(loc), Msg: msg}}
}

// isURLStore reports whether a resolved store location is a database URL.
func isURLStore(loc string) bool {
	_, ok := urlScheme(loc)
	return ok
}

// openStore opens the store at a location resolveStore accepted. A PostgreSQL store is
// connected and its schema checked now, so a wrong password or an unreachable host is one
// clear error. Its tables are created only with create (serve, import, hook, migrate's
// destination): without it a database that has none is an error wrapping postgres.ErrNoStore,
// which the caller words for where the URL came from, and nothing is created in it. (A local
// store's directory is checked by the caller: storeExists, or migrate for --from.)
func openStore(ctx context.Context, loc string, logger *slog.Logger, create bool) (storage.Store, error) {
	if isURLStore(loc) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		o := pgOptions(logger)
		o.NoCreate = !create
		st, err := postgres.Open(ctx, loc, o)
		if errors.Is(err, postgres.ErrNoStore) {
			return nil, err // it names the database and host: "open store URL: " would repeat them
		}
		if err != nil {
			return nil, openError(loc, err)
		}
		return st, nil
	}
	// Docs gives the store its full-text index (session_search, sessionmem search);
	// SESSIONMEM_SEARCH_INDEX=off leaves it out (searches then scan every session).
	opts := local.Options{Logger: logger, Summarize: memory.Summarize, Docs: memory.Docs}
	if os.Getenv(envSearchIndex) == "off" {
		opts.Docs = nil
	}
	st, err := local.Open(loc, opts)
	if err != nil {
		return nil, openError(loc, err)
	}
	return st, nil
}

// openError is the error of a store that did not open: bad usage (exit code 2) for a URL
// pgx cannot parse, with no part of it but the label.
func openError(loc string, err error) error {
	if errors.Is(err, postgres.ErrMalformedURL) {
		return badStoreURL("store", loc, err.Error())
	}
	return fmt.Errorf("open store %s: %w", storeLabel(loc), err)
}

// startOps finds the pool's figures through ops.PoolStatter (postgres cannot name ops,
// which sits above it), so this checks at build time that the PostgreSQL store still offers
// them.
var _ ops.PoolStatter = (*postgres.Store)(nil)

// pgOptions are a PostgreSQL store's options: like the local store, it gets memory.Docs, so
// every save writes its search documents in its own transaction (SESSIONMEM_SEARCH_INDEX=off
// leaves them out; searches then scan the sessions).
func pgOptions(logger *slog.Logger) postgres.Options {
	o := postgres.Options{Logger: logger, Docs: memory.Docs}
	if os.Getenv(envSearchIndex) == "off" {
		o.Docs = nil
	}
	return o
}

// openServeStore opens the store for a server. Unlike the commands, a server starts while its
// database is unreachable: it logs a warning, every tool call answers with a tool error
// saying so, and the first call after the database is back works. A database whose schema is
// newer than this build still stops the server.
func openServeStore(ctx context.Context, loc string, logger *slog.Logger) (storage.Store, error) {
	if !isURLStore(loc) {
		return openStore(ctx, loc, logger, true)
	}
	st, err := postgres.New(loc, pgOptions(logger))
	if err != nil {
		return nil, openError(loc, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch err := st.Ready(rctx); {
	case err == nil:
	case errors.Is(err, storage.ErrMisconfigured):
		// Started all the same, as for a database that is down: the role or the database may
		// be created while it runs. Every tool call says what is wrong.
		logger.Warn("the database refused the connection; tool calls fail until the store URL or the database is fixed",
			"store", storeLabel(loc), "err", err)
	case errors.Is(err, storage.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded):
		logger.Warn("the database is not reachable yet; tool calls fail until it is", "store", storeLabel(loc), "err", err)
	default:
		st.Close()
		return nil, openError(loc, err)
	}
	return st, nil
}

// importStateDir is where transcript imports keep their per-file checkpoints: inside a local
// store, or for a database store in this machine's state directory (the transcripts are
// this machine's files), one directory per store URL. "" keeps them in memory.
func importStateDir(loc string, getenv func(string) string) string {
	if !isURLStore(loc) {
		return filepath.Join(loc, "imports")
	}
	base := localAppData(getenv)
	if base == "" {
		base = getenv("XDG_STATE_HOME")
	}
	if base == "" {
		if home := getenv("HOME"); home != "" {
			base = filepath.Join(home, ".local", "state")
		}
	}
	if base == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(storeLabel(loc)))
	return filepath.Join(base, "sessionmem", "imports", hex.EncodeToString(sum[:8]))
}
