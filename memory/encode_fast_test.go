package memory

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
)

// The oracle: encoding/json over plain structs mirroring Entry, Message and each block
// type's wire form, so it shares no code with the functions it checks.
type oracleEntry struct {
	Type     string         `json:"type"`
	ID       string         `json:"id"`
	ParentID string         `json:"parent_id,omitempty"`
	Time     time.Time      `json:"ts"`
	Message  *oracleMessage `json:"message,omitempty"`
}

type oracleMessage struct {
	ID      string `json:"id,omitempty"`
	EntryID string `json:"entry_id,omitempty"`
	Role    Role   `json:"role"`
	Content []any  `json:"content"`
	Usage   *Usage `json:"usage,omitempty"`
	Pinned  bool   `json:"pinned,omitempty"`
}

func oracleBlocks(bs []Block) []any {
	if bs == nil {
		return nil
	}
	out := make([]any, len(bs))
	for i, b := range bs {
		out[i] = oracleBlock(b)
	}
	return out
}

func oracleBlock(b Block) any {
	if b.Type != BlockToolResult {
		return b.shape() // no nested blocks: plain structs
	}
	v := struct {
		Type       string `json:"type"`
		ToolCallID string `json:"tool_call_id"`
		Content    *[]any `json:"content,omitempty"`
		IsError    *bool  `json:"is_error,omitempty"`
	}{Type: b.Type, ToolCallID: b.ToolCallID}
	if b.absent&absentContent == 0 || len(b.Content) > 0 {
		c := oracleBlocks(b.Content)
		if c == nil {
			c = []any{}
		}
		v.Content = &c
	}
	if b.absent&absentIsError == 0 || b.IsError {
		v.IsError = &b.IsError
	}
	return v
}

func oracleEncode(t *testing.T, e Entry) string {
	t.Helper()
	o := oracleEntry{Type: e.Type, ID: e.ID, ParentID: e.ParentID, Time: e.Time}
	if m := e.Message; m != nil {
		o.Message = &oracleMessage{ID: m.ID, EntryID: m.EntryID, Role: m.Role, Content: oracleBlocks(m.Content), Usage: m.Usage, Pinned: m.Pinned}
	}
	b, err := marshalNoEscape(o)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pieces are the fragments random strings are made of: every escaping rule and UTF-8 case.
var pieces = []string{"a", "Z", " ", "<", ">", "&", `"`, `\`, "/", "\x00", "\x01", "\b", "\f", "\n", "\r", "\t", "\x1f", "\x7f",
	"é", "€", "😀", "\u2028", "\u2029", "\u2027", "\ufffd", "\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "abc def",
	"the quick brown fox jumps over the lazy dog", "0123456789abcdef"}

func randString(r *rand.Rand) string { return jsontest.Pieces(r, pieces, 12) }

var argsSamples = []string{`{}`, `{"a":1}`, ` { "path" : "<a&b>\u2028" , "n" : [ 1 , 2 ] } `, "{\n\t\"x\": {\"y\": null}\n}",
	`{"s":"a \" b \\" , "t" : "\\" }`, `{"content":"line one\nline two with some length to it\n\tindented \"quoted\""}`}

func randBlock(r *rand.Rand, depth int) Block {
	types := []string{BlockText, BlockThinking, BlockToolCall, BlockToolResult, BlockImage}
	b := Block{Type: types[r.IntN(len(types))], absent: absentFields(r.IntN(8))}
	switch b.Type {
	case BlockText:
		b.Text = randString(r)
	case BlockThinking:
		b.Thinking = randString(r)
	case BlockToolCall:
		b.ID, b.Name = randString(r), randString(r)
		if r.IntN(3) > 0 {
			b.Arguments = json.RawMessage(argsSamples[r.IntN(len(argsSamples))])
		}
	case BlockToolResult:
		b.ToolCallID, b.IsError = randString(r), r.IntN(2) == 0
		if depth == 0 {
			switch r.IntN(3) {
			case 0:
				b.Content = []Block{}
			case 1:
				for range r.IntN(3) + 1 {
					b.Content = append(b.Content, randBlock(r, 1))
				}
			}
		}
	case BlockImage:
		b.MediaType, b.Data = randString(r), randString(r)
	}
	return b
}

func TestAppendMessageEntryMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+30*60), time.FixedZone("y", -7*3600)}
	for i := range 3000 {
		m := &Message{Role: []Role{RoleUser, RoleAssistant, RoleToolResult, RoleSystem, Role(randString(r))}[r.IntN(5)], Pinned: r.IntN(4) == 0}
		if r.IntN(2) == 0 {
			m.ID = randString(r)
		}
		if r.IntN(5) == 0 {
			m.EntryID = randString(r)
		}
		if r.IntN(3) == 0 {
			m.Usage = &Usage{InputTokens: r.IntN(1 << 20), OutputTokens: -r.IntN(5)}
		}
		if r.IntN(20) > 0 {
			m.Content = []Block{}
			for range r.IntN(4) {
				m.Content = append(m.Content, randBlock(r, 0))
			}
		}
		e := Entry{Type: KindMessage, ID: randString(r), Message: m,
			Time: time.Unix(r.Int64N(1<<33), r.Int64N(1e9)*int64(r.IntN(2))).In(zones[r.IntN(len(zones))])}
		if r.IntN(2) == 0 {
			e.ParentID = randString(r)
		}
		got, ok := appendMessageEntry(nil, &e)
		if !ok {
			t.Fatalf("case %d: not encoded", i)
		}
		if want := oracleEncode(t, e); string(got) != want {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
		if enc, err := encodeEntry(e); err != nil || string(enc) != string(got) {
			t.Fatalf("case %d: encodeEntry %s, %v", i, enc, err)
		}
		// A block encodes alone as it does inside the entry.
		for _, b := range m.Content {
			got, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(oracleBlock(b)) // both HTML-escaped by json.Marshal
			if string(got) != string(want) {
				t.Fatalf("case %d: block\n got %s\nwant %s", i, got, want)
			}
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

func TestAppendJSONString(t *testing.T) {
	var all []string
	for c := range 256 {
		all = append(all, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"y")
	}
	all = append(all, pieces...)
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		all = append(all, randString(r))
	}
	for _, s := range all {
		want, err := marshalNoEscape(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
}

// TestAppendCompactJSON: arguments are compacted as json.Compact compacts them, and fail where
// it fails (and isJSONObject agrees with json.Valid), on valid values (compact, spaced, with strings holding what looks like white
// space and quotes) and damaged ones.
func TestAppendCompactJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	inputs := append([]string{``, ` `, `{`, `{"a":1}x`, `{"a":01}`, `"\x"`, "\"\x01\"", `[1,]`, `{"a" 1}`, `nul`,
		strings.Repeat("[", 600) + strings.Repeat("]", 600)}, argsSamples...)
	for range 3000 {
		v := randJSON(r, 0)
		inputs = append(inputs, v)
		i := r.IntN(len(v))
		inputs = append(inputs, v[:i]+v[i+1:], v[:i]+" "+v[i:], v[:i]+`"`+v[i:])
	}
	for _, in := range inputs {
		// isJSONObject reads arguments with the same reader: it must keep json.Valid's verdict.
		t0 := bytes.TrimLeft([]byte(in), " \t\r\n")
		if want := len(t0) > 0 && t0[0] == '{' && json.Valid([]byte(in)); isJSONObject([]byte(in)) != want {
			t.Fatalf("%q: isJSONObject = %v, want %v", in, !want, want)
		}
		var want bytes.Buffer
		werr := json.Compact(&want, []byte(in))
		got, err := appendCompactJSON([]byte("prefix"), []byte(in))
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q: error %v, json.Compact %v", in, err, werr)
		}
		if err == nil && string(got) != "prefix"+want.String() {
			t.Fatalf("%q: got %s, want prefix%s", in, got, want.String())
		}
	}
}

// randJSON returns a random JSON value with random white space between its tokens.
func randJSON(r *rand.Rand, depth int) string {
	sp := func() string { return []string{"", "", " ", "\n\t", "\r\n "}[r.IntN(5)] }
	switch n := r.IntN(7); {
	case n == 0 || depth > 3:
		return []string{"null", "true", "false", "0", "-12.5e+3", "7"}[r.IntN(6)]
	case n < 3:
		b, _ := marshalNoEscape(randString(r))
		return string(b)
	case n == 3:
		var parts []string
		for range r.IntN(4) {
			parts = append(parts, sp()+randJSON(r, depth+1)+sp())
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	var parts []string
	for range r.IntN(4) {
		k, _ := marshalNoEscape(randString(r))
		parts = append(parts, sp()+string(k)+sp()+":"+sp()+randJSON(r, depth+1)+sp())
	}
	return "{" + strings.Join(parts, ",") + "}"
}
