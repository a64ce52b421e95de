package storage

import "errors"

// VerifyReport is what Store.Verify found in one session, in terms every backend shares: how
// much reads back intact, and the problems found, each with its kind, a description in the
// backend's own terms and whether repair fixes it. How a backend lays a session out (files,
// frames, chunks) stays inside the backend, which words its problems; a caller decides what
// to do from the kinds alone.
type VerifyReport struct {
	// ID is the session verified.
	ID string
	// Records is the number of records that read back intact.
	Records int
	// LastSeq is the seq of the last intact record (0 if none).
	LastSeq uint64
	// Problems is what Verify found wrong, in the order found; empty when the session is
	// intact.
	Problems []Problem
	// Repaired reports that Verify was asked to repair and fixed every Repairable problem
	// listed (their Detail then says what it did).
	Repaired bool
}

// ProblemKind is what sort of problem Verify found, and so what can be done about it.
type ProblemKind string

// The kinds of problem.
const (
	// ProblemTorn is what a crash left half-written: bytes no call acknowledged (a partial
	// last write, the first lines of a batch whose end is missing). Reads skip it, the next
	// write to the session cuts it, and so does Verify with repair; nothing acknowledged is
	// lost. A backend whose writes are transactions never has one.
	ProblemTorn ProblemKind = "torn"
	// ProblemDamaged is acknowledged data that fails its checks: a damaged header or record,
	// records missing. It is never cut, not even by repair (that would lose what it holds):
	// restore the session from a copy. Its Err wraps ErrCorrupt.
	ProblemDamaged ProblemKind = "damaged"
	// ProblemNewerFormat is a session, or part of one, written by a newer format version:
	// this build cannot read it, so Verify neither checks nor repairs it; upgrade sessionmem.
	// Its Err wraps ErrNewerFormat.
	ProblemNewerFormat ProblemKind = "newer-format"
)

// Problem is one thing Verify found wrong.
type Problem struct {
	Kind ProblemKind
	// Session is the session it is in, so that problems gathered over a store still say
	// where they are.
	Session string
	// Detail says what and where, for a person, in the backend's terms (e.g. "torn end of
	// tail (22 bytes at offset 512)"). For a damaged or newer-format problem it is Err's
	// message.
	Detail string
	// Repairable reports that Verify with repair fixes it without losing acknowledged data.
	Repairable bool
	// Err is the error behind a damaged or newer-format problem, wrapping ErrCorrupt or
	// ErrNewerFormat; nil for a torn end, which is not a failure.
	Err error
}

// ProblemOf makes the problem an error found in session id stands for: newer-format when err
// wraps ErrNewerFormat, damaged otherwise. Its Detail is err's message.
func ProblemOf(id string, err error) Problem {
	kind := ProblemDamaged
	if errors.Is(err, ErrNewerFormat) {
		kind = ProblemNewerFormat
	}
	return Problem{Kind: kind, Session: id, Detail: err.Error(), Err: err}
}

// Count returns how many problems of kind the report lists.
func (r VerifyReport) Count(kind ProblemKind) int {
	n := 0
	for _, p := range r.Problems {
		if p.Kind == kind {
			n++
		}
	}
	return n
}

// Torn reports whether a crash left anything for repair to cut or rewrite (or, when
// Repaired, whether repair did).
func (r VerifyReport) Torn() bool { return r.Count(ProblemTorn) > 0 }

// Damaged returns the error of the first damaged problem (wrapping ErrCorrupt), nil when the
// session is not damaged.
func (r VerifyReport) Damaged() error { return r.firstErr(ProblemDamaged) }

// NewerFormat returns the error of the first newer-format problem (wrapping ErrNewerFormat),
// nil when none.
func (r VerifyReport) NewerFormat() error { return r.firstErr(ProblemNewerFormat) }

func (r VerifyReport) firstErr(kind ProblemKind) error {
	for _, p := range r.Problems {
		if p.Kind == kind {
			return p.Err
		}
	}
	return nil
}
