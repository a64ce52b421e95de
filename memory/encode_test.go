package memory

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
	"github.com/sessionmem/sessionmem/message"
)

// oracleEntry mirrors a message entry's envelope for encoding/json; the message inside is
// message.Append's (message.TestAppendMatchesEncodingJSON holds it to its own oracle).
type oracleEntry struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	ParentID string          `json:"parent_id,omitempty"`
	Time     time.Time       `json:"ts"`
	Message  json.RawMessage `json:"message,omitempty"`
}

// envelopePieces are what the entry's strings are made of: every escaping rule and UTF-8 case.
var envelopePieces = []string{"a", " ", "<", ">", "&", `"`, `\`, "\x00", "\n", "\x1f", "é", "😀", "\u2028", "\xff", "\xed\xa0\x80", "abc"}

func TestAppendMessageEntryMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+30*60), time.FixedZone("y", -7*3600)}
	rs := func() string { return jsontest.Pieces(r, envelopePieces, 12) }
	for i := range 3000 {
		m := &Message{Role: RoleUser, ID: rs(), Content: []Block{{Type: BlockText, Text: rs()}}}
		e := Entry{Type: KindMessage, ID: rs(), Message: m,
			Time: time.Unix(r.Int64N(1<<33), r.Int64N(1e9)*int64(r.IntN(2))).In(zones[r.IntN(len(zones))])}
		if r.IntN(2) == 0 {
			e.ParentID = rs()
		}
		got, ok := appendMessageEntry(nil, &e)
		if !ok {
			t.Fatalf("case %d: not encoded", i)
		}
		js, err := message.Append(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := message.MarshalNoEscape(oracleEntry{Type: e.Type, ID: e.ID, ParentID: e.ParentID, Time: e.Time, Message: js})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
		if enc, err := encodeEntry(e); err != nil || string(enc) != string(got) {
			t.Fatalf("case %d: encodeEntry %s, %v", i, enc, err)
		}
	}
}

func TestAppendMessageEntryLeavesOthers(t *testing.T) {
	for _, e := range []Entry{
		{Type: KindLabel, ID: "l", Label: &Label{}},
		{Type: KindMessage, ID: "m"}, // no message
		{Type: KindMessage, ID: "m", Message: &Message{Role: RoleUser}, Label: &Label{}},
		{Type: KindMessage, ID: "m", Message: &Message{Role: RoleUser}, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if _, ok := appendMessageEntry(nil, &e); ok {
			t.Errorf("%+v: encoded by the fast path", e)
		}
	}
}
