package memory

import (
	"errors"
	"fmt"

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
			Msg: "the disk holding the session store is full: nothing was saved",
			Hint: "free space on it and retry; the store takes writes again as soon as there is room, " +
				"and a retried session_save with the same message ids stores nothing twice"}
	case storage.ReadOnly(err):
		return &Error{Kind: ErrUnavailable, Cause: err,
			Msg:  "the session store is read-only (a read-only file system or database, or no permission to write to it): nothing was saved",
			Hint: "make the store writable for the server, or start the server with a --store it may write to, and retry"}
	}
	return nil
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
