package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
)

// resolveStore picks the store location (--store, then $SESSIONMEM_STORE, then
// $XDG_DATA_HOME/sessionmem, then ~/.local/share/sessionmem) and checks it: a directory becomes
// absolute; a URL is never taken for a directory. field names where the value came from, for
// error messages.
func resolveStore(flagVal string, getenv func(string) string) (string, error) {
	loc, field := flagVal, "--store"
	if loc == "" {
		loc, field = getenv(envStore), envStore
	}
	if loc == "" {
		switch {
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
			return "", &configError{Field: field, Value: storeLabel(loc),
				Msg: "PostgreSQL stores are not supported by this build yet; pass a directory"}
		default:
			return "", &configError{Field: field, Value: storeLabel(loc),
				Msg: "unknown store URL scheme " + scheme + "://; pass a directory or a postgres:// URL"}
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
	if _, ok := urlScheme(loc); !ok {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		// Unparseable: show only the scheme, never what might be credentials.
		s, _ := urlScheme(loc)
		return s + "://…"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// openStore opens the store at a location resolveStore accepted.
func openStore(ctx context.Context, loc string, logger *slog.Logger) (storage.Store, error) {
	st, err := local.Open(loc, local.Options{Logger: logger, Summarize: memory.Summarize})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", storeLabel(loc), err)
	}
	return st, nil
}
