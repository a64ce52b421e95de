package storage

import (
	"fmt"
	"strings"

	"github.com/sessionmem/sessionmem/internal/buildinfo"
)

// WriterVersion is the sessionmem version the backends record beside a format version
// wherever they write one (a file's header, the index header, the database's schema row),
// so that a build too old to read the data can name the version that wrote it.
func WriterVersion() string { return buildinfo.Version() }

// NewerFormatError is a backend's refusal of data in a format newer than this build reads:
// which data, its format version, the newest this build reads, and the sessionmem version
// that wrote it when the data records one. It wraps ErrNewerFormat.
type NewerFormatError struct {
	// What names the data: "index /path/index.jsonl", "session s1 tail", ...
	What string
	// Version is the data's format version, Newest the newest this build reads.
	Version, Newest int
	// WrittenBy is the sessionmem version recorded with the data ("" when it records none:
	// data written before versions were recorded).
	WrittenBy string
}

// Error says what to upgrade to: "… has format version 2, written by sessionmem v1.4.0;
// this sessionmem (v1.2.0) reads up to 1: upgrade sessionmem to v1.4.0 or later".
func (e *NewerFormatError) Error() string {
	by := buildinfo.Recorded(e.WrittenBy)
	var b strings.Builder
	fmt.Fprintf(&b, "%s has format version %d", e.What, e.Version)
	if by != "" {
		b.WriteString(", written by sessionmem " + by)
	}
	fmt.Fprintf(&b, "; this sessionmem (%s) reads up to %d: %s", buildinfo.Version(), e.Newest, buildinfo.Upgrade(by))
	return b.String()
}

// Unwrap returns ErrNewerFormat.
func (e *NewerFormatError) Unwrap() error { return ErrNewerFormat }
