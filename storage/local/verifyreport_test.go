package local

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestFileReportWording: each torn end is one repairable problem naming its file, its size
// and where it starts, and once repaired what was done; damage and a newer format are their
// errors.
func TestFileReportWording(t *testing.T) {
	corrupt := fmt.Errorf("session s: damaged record at offset 9: %w", storage.ErrCorrupt)
	newer := fmt.Errorf("session s tail has format version 9: %w", storage.ErrNewerFormat)
	for _, tt := range []struct {
		name string
		in   fileReport
		want []string // Detail of each problem, in order
		torn bool
	}{
		{"intact", fileReport{Records: 3}, nil, false},
		{"torn seal", fileReport{TornSealed: 7, SealedBytes: 100}, []string{"torn end of sealed log (7 bytes at offset 100)"}, true},
		{"torn seal cut", fileReport{TornSealed: 1, SealedBytes: 100, Repaired: true}, []string{"cut torn end of sealed log (1 byte at offset 100)"}, true},
		{"torn tail with lines", fileReport{TornTail: 40, TailBytes: 30, StaleLines: 2, DroppedLines: 1},
			[]string{"torn end of tail (40 bytes at offset 30: 2 lines already sealed, 1 complete line not continuing the sequence)"}, true},
		{"stale lines before kept ones are not torn", fileReport{TornTail: 5, TailBytes: 30, StaleLines: 2, TailRecords: 1},
			[]string{"torn end of tail (5 bytes at offset 30)"}, true},
		{"both ends cut", fileReport{TornSealed: 3, SealedBytes: 10, TornTail: 4, TailBytes: 20, Repaired: true},
			[]string{"cut torn end of sealed log (3 bytes at offset 10)", "cut torn end of tail (4 bytes at offset 20)"}, true},
		{"tail without header", fileReport{NoTail: true, TornTail: 12}, []string{"tail file has no header line (12 bytes, no records)"}, true},
		{"tail replaced", fileReport{NoTail: true, Repaired: true}, []string{"wrote an empty tail: tail file missing"}, true},
		{"damaged", fileReport{Damaged: corrupt}, []string{corrupt.Error()}, false},
		{"newer", fileReport{NewerFormat: newer}, []string{newer.Error()}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.ID = "s"
			rep := tt.in.report()
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.Detail)
				if p.Session != "s" || p.Repairable != (p.Kind == storage.ProblemTorn) {
					t.Errorf("problem %+v", p)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("details\n got %q\nwant %q", got, tt.want)
			}
			if rep.Torn() != tt.torn || rep.Torn() != tt.in.Torn() || rep.Repaired != tt.in.Repaired || rep.Records != tt.in.Records {
				t.Fatalf("report %+v from %+v", rep, tt.in)
			}
			if !errors.Is(rep.Damaged(), storage.ErrCorrupt) != (tt.in.Damaged == nil) || !errors.Is(rep.NewerFormat(), storage.ErrNewerFormat) != (tt.in.NewerFormat == nil) {
				t.Fatalf("Damaged() %v, NewerFormat() %v", rep.Damaged(), rep.NewerFormat())
			}
		})
	}
}
