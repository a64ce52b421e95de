package storage

import (
	"context"
	"errors"
	"iter"
	"strings"
	"time"
)

// Sentinel errors. Every backend returns errors that wrap these, so callers compare with
// errors.Is whatever the backend.
var (
	// ErrNotFound is returned when a session does not exist (or was deleted).
	ErrNotFound = errors.New("session not found")
	// ErrExists is returned by Create when a session with that id already exists.
	ErrExists = errors.New("session already exists")
	// ErrNewerFormat is returned when data was written by a newer sessionmem format or schema.
	ErrNewerFormat = errors.New("written by a newer sessionmem format")
	// ErrCorrupt is returned when a session's data is damaged beyond what recovery repairs.
	ErrCorrupt = errors.New("session data is damaged")
	// ErrInvalidID is returned for ids that do not match [A-Za-z0-9_.-]{1,128} or are "." / "..".
	ErrInvalidID = errors.New("invalid session id")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("store is closed")
	// ErrUnavailable is returned when the store cannot be reached for now (a database that is
	// down or restarting); the call may be retried later and wrote nothing that was not
	// acknowledged.
	ErrUnavailable = errors.New("store unavailable")
	// ErrMisconfigured is returned when the store refuses how it is addressed: a wrong
	// password, a user or database that does not exist. Errors wrapping it wrap
	// ErrUnavailable too (the store cannot be used until it is fixed), but retrying the same
	// call does not help: the store's location or credentials, or the store itself, must be
	// changed. The error's text says what is wrong and what to do.
	ErrMisconfigured = errors.New("store misconfigured")
	// ErrDuplicateKey is returned by Append when a backend that enforces Record.Key finds the
	// key already stored in the session.
	ErrDuplicateKey = errors.New("record key already stored in the session")
)

// ValidID reports whether id can name a session: 1 to 128 characters from [A-Za-z0-9_.-],
// and not "." or "..". Every id-taking method returns ErrInvalidID for other ids. (A loop, not
// the regexp it reads like: that regexp's {1,128} compiled to 128 copies of the class, 2 ms
// of every process's start.)
func ValidID(id string) bool {
	if len(id) < 1 || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// Store is a set of session logs plus the listing metadata of each session. Every backend
// (storage/local, storage/postgres) implements it with the same behaviour, checked by the
// contract suite in storage/storetest; a difference between backends is a bug.
//
// A Store is safe for concurrent use by goroutines, and by several processes (and, for
// networked backends, machines) sharing it: what a call wrote is visible to every other user
// of the store as soon as the call returned.
type Store interface {
	// Create writes a new, empty session durably, with its header and first metadata. It
	// returns ErrExists if the id is taken and ErrInvalidID for a bad id. The store sets
	// h.Created if zero and h.Nonce if empty; m receives the header fields, and Updated =
	// Created if zero.
	Create(ctx context.Context, h Header, m Meta) error
	// Get returns one session's metadata (ErrNotFound if it does not exist).
	Get(ctx context.Context, id string) (Meta, error)
	// List returns the metadata of the sessions q selects, newest Updated first (ties by id
	// ascending). Damaged sessions are skipped.
	List(ctx context.Context, q ListQuery) ([]Meta, error)
	// Update runs fn with the session locked for writing against every other writer, in
	// this process and others. Writes happen through the Writer, which is valid only inside
	// fn. ErrNotFound if the session does not exist. If fn returns an error, what its Writer
	// appended before the error may or may not be kept (each Append is atomic on its own; a
	// transactional backend keeps none of it). When Update returns nil, everything fn
	// appended is durable; when it returns an error wrapping ErrUnavailable after fn
	// succeeded, the appends may or may not have been stored (the connection broke while
	// committing), so callers retry idempotently.
	Update(ctx context.Context, id string, fn func(w Writer) error) error
	// View runs fn with a consistent view of the session: no record appended during fn is
	// seen, and every record appended before View was called is. The Reader is valid only
	// inside fn.
	View(ctx context.Context, id string, fn func(r Reader) error) error
	// Delete removes a session and everything derived from it. ErrNotFound if it does not
	// exist.
	Delete(ctx context.Context, id string) error
	// IDs returns the id of every stored session, including damaged ones List skips.
	IDs(ctx context.Context) ([]string, error)
	// Verify checks one session completely and reports what it found; with repair it cuts
	// what a crash left half-written (never acknowledged data).
	Verify(ctx context.Context, id string, repair bool) (VerifyReport, error)
	// Close releases the store's resources, waiting for running calls. Later calls return
	// ErrClosed.
	Close() error
}

// Reader reads one session. It is valid only inside the View or Update callback that
// received it.
type Reader interface {
	// ID returns the session id.
	ID() string
	// Header returns the session's immutable header.
	Header() Header
	// LastSeq returns the seq of the newest record (0 for an empty session).
	LastSeq() uint64
	// Records yields the records with Seq >= from, oldest first. Its cost does not depend on
	// how many records precede from (a backend seeks to from). A damaged record stops
	// iteration with an error wrapping ErrCorrupt.
	Records(from uint64) iter.Seq2[Record, error]
}

// ReadAheader is a Reader that can start fetching, in the background, the records a later
// call will read from a seq on. It is optional: a resume page that ends with a cursor asks
// for the next page's records while the client is still taking in this one (a fresh
// server's full resume of 2,000 messages otherwise waits 10-15 ms for a frame decode in the
// middle of it). ReadAhead returns at once; what it fetches is only kept in the backend's
// cache, so a call that never comes costs memory the cache bounds anyway.
type ReadAheader interface {
	Reader
	ReadAhead(from uint64)
}

// Writer appends to one session locked for writing. It reads its own writes.
type Writer interface {
	Reader
	// Append writes recs as one atomic, durable batch and then records m as the session's
	// metadata (the store sets m.ID, the header fields and m.LastSeq). It returns the records
	// with Seq set, numbered from LastSeq()+1. When it returns nil the records survive kill -9
	// and power loss (in a transactional backend, once Update has returned nil: Update is
	// one transaction); when it returns an error none of them was stored.
	//
	// Each Data must be one JSON object without a "seq" key. If Kind is set and Data has no
	// "type", `"type":Kind` is added; if Data has a "type" it must equal Kind. Empty recs
	// only updates the metadata.
	Append(recs []Record, m Meta) ([]Record, error)
}

// Header is a session's immutable header, written by Create.
type Header struct {
	// Version is the backend's format version of the session (set by the store).
	Version       int       `json:"v"`
	ID            string    `json:"id"`
	Created       time.Time `json:"created"`
	WorkingDir    string    `json:"working_dir"`
	ParentSession string    `json:"parent_session,omitempty"`
	// Nonce is random per Create (set by Create when empty), so a session deleted and
	// created again under the same id, even with the same times, is told apart from the old
	// one by anything that cached it.
	Nonce string `json:"nonce,omitempty"`
}

// Meta is one session's listing metadata. memory fills the fields it owns (Name, Model,
// Provider, counts, Preview, Leaf, Checkpoint); the store fills ID, Created, WorkingDir,
// ParentSession from the header and LastSeq on every append.
type Meta struct {
	ID            string    `json:"id"`
	Name          string    `json:"name,omitempty"`
	WorkingDir    string    `json:"working_dir"`
	Model         string    `json:"model,omitempty"`
	Provider      string    `json:"provider,omitempty"`
	ParentSession string    `json:"parent_session,omitempty"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
	Messages      int       `json:"messages"`
	Compactions   int       `json:"compactions"`
	ContextTokens int       `json:"context_tokens"`
	Preview       string    `json:"preview,omitempty"`
	Leaf          string    `json:"leaf,omitempty"`
	// Checkpoint is the seq of the first record a resume needs (the first kept entry of the
	// latest compaction); 0 means from the start.
	Checkpoint uint64 `json:"checkpoint,omitempty"`
	// LastSeq is the seq of the newest record (set by the store).
	LastSeq uint64 `json:"last_seq"`
}

// Record is one JSON record of a session log.
type Record struct {
	// Seq grows by one per record within a session, starting at 1. Assigned by Append.
	Seq uint64
	// Kind is the record's "type" field (memory's entry kind, e.g. "message", "compaction").
	Kind string
	// Data is the JSON object. On Append it is the caller's object without "seq" (the store
	// adds `"seq":N` as the first key); on read it is the whole stored object including
	// "seq". Read-side Data must not be retained past the iteration step unless copied.
	Data []byte
	// Barrier asks Append to start a new compressed chunk at this record (used for
	// compactions, so a resume can start decoding there). Backends without chunks ignore it.
	Barrier bool
	// Key is an optional idempotency key, unique within the session (memory passes the
	// client's message id). A backend may enforce it (storage/postgres does, with a unique
	// index): an Append whose key is already stored in the session then fails with an error
	// wrapping ErrDuplicateKey and stores nothing, and a transactional backend rolls back
	// the whole Update. Callers de-duplicate before appending, so a conflict means a race or
	// a bug, never a normal replay. Reads do not return it.
	Key string
}

// ListQuery selects sessions for List. The zero value selects every session.
type ListQuery struct {
	// WorkingDir keeps sessions whose working_dir equals it, ignoring trailing separators
	// (see SameDir).
	WorkingDir string
	// Text keeps sessions whose name or preview contains it, ignoring case (see MatchText).
	Text string
	// After starts the listing after this position in newest-first order (a page cursor).
	After *ListPosition
	// Limit caps the number of sessions returned; 0 means no limit.
	Limit int
}

// ListPosition is a place in List's newest-first order.
type ListPosition struct {
	Updated time.Time
	ID      string
}

// Before reports whether m comes before p in newest-first order (newer, or as new with a
// smaller id), i.e. whether a listing that starts after p excludes m.
func (p ListPosition) Before(m *Meta) bool {
	if !m.Updated.Equal(p.Updated) {
		return m.Updated.After(p.Updated)
	}
	return m.ID <= p.ID
}

// SameDir compares working directories, ignoring trailing separators.
func SameDir(a, b string) bool {
	return strings.TrimRight(a, "/\\") == strings.TrimRight(b, "/\\")
}

// MatchText reports whether m's name or preview contains text, ignoring case.
func MatchText(m *Meta, text string) bool {
	if text == "" {
		return true
	}
	q := strings.ToLower(text)
	return strings.Contains(strings.ToLower(m.Name), q) || strings.Contains(strings.ToLower(m.Preview), q)
}

// Selects reports whether q's filters (not After or Limit) keep m.
func (q ListQuery) Selects(m *Meta) bool {
	if q.WorkingDir != "" && !SameDir(m.WorkingDir, q.WorkingDir) {
		return false
	}
	return MatchText(m, q.Text)
}

// NewerFirst reports whether a comes before b in List's order.
func NewerFirst(a, b *Meta) bool {
	if !a.Updated.Equal(b.Updated) {
		return a.Updated.After(b.Updated)
	}
	return a.ID < b.ID
}

// SummarizeFunc recomputes a session's listing metadata from its header and records. memory
// provides it (memory.Summarize) so that a store rebuilding or reconciling its metadata
// carries the same counts a memory.Service maintains.
type SummarizeFunc func(h Header, records iter.Seq2[Record, error]) (Meta, error)
