package memory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sessionmem/sessionmem/internal/buildinfo"
	"github.com/sessionmem/sessionmem/storage"
)

// Sentinel errors. Every error the Service returns for a caller's mistake is an *Error that
// wraps one of these, so errors.Is works and the message says what to do.
var (
	// ErrInvalid means the request was malformed (bad id, bad message, bad argument).
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound means the session (or entry, or cursor target) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrStale means a compaction_id or cursor no longer matches the session.
	ErrStale = errors.New("stale")
	// ErrUnavailable means a requested capability (summarizer) is not available.
	ErrUnavailable = errors.New("unavailable")
)

// Error is a caller-facing error: what was wrong (Msg) and what to do about it (Hint).
type Error struct {
	Kind error // one of the sentinels above
	Msg  string
	Hint string
	// Cause is the store's error behind it, when there is one: for the server's log, never
	// for the caller (it may name the server's files).
	Cause error
}

// Error returns "msg; hint".
func (e *Error) Error() string {
	if e.Hint == "" {
		return e.Msg
	}
	return e.Msg + "; " + e.Hint
}

// Unwrap returns the sentinel, and the cause when there is one.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// StoreCondition returns the caller-facing error for a condition of the store's environment
// that the caller can act on, nil for any other error: a full disk, or a store that may not
// be written (storage.DiskFull, storage.ReadOnly). Its text names no file (an HTTP client must
// not learn the server's file layout); Cause keeps the details for the log. The store wrote
// nothing of the failed call, and takes the same call again once the condition is gone.
func StoreCondition(err error) *Error {
	switch {
	case err == nil:
		return nil
	case storage.DiskFull(err):
		return &Error{Kind: ErrUnavailable, Cause: err,
			Msg:  "the disk holding the session store is full: nothing was saved",
			Hint: "free space on it and retry; the store takes writes again as soon as there is room"}
	case storage.ReadOnly(err):
		return &Error{Kind: ErrUnavailable, Cause: err,
			Msg:  "the session store is read-only (a read-only file system or database, or no permission to write to it): nothing was saved",
			Hint: "make the store writable for the server, or start the server with a --store it may write to, and retry"}
	}
	return nil
}

// mapStoreErr turns storage errors about a session into caller-facing errors.
func mapStoreErr(id string, err error) error {
	if ce := StoreCondition(err); ce != nil {
		return ce
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return notFoundf("call session_list to see existing sessions", "no session %q", clip(id, 80))
	case errors.Is(err, storage.ErrInvalidID):
		return checkSessionID("session_id", id)
	case errors.Is(err, storage.ErrNewerFormat) && id == "":
		// The store's text names the file, which is the server's business (Cause).
		return &Error{Kind: ErrUnavailable, Msg: "the session store was written by a newer sessionmem", Hint: "upgrade sessionmem", Cause: err}
	case errors.Is(err, storage.ErrNewerFormat):
		hint := "upgrade sessionmem to read it"
		if nf := (*storage.NewerFormatError)(nil); errors.As(err, &nf) && nf.WrittenBy != "" {
			hint = buildinfo.Upgrade(buildinfo.Recorded(nf.WrittenBy)) + " to read it"
		}
		return &Error{Kind: ErrUnavailable, Msg: fmt.Sprintf("session %s was written by a newer sessionmem", id),
			Hint: hint, Cause: err}
	case errors.Is(err, storage.ErrMisconfigured):
		// The store's text says what is wrong and what to fix; a retry cannot help.
		msg := err.Error()
		if i := strings.Index(msg, "the database refused"); i >= 0 {
			msg = msg[i:]
		}
		return &Error{Kind: ErrUnavailable, Msg: clip(msg, 500),
			Hint: "the server's operator must fix this; retrying fails the same way until then", Cause: err}
	case errors.Is(err, storage.ErrUnavailable):
		msg := err.Error()
		if i := strings.Index(msg, "the database is unreachable"); i >= 0 {
			msg = msg[i:]
		} else {
			msg = "the store is unavailable: " + msg
		}
		return &Error{Kind: ErrUnavailable, Msg: clip(msg, 400), Hint: "retry in a few seconds", Cause: err}
	case errors.Is(err, storage.ErrCorrupt):
		return &Error{Kind: ErrUnavailable, Msg: fmt.Sprintf("session %s is damaged beyond automatic repair", id),
			Hint: "run 'sessionmem verify' to see what can be recovered", Cause: err}
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return err
}

// mapSaveErr is mapStoreErr for a save: when retrying may help (a store that is unreachable
// for now, a full disk), the hint adds that a retried save stores nothing twice. Only a save
// says so: other calls store nothing, and the sentence would puzzle their callers.
func mapSaveErr(id string, err error) error {
	out := mapStoreErr(id, err)
	var e *Error
	if !errors.As(out, &e) || e.Kind != ErrUnavailable || errors.Is(err, storage.ErrMisconfigured) ||
		!(errors.Is(err, storage.ErrUnavailable) || storage.DiskFull(err)) {
		return out
	}
	c := *e
	c.Hint += "; a retried session_save with the same message ids stores nothing twice"
	return &c
}

func invalidf(hint, format string, a ...any) *Error {
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(format, a...), Hint: hint}
}

func notFoundf(hint, format string, a ...any) *Error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf(format, a...), Hint: hint}
}

func stalef(hint, format string, a ...any) *Error {
	return &Error{Kind: ErrStale, Msg: fmt.Sprintf(format, a...), Hint: hint}
}
