package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessionmem/sessionmem/storage"
)

// unavailableError says the database could not be reached or did not answer. It wraps
// storage.ErrUnavailable; its text is scrubbed of the password and fits on one line.
type unavailableError struct{ detail string }

func (e *unavailableError) Error() string { return "the database is unreachable: " + e.detail }
func (e *unavailableError) Unwrap() error { return storage.ErrUnavailable }

// refusedError says the database refused how it was addressed (credentials, role, database
// name): permanent until someone fixes the URL or the database, so it says what is wrong and
// what to do, never to retry. It wraps storage.ErrMisconfigured and storage.ErrUnavailable.
type refusedError struct{ detail, advice string }

func (e *refusedError) Error() string {
	return "the database refused the connection: " + e.detail + "; " + e.advice
}

// Unwrap makes it both a configuration error and a store that cannot be used for now.
func (e *refusedError) Unwrap() []error {
	return []error{storage.ErrMisconfigured, storage.ErrUnavailable}
}

// whereURL names where the URL comes from, for the advice of a refusedError.
const whereURL = "the store URL (--store or SESSIONMEM_STORE)"

// refused returns the refusedError for an error the server gives a connection it will not
// accept however often it is retried (SQLSTATE class 28, invalid authorization; 3D000, no
// such database), nil for any other error. secret is scrubbed from the server's message.
func refused(err error, secret string) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil
	}
	detail := RedactText(pe.Message, secret) + " (SQLSTATE " + pe.Code + ")"
	switch pe.Code {
	case "28P01":
		return &refusedError{detail: detail, advice: "check the user name and password in " + whereURL +
			", or in PGPASSWORD or ~/.pgpass when the URL carries none"}
	case "28000":
		return &refusedError{detail: detail, advice: "check the user name in " + whereURL +
			", that the role exists (CREATE ROLE … LOGIN), and that the server's pg_hba.conf admits it from this host"}
	case "3D000":
		return &refusedError{detail: detail, advice: "create the database (CREATE DATABASE … OWNER …) or correct its name in " + whereURL}
	}
	return nil
}

// wrap turns an error from pgx into what the store returns: ctx's own error when the caller
// gave up, an error wrapping storage.ErrUnavailable for connection failures, timeouts and
// server shutdowns, ErrDuplicateKey for a unique key conflict, otherwise op: err. Every text
// is scrubbed of the password.
func (s *Store) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s: %w", op, cerr)
	}
	if errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrNotFound) ||
		errors.Is(err, storage.ErrCorrupt) || errors.Is(err, storage.ErrNewerFormat) ||
		errors.Is(err, storage.ErrClosed) {
		return err
	}
	if r := refused(err, s.secret); r != nil {
		return r
	}
	text := joinErrorLines(RedactText(err.Error(), s.secret))
	if unavailable(err) {
		return &unavailableError{detail: op + ": " + text}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && strings.HasPrefix(pe.ConstraintName, "sessionmem_keys") {
		return fmt.Errorf("%s: %w", op, storage.ErrDuplicateKey)
	}
	if cond := condition(err); cond != nil {
		return fmt.Errorf("%s: %s: %w", op, text, cond)
	}
	return fmt.Errorf("%s: %s", op, text)
}

// condition returns the storage condition a database error is: ErrDiskFull for disk_full
// (SQLSTATE 53100: the server could not extend a file), ErrReadOnly for
// read_only_sql_transaction (25006: a standby, or default_transaction_read_only) and
// insufficient_privilege (42501: a user that may not write the tables); nil otherwise. The
// transaction they end stored nothing.
func condition(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil
	}
	switch pe.Code {
	case "53100":
		return storage.ErrDiskFull
	case "25006", "42501":
		return storage.ErrReadOnly
	}
	return nil
}

// unavailable reports whether err means the database cannot be used for now: no connection,
// a connection that broke, a timeout, or a server shutting down, starting, or out of
// connections. (A wrong password or a missing database is a refusedError, found first.)
func unavailable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, crash, starting up
			pe.Code == "57014", // statement timeout (query canceled)
			pe.Code == "25P03", // idle in transaction timeout
			pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	if pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	// pgx reports a connection it closed after a failure as "conn closed" or "conn busy"
	// without a typed error in some paths.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool")
}

// timedOut reports whether err is a timeout (a connection attempt, a ping or a statement
// the database did not answer in time), as opposed to a connection that failed at once.
func timedOut(err error) bool {
	return pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded)
}

// joinErrorLines joins the lines of a multi-line error (pgx reports each host tried on its own line).
func joinErrorLines(s string) string {
	s = strings.ReplaceAll(s, "\n\t", "; ")
	return strings.ReplaceAll(s, "\n", "; ")
}

// Redact returns a PostgreSQL URL without its password (also password= and sslpassword=
// query parameters), as it may appear in logs, errors and output. A URL CheckURL refuses is
// shown as its scheme only: its parts are ambiguous, so any of them may hold the password.
func Redact(raw string) string {
	if _, _, ok := splitScheme(raw); ok && CheckURL(raw) != nil {
		return strings.ToLower(raw[:strings.Index(raw, "://")]) + "://…"
	}
	u, err := url.Parse(NormalizeURL(raw))
	if err != nil || u.Scheme == "" {
		if strings.Contains(raw, "://") {
			return raw[:strings.Index(raw, "://")] + "://…"
		}
		return "(connection string)"
	}
	q := u.Query()
	masked := false
	for _, k := range []string{"password", "sslpassword"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
			masked = true
		}
	}
	if masked {
		u.RawQuery = q.Encode()
	}
	u.Fragment, u.RawFragment = "", ""
	return u.Redacted()
}

// passwordOf returns the password a URL carries, for scrubbing errors about the URL itself.
func passwordOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if p, ok := u.User.Password(); ok {
		return p
	}
	return u.Query().Get("password")
}

// hasParam reports whether a URL sets the query parameter name.
func hasParam(raw, name string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Query().Has(name)
}
