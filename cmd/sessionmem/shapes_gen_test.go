package main

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
	"github.com/sessionmem/sessionmem/memory"
)

// Messages of extreme shapes, for TestExtremeShapes and FuzzExtremeShapes: deep (right at the
// nesting limit), wide, huge strings, many blocks, every Unicode plane written raw and as
// escapes, empty strings and lists, odd numbers, repeated keys in arguments. A message is
// built as a value (jv) and written as JSON with randomly chosen escapes and white space, so
// that what was sent and what must come back are known exactly and separately.

// planeRune returns a random character (a Unicode scalar value: never a surrogate) of
// plane p (0 to 16).
func planeRune(rng *rand.Rand, p int) rune {
	for {
		r := rune(p<<16 | rng.IntN(0x10000))
		if utf8.ValidRune(r) {
			return r
		}
	}
}

// specials are characters that encoders, tokenizers and terminals treat specially.
var specials = []rune{0, 1, 0x1f, 0x7f, 0x80, 0x9f, 0xa0, 0xad, '<', '>', '&', '"', '\\', '/', '\'', '\n', '\r', '\t',
	0x2028, 0x2029, 0x200b, 0x200d, 0x202e, 0xfeff, 0xfffd, 0xfffe, 0xffff, 0xd7ff, 0xe000, 0x1f600, 0x1f1fa, 0xe0001,
	0xf0000, 0x10fffd, 0x10ffff}

// text returns a string of up to n characters: a marker word now and then, characters of
// every plane and the specials, and words.
func text(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		switch k := rng.IntN(10); {
		case k < 3:
			b.WriteString([]string{"retry ", "the ", "backoff ", "login.go ", "parseConfig ", "x "}[rng.IntN(6)])
		case k < 5:
			b.WriteRune(specials[rng.IntN(len(specials))])
		default:
			b.WriteRune(planeRune(rng, rng.IntN(17)))
		}
	}
	return b.String()
}

// allPlanes is one character of each of the 17 planes and every special, in order.
func allPlanes(rng *rand.Rand) string {
	var b strings.Builder
	for p := range 17 {
		b.WriteRune(planeRune(rng, p))
	}
	for _, r := range specials {
		b.WriteRune(r)
	}
	return b.String()
}

// numbers are number texts at the edges of what encoders keep.
var numbers = []string{"0", "-0", "1", "-1", "12345678901234567890123", "-9223372036854775809", "1e400", "-1E-400",
	"0.1", "1.0", "2.50", "1e2", "1E+2", "6.02214076e23", "0.000000000000000000001", "9007199254740993"}

// argsValue returns a random arguments value nested at most depth levels (an object or list
// counts one), its strings drawn by str.
func argsValue(rng *rand.Rand, depth int, str func() string) jv {
	k := rng.IntN(8)
	if depth <= 0 && k >= 6 {
		k = rng.IntN(6)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return jnum(numbers[rng.IntN(len(numbers))])
	case 3, 4, 5:
		return str()
	case 6:
		list := []jv{}
		for range rng.IntN(4) {
			list = append(list, argsValue(rng, depth-1, str))
		}
		return list
	}
	obj := jobj{}
	for range rng.IntN(4) {
		obj = append(obj, jkv{str(), argsValue(rng, depth-1, str)})
	}
	return obj
}

// deepArgs returns an arguments object nested exactly depth levels, mixing objects and lists,
// with marker at the bottom.
func deepArgs(rng *rand.Rand, depth int, marker string) jobj {
	var v jv = marker
	for level := depth; level > 1; level-- {
		if rng.IntN(2) == 0 {
			v = []jv{v}
		} else {
			v = jobj{{text(rng, 3), v}}
		}
	}
	return jobj{{"deep", v}}
}

// shapeMsg is one message: what is sent (json) and what must come back (want, in block form
// with message and block keys sorted; nil when the message must be refused).
type shapeMsg struct {
	json   string
	want   jv
	marker string // a word in the message's text, "" if none
	deep   string // a word at the bottom of its deepest arguments, "" if none
	pinned bool
}

// block builders: each returns the block as sent and as it comes back.
func textBlock(s string) jobj { return jobj{{"type", "text"}, {"text", s}} }

// expectBlock returns a sent block as it comes back: a tool_result's string content as one
// text block, keys sorted.
func expectBlock(b jobj) jobj {
	out := jobj{}
	for _, m := range b {
		if t, _ := b.get("type"); t == "tool_result" && m.k == "content" {
			switch c := m.v.(type) {
			case string:
				m.v = []jv{textBlock(c).sorted()}
			case []jv:
				nested := []jv{}
				for _, x := range c {
					nested = append(nested, expectBlock(x.(jobj)))
				}
				m.v = nested
			}
		}
		out = append(out, m)
	}
	return out.sorted()
}

// newShapeMsg builds a message from its fields; content is a string or blocks.
func newShapeMsg(rng *rand.Rand, id, role string, content jv, usage, pinned bool) shapeMsg {
	sent := jobj{}
	if id != "" {
		sent = append(sent, jkv{"id", id})
	}
	sent = append(sent, jkv{"role", role}, jkv{"content", content})
	if usage {
		sent = append(sent, jkv{"usage", jobj{{"input_tokens", jnum("12345")}, {"output_tokens", jnum("0")}}})
	}
	if pinned {
		sent = append(sent, jkv{"pinned", true})
	}
	rng.Shuffle(len(sent), func(i, j int) { sent[i], sent[j] = sent[j], sent[i] })
	want := jobj{}
	for _, m := range sent {
		if m.k == "content" {
			switch c := content.(type) {
			case string:
				m.v = []jv{textBlock(c).sorted()}
			case []jv:
				blocks := []jv{}
				for _, b := range c {
					blocks = append(blocks, expectBlock(b.(jobj)))
				}
				m.v = blocks
			}
		}
		if m.k == "usage" {
			m.v = m.v.(jobj).sorted()
		}
		want = append(want, m)
	}
	return shapeMsg{json: encodeJV(rng, sent), want: want.sorted(), pinned: pinned}
}

// Kinds of session the generator makes.
const (
	shapeDeep = iota
	shapeWide
	shapeHuge
	shapePlanes
	shapeEmpty
	shapeNumbers
	shapeMixed
	numShapes
)

var shapeNames = []string{"deep", "wide", "huge", "planes", "empty", "numbers", "mixed"}

// shapeGen draws the messages of sessions; seq numbers the markers and ids it gives. The
// huge strings and wide values are divided by small (1 when zero): fuzzing wants each input
// done in seconds.
type shapeGen struct {
	rng   *rand.Rand
	seq   int
	small int
}

// size returns n divided by g.small.
func (g *shapeGen) size(n int) int { return n / max(g.small, 1) }

// word returns a new marker word (letters only, so every tokenizer keeps it whole).
func (g *shapeGen) word(prefix string) string {
	g.seq++
	s := prefix
	for n := g.seq; n > 0; n /= 26 {
		s += string(rune('a' + n%26))
	}
	return s
}

// id returns a client id for a message, or "" one time in five.
func (g *shapeGen) id() string {
	if g.rng.IntN(5) == 0 {
		return ""
	}
	return g.word("m")
}

// str draws a short string for arguments and keys.
func (g *shapeGen) str() string {
	switch g.rng.IntN(6) {
	case 0:
		return ""
	case 1:
		return allPlanes(g.rng)
	}
	return text(g.rng, g.rng.IntN(12))
}

// user, assistant and result build the three kinds of message with a marker in their text.
func (g *shapeGen) user(content func(marker string) jv) shapeMsg {
	m := g.word("zq")
	msg := newShapeMsg(g.rng, g.id(), "user", content(" "+m+" "), false, false)
	msg.marker = m
	return msg
}

func (g *shapeGen) assistant(blocks ...jobj) shapeMsg {
	m := g.word("zq")
	content := []jv{textBlock(text(g.rng, 40) + " " + m + " " + text(g.rng, 20))}
	for _, b := range blocks {
		content = append(content, b)
	}
	msg := newShapeMsg(g.rng, g.id(), "assistant", content, g.rng.IntN(3) == 0, false)
	msg.marker = m
	return msg
}

func (g *shapeGen) result(callID string, content jv) shapeMsg {
	b := jobj{{"type", "tool_result"}, {"tool_call_id", callID}, {"content", content}}
	if g.rng.IntN(2) == 0 {
		b = append(b, jkv{"is_error", g.rng.IntN(2) == 0})
	}
	return newShapeMsg(g.rng, g.id(), "tool_result", []jv{b}, false, false)
}

func callBlock(id, name string, args jv) jobj {
	return jobj{{"type", "tool_call"}, {"id", id}, {"name", name}, {"arguments", args}}
}

// session returns the messages of one session of kind k.
func (g *shapeGen) session(kind int) []shapeMsg {
	rng := g.rng
	var out []shapeMsg
	if rng.IntN(2) == 0 { // standing context, pinned
		p := newShapeMsg(rng, g.word("p"), "user", "Port the build to Go. Never touch vendor/. "+allPlanes(rng), false, true)
		out = append(out, p)
	}
	// call returns an assistant message calling a tool with args, and the tool's result.
	callWith := func(args jv, result jv) (shapeMsg, shapeMsg) {
		id := g.word("c")
		a := g.assistant(callBlock(id, []string{"read", "bash", "edit", "x"}[rng.IntN(4)], args))
		return a, g.result(id, result)
	}
	call := func(args jv) (shapeMsg, shapeMsg) { return callWith(args, text(rng, 60)) }
	switch kind {
	case shapeDeep:
		out = append(out, g.user(func(m string) jv { return "go deep" + m }))
		for range 2 {
			d := g.word("zqdeep")
			a, r := call(deepArgs(rng, memory.MaxArgumentsDepth, d))
			a.deep = d
			out = append(out, a, r)
		}
		objects := jv(g.word("zqdeep"))
		for range memory.MaxArgumentsDepth - 1 {
			objects = jobj{{"k", objects}}
		}
		a, r := call(objects)
		out = append(out, a, r)
	case shapeWide:
		wide := jobj{}
		for i := range g.size(5000) {
			wide = append(wide, jkv{fmt.Sprintf("k%d%s", i, text(rng, 2)), argsValue(rng, 1, g.str)})
		}
		list := make([]jv, g.size(20000))
		for i := range list {
			list[i] = jnum(numbers[rng.IntN(len(numbers))])
		}
		wide = append(wide, jkv{"list", list})
		a, r := call(wide)
		blocks := []jv{}
		for range g.size(2000) {
			blocks = append(blocks, textBlock(text(rng, 8)))
		}
		out = append(out, a, r, g.user(func(m string) jv { return append(blocks, textBlock(m)) }))
	case shapeHuge:
		// Over the MiB of an entry's text that search indexes (ftsindex's MaxTextBytes;
		// PostgreSQL's tsvector is bounded too), so the word comes first.
		out = append(out, g.user(func(m string) jv { return m + text(rng, g.size(3<<19)) }))
		a, r := callWith(jobj{{"content", text(rng, g.size(512<<10))}}, text(rng, g.size(512<<10)))
		out = append(out, a, r)
		out = append(out, g.assistant(jobj{{"type", "thinking"}, {"thinking", text(rng, g.size(256<<10))}}))
	case shapePlanes:
		s := func() string { return allPlanes(rng) + text(rng, 30) }
		out = append(out, g.user(func(m string) jv { return s() + m }))
		id := s()
		out = append(out, g.assistant(jobj{{"type", "thinking"}, {"thinking", s()}}, callBlock(id, s(), jobj{{s(), s()}, {"", []jv{s(), s()}}})))
		out = append(out, g.result(id, []jv{textBlock(s()), jobj{{"type", "image"}, {"media_type", s()}, {"data", s()}}}))
		out = append(out, g.user(func(m string) jv {
			return []jv{textBlock(s() + m), jobj{{"type", "image"}, {"media_type", "image/png"}, {"data", "iVBORw0KGgo="}}}
		}))
	case shapeEmpty:
		out = append(out, g.user(func(m string) jv { return []jv{textBlock(""), textBlock(m)} }))
		out = append(out, g.assistant(jobj{{"type", "thinking"}, {"thinking", ""}}, callBlock(g.word("c"), "x", jobj{}),
			callBlock(g.word("c"), "y", jobj{{"", ""}, {"e", []jv{}}, {"o", jobj{}}, {"n", []jv{[]jv{}, jobj{}}}}),
			jobj{{"type", "tool_call"}, {"id", g.word("c")}, {"name", "no-arguments"}}))
		id := g.word("c")
		out = append(out, g.assistant(callBlock(id, "z", jobj{})))
		out = append(out, newShapeMsg(rng, g.id(), "tool_result", []jv{
			jobj{{"type", "tool_result"}, {"tool_call_id", id}, {"content", []jv{}}},
			jobj{{"type", "tool_result"}, {"tool_call_id", id}, {"content", ""}, {"is_error", false}},
			jobj{{"type", "tool_result"}, {"tool_call_id", id}},
		}, false, false))
	case shapeNumbers:
		nums := []jv{}
		for _, n := range numbers {
			nums = append(nums, jnum(n))
		}
		a, r := call(jobj{{"n", nums}, {"dup", jnum("1")}, {"dup", "two"}, {"nested", jobj{{"a", true}, {"a", nil}, {"a", jnum("-0")}}}})
		out = append(out, a, r)
	case shapeMixed:
		for range 3 + rng.IntN(10) {
			switch rng.IntN(3) {
			case 0:
				out = append(out, g.user(func(m string) jv { return text(rng, rng.IntN(3000)) + m }))
			case 1:
				a, r := call(jobj{{g.str(), argsValue(rng, 6, g.str)}, {g.str(), argsValue(rng, 6, g.str)}})
				out = append(out, a, r)
			default:
				d := g.word("zqdeep")
				a, r := call(deepArgs(rng, 1+rng.IntN(memory.MaxArgumentsDepth), d))
				a.deep = d
				out = append(out, a, r)
			}
		}
	}
	out = append(out, g.user(func(m string) jv { return "and then" + m }))
	return out
}

// TestShapeGenerator checks that the generator makes what the shape tests claim: a message
// nested exactly memory.MaxMessageDepth levels, characters of all 17 planes, and texts that
// read back as the values they were written from.
func TestShapeGenerator(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	g := &shapeGen{rng: rng, small: 16} // the sizes play no part here
	atLimit := false
	for _, m := range g.session(shapeDeep) {
		atLimit = atLimit || jsonscan.Deeper([]byte(m.json), memory.MaxMessageDepth-1) && !jsonscan.Deeper([]byte(m.json), memory.MaxMessageDepth)
	}
	if !atLimit {
		t.Error("no message of a deep session nests exactly at the limit")
	}
	planes := map[int]bool{}
	for _, m := range g.session(shapePlanes) {
		v, err := parseJV([]byte(m.json))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range encodeJV(rand.New(rand.NewPCG(0, 0)), v) {
			planes[int(r>>16)] = true
		}
	}
	if len(planes) != 17 {
		t.Errorf("characters of %d planes, want all 17", len(planes))
	}
	for kind := range numShapes {
		for _, m := range g.session(kind) {
			v, err := parseJV([]byte(m.json))
			if err != nil {
				t.Fatalf("%s: %v", shapeNames[kind], err)
			}
			if again, _ := parseJV([]byte(encodeJV(rng, v))); !reflect.DeepEqual(again, v) {
				t.Fatalf("%s: a value does not read back as written", shapeNames[kind])
			}
		}
	}
}
