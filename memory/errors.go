package memory

import (
	"errors"
	"fmt"
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
	// Err is the store's error behind it, if any (a store unavailable, damaged, or written by
	// a newer sessionmem): errors.Is and errors.As reach it, so that an operator's metrics
	// can tell store failures apart; the caller reads Msg and Hint.
	Err error
}

// Error returns "msg; hint".
func (e *Error) Error() string {
	if e.Hint == "" {
		return e.Msg
	}
	return e.Msg + "; " + e.Hint
}

// Unwrap returns the sentinel, and the store's error when there is one.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
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
