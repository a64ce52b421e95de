package ops

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/sessionmem/sessionmem/mcpserver"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
)

// Outcomes of a tool call (the outcome label of sessionmem_tool_calls_total).
const (
	OutcomeOK            = "ok"
	OutcomeInputRequired = "input_required" // asked the client for input first; it calls again
	OutcomeInvalid       = "invalid"        // the caller's mistake: a bad argument
	OutcomeNotFound      = "not_found"      // no such session, entry or cursor target
	OutcomeStale         = "stale"          // a compaction_id or cursor that no longer matches
	OutcomeUnavailable   = "unavailable"    // a capability (a summarizer) not available
	OutcomeStoreError    = "store_error"    // the store failed: see sessionmem_store_errors_total
	OutcomeTimeout       = "timeout"
	OutcomeCanceled      = "canceled"
	OutcomeRefused       = "refused" // refused without an error, e.g. while shutting down
	OutcomePanic         = "panic"
	OutcomeInternal      = "internal" // anything else: a bug, or a failure not classified here
)

// Kinds of store error (the kind label of sessionmem_store_errors_total).
const (
	StoreUnavailable       = "unavailable"        // the database cannot be reached (or timed out)
	StoreCorrupt           = "corrupt"            // data damaged beyond automatic repair
	StoreNewerFormat       = "newer_format"       // written by a newer sessionmem: upgrade
	StoreClosed            = "closed"             // the store was closed (shutting down)
	StoreSearchUnavailable = "search_unavailable" // the search index cannot answer
	StoreDiskFull          = "disk_full"          // the disk (or quota) holding the store is full
	StoreReadOnly          = "read_only"          // the store may not be written
	StoreIO                = "io"                 // another file operation failed
)

var (
	outcomes   = []string{OutcomeOK, OutcomeInputRequired, OutcomeInvalid, OutcomeNotFound, OutcomeStale, OutcomeUnavailable, OutcomeStoreError, OutcomeTimeout, OutcomeCanceled, OutcomeRefused, OutcomePanic, OutcomeInternal}
	storeKinds = []string{StoreUnavailable, StoreCorrupt, StoreNewerFormat, StoreClosed, StoreSearchUnavailable, StoreDiskFull, StoreReadOnly, StoreIO}
)

// Classify returns a call's outcome and, for a store failure, its kind ("" otherwise).
func Classify(c mcpserver.ToolCall) (outcome, storeKind string) {
	switch {
	case c.Panicked:
		return OutcomePanic, ""
	case !c.Failed && c.InputRequired:
		return OutcomeInputRequired, ""
	case !c.Failed:
		return OutcomeOK, ""
	case c.Err == nil:
		return OutcomeRefused, ""
	}
	if kind := StoreKind(c.Err); kind != "" {
		return OutcomeStoreError, kind
	}
	err := c.Err
	switch {
	case errors.Is(err, memory.ErrInvalid):
		return OutcomeInvalid, ""
	case errors.Is(err, memory.ErrNotFound):
		return OutcomeNotFound, ""
	case errors.Is(err, memory.ErrStale):
		return OutcomeStale, ""
	case errors.Is(err, memory.ErrUnavailable):
		return OutcomeUnavailable, ""
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout, ""
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled, ""
	}
	return OutcomeInternal, ""
}

// StoreKind classifies a store failure by the sentinel it wraps, "" when err is none.
func StoreKind(err error) string {
	switch {
	case err == nil:
		return ""
	case storage.DiskFull(err):
		return StoreDiskFull
	case storage.ReadOnly(err):
		return StoreReadOnly
	case errors.Is(err, storage.ErrUnavailable):
		return StoreUnavailable
	case errors.Is(err, storage.ErrCorrupt):
		return StoreCorrupt
	case errors.Is(err, storage.ErrNewerFormat):
		return StoreNewerFormat
	case errors.Is(err, storage.ErrClosed):
		return StoreClosed
	case errors.Is(err, storage.ErrSearchUnavailable):
		return StoreSearchUnavailable
	case errors.As(err, new(*fs.PathError)), errors.As(err, new(*os.LinkError)), errors.As(err, new(*os.SyscallError)):
		return StoreIO
	}
	return ""
}
