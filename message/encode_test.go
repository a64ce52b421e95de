package message

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
)

// The oracle: encoding/json over plain structs mirroring Message and each block type's wire
// form, so it shares no code with the functions it checks.
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

func oracleEncode(t *testing.T, m *Message) string {
	t.Helper()
	b, err := MarshalNoEscape(oracleMessage{ID: m.ID, EntryID: m.EntryID, Role: m.Role, Content: oracleBlocks(m.Content), Usage: m.Usage, Pinned: m.Pinned})
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

// randMessage returns a random message with every escaping rule and UTF-8 case in its strings
// and blocks of every type, absent optional fields included.
func randMessage(r *rand.Rand) *Message {
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
	return m
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 3000 {
		m := randMessage(r)
		got, err := Append(nil, m)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if want := oracleEncode(t, m); string(got) != want {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
		// A block encodes alone as it does inside the message.
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

func TestAppendString(t *testing.T) {
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
		want, err := MarshalNoEscape(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
}

// TestAppendCompactJSON: arguments are compacted as json.Compact compacts them, and fail where
// it fails (and IsJSONObject agrees with json.Valid), on valid values (compact, spaced, with strings holding what looks like white
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
		// IsJSONObject reads arguments with the same reader: it must keep json.Valid's verdict.
		t0 := bytes.TrimLeft([]byte(in), " \t\r\n")
		if want := len(t0) > 0 && t0[0] == '{' && json.Valid([]byte(in)); IsJSONObject([]byte(in)) != want {
			t.Fatalf("%q: IsJSONObject = %v, want %v", in, !want, want)
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
		b, _ := MarshalNoEscape(randString(r))
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
		k, _ := MarshalNoEscape(randString(r))
		parts = append(parts, sp()+string(k)+sp()+":"+sp()+randJSON(r, depth+1)+sp())
	}
	return "{" + strings.Join(parts, ",") + "}"
}
