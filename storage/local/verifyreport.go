package local

import (
	"fmt"
	"strings"

	"github.com/sessionmem/sessionmem/storage"
)

// fileReport is what verifyFiles found in one session, in the terms of this store's layout
// (<id>.zst with sealed records, <id>.tail.jsonl with plain lines). Verify words it as a
// storage.VerifyReport (report); the tests read the figures themselves.
type fileReport struct {
	// ID is the session verified.
	ID string
	// Frames is the number of sealed records (zstd frames) that decoded intact.
	Frames int
	// Records is the number of records that read back intact, sealed and in the tail.
	Records int
	// TailRecords is how many of Records are in the plain tail.
	TailRecords int
	// LastSeq is the seq of the last intact record (0 if none).
	LastSeq uint64
	// SealedBytes is the size of <id>.zst up to the end of its last intact record, header
	// frame included: the whole file unless TornSealed is set.
	SealedBytes int64
	// TailBytes is the size of <id>.tail.jsonl up to the end of its last kept line, header
	// line included: the whole file unless TailPadding or TornTail is set.
	TailBytes int64
	// TailPadding is the number of zero bytes after the tail's data that writers write into
	// (a padded tail; the local store's doc). It is not torn: TailBytes + TailPadding +
	// TornTail is the tail file's size.
	TailPadding int64
	// TornSealed is the number of bytes after the last intact record of <id>.zst that a
	// crash during a seal left (a partial or unchecked record, garbage). Repair cuts them.
	TornSealed int64
	// TornTail is the number of bytes at the end of <id>.tail.jsonl that are not kept records:
	// a torn last line, a line that is invalid or does not continue the sequence and all that
	// follows it (a batch is one write, so none of it was acknowledged), the first lines of a
	// batch whose last line is not there (an Append is atomic), or, when nothing else
	// is left, lines already sealed. With NoTail, the size of the tail file that is replaced.
	// Repair cuts them.
	TornTail int64
	// StaleLines counts tail lines at or below the last sealed seq (a crash between a seal and
	// emptying the tail). Reads skip them; they are part of TornTail only when no record
	// follows them.
	StaleLines int
	// DroppedLines counts the complete lines within TornTail that are not stale: lines after
	// the first invalid or out-of-sequence one, and those of a batch whose last line is not
	// there.
	DroppedLines int
	// NoTail reports a tail file that is missing or has no complete header line, so it holds
	// no record; repair writes an empty one.
	NoTail bool
	// Repaired reports that verifyFiles cut TornSealed and TornTail bytes (measured from the
	// file sizes before and after) or wrote an empty tail.
	Repaired bool
	// Damaged is nil when the session is intact (apart from the torn ends above). Otherwise it
	// wraps storage.ErrCorrupt and says where: a damaged header, a damaged record followed by intact
	// ones, a record whose frame does not decode although its checksum matches, a damaged tail
	// header. Damage is never cut, not even with repair: restore the session from a copy.
	Damaged error
	// NewerFormat is nil unless a file of the session was written by a newer format version;
	// then it wraps storage.ErrNewerFormat and says which file. Such a session is not checked (this
	// build cannot read it) and not repaired: upgrade sessionmem.
	NewerFormat error
}

// Torn reports whether a crash left anything for repair to cut or rewrite.
func (r fileReport) Torn() bool { return r.TornSealed > 0 || r.TornTail > 0 || r.NoTail }

// report words r in the terms every backend shares: each torn end one repairable problem,
// saying where it is and, once repaired, what was done; damage and a newer format one
// problem each, their error's message.
func (r fileReport) report() storage.VerifyReport {
	rep := storage.VerifyReport{ID: r.ID, Records: r.Records, LastSeq: r.LastSeq, Repaired: r.Repaired}
	torn := func(done, found string) {
		detail := found
		if r.Repaired {
			detail = done + found
		}
		rep.Problems = append(rep.Problems, storage.Problem{Kind: storage.ProblemTorn, Session: r.ID, Detail: detail, Repairable: true})
	}
	if r.TornSealed > 0 {
		torn("cut ", fmt.Sprintf("torn end of sealed log (%s at offset %d)", plural(r.TornSealed, "byte"), r.SealedBytes))
	}
	switch {
	case r.NoTail && r.TornTail > 0:
		torn("wrote an empty tail: ", fmt.Sprintf("tail file has no header line (%s, no records)", plural(r.TornTail, "byte")))
	case r.NoTail:
		torn("wrote an empty tail: ", "tail file missing")
	case r.TornTail > 0:
		torn("cut ", fmt.Sprintf("torn end of tail (%s at offset %d%s)", plural(r.TornTail, "byte"), r.TailBytes, r.tornLines()))
	}
	for _, err := range []error{r.Damaged, r.NewerFormat} {
		if err != nil {
			rep.Problems = append(rep.Problems, storage.ProblemOf(r.ID, err))
		}
	}
	return rep
}

// tornLines says which complete lines the torn end of the tail holds, if any: ": 3 lines
// already sealed, 1 complete line not continuing the sequence".
func (r fileReport) tornLines() string {
	var what []string
	if r.StaleLines > 0 && r.TailRecords == 0 {
		what = append(what, plural(r.StaleLines, "line")+" already sealed")
	}
	if r.DroppedLines > 0 {
		what = append(what, plural(r.DroppedLines, "complete line")+" not continuing the sequence")
	}
	if len(what) == 0 {
		return ""
	}
	return ": " + strings.Join(what, ", ")
}

// plural is "1 byte", "2 bytes".
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
