package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
)

// The reader must accept only what encoding/json accepts, with the same strings: these tests
// compare the two on odd values, random values, random damage to them and fuzzed bytes.

// check fails t unless what the reader makes of raw agrees with encoding/json; wantRead also
// requires the reader to have read it.
func check(t *testing.T, raw string, wantRead bool) {
	t.Helper()
	r := jsonscan.NewReader(raw, 64)
	read := r.Whole()
	valid := json.Valid([]byte(raw))
	switch {
	case read && !valid:
		t.Fatalf("%q: the reader reads what json.Valid refuses", raw)
	case wantRead && !read:
		t.Fatalf("%q: the reader declined it", raw)
	case !read:
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Spaces(), len(raw)-compact.Len(); got != want {
		t.Fatalf("%q: Spaces() = %d, want %d", raw, got, want)
	}
	r = jsonscan.NewReader(raw, 64)
	if n, ok := r.CompactRunes(); !ok || n != utf8.RuneCount(compact.Bytes()) {
		t.Fatalf("%q: CompactRunes() = %d, %v, want %d", raw, n, ok, utf8.RuneCount(compact.Bytes()))
	}
	// Every string, keys included, as encoding/json decodes it, in order.
	var want []string
	dec := json.NewDecoder(strings.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if s, ok := tok.(string); ok {
			want = append(want, s)
		}
	}
	var got []string
	r = jsonscan.NewReader(raw, 64)
	r.OnString = func(s jsonscan.String) bool {
		v := string(s.AppendValue(nil))
		// The token again, with its characters counted.
		q := jsonscan.NewReader(`"`+s.Raw+`"`, 64)
		if _, n, ok := q.StrRunes(); !ok || n != utf8.RuneCountInString(v) {
			t.Fatalf("%q: StrRunes() of %q = %d, %v, want %d", raw, s.Raw, n, ok, utf8.RuneCountInString(v))
		}
		if s.Plain() && v != s.Raw {
			t.Fatalf("%q: %q is plain but decodes to %q", raw, s.Raw, v)
		}
		got = append(got, v)
		return true
	}
	if !r.Whole() || strings.Join(got, "\x00|") != strings.Join(want, "\x00|") {
		t.Fatalf("%q: strings\n%q\nwant\n%q", raw, got, want)
	}
}

func TestReaderShapes(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		read bool
	}{
		{`{}`, true}, {`[]`, true}, {` { "a" : [ 1 , -0.5e+3 , true , false , null ] } `, true},
		{`"plain"`, true}, {`"\n\t\"\\\/\b\f\r"`, true}, {`"\u00e9\u20AC\ud83d\ude00"`, true},
		{`"\ud83d"`, true}, {`"\ude00\ud83d"`, true}, {`"\ud83d\u0041"`, true}, {`"\ud83d\n"`, true},
		{"\"a\xffb\xe2\x82\\u00e9\xa9\"", true}, {`"ééé€€😀 text"`, true}, {`0`, true}, {`-0`, true},
		{`12.5E-3`, true}, {`{"a":{"a":{"a":[[[]]]}}}`, true}, {strings.Repeat("[", 64) + strings.Repeat("]", 64), true},

		{strings.Repeat("[", 65) + strings.Repeat("]", 65), false}, // deeper than the reader follows
		{``, false}, {` `, false}, {`01`, false}, {`1.`, false}, {`.5`, false}, {`-`, false}, {`1e`, false},
		{`+1`, false}, {`tru`, false}, {`nul`, false}, {`"a`, false}, {"\"a\nb\"", false}, {`"\q"`, false},
		{`"\u12"`, false}, {`"\u12g4"`, false}, {`{"a"}`, false}, {`{"a":1,}`, false}, {`[1,]`, false},
		{`{1:2}`, false}, {`[1 2]`, false}, {`{} {}`, false}, {`}`, false}, {`[`, false},
	} {
		check(t, tt.raw, tt.read)
	}
}

// randomString returns a string token of random pieces: escapes, multi-byte and invalid
// UTF-8, plain runs long enough for the eight-byte steps.
func randomString(rng *rand.Rand) string {
	return `"` + jsontest.Pieces(rng, stringParts, 12) + `"`
}

var stringParts = append([]string{
	"a", " ", "é", "€", "😀", "\xff", "\xe2\x82", "\x80", "\xed\xa0\x80", "{", "]", ":", ",",
	"a plain run of text", "0123456789abcdef",
}, jsontest.Escapes...)

func TestReaderRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for range 20000 {
		v := jsontest.Value(rng, 0, randomString)
		check(t, v, json.Valid([]byte(v))) // see jsontest.Object
		check(t, jsontest.Damage(rng, v), false)
	}
}

func FuzzReader(f *testing.F) {
	rng := rand.New(rand.NewPCG(4, 2))
	for range 50 {
		f.Add(jsontest.Value(rng, 0, randomString))
	}
	f.Fuzz(func(t *testing.T, raw string) { check(t, raw, false) })
}

// TestElements: an array's elements are handed over one by one, the array counts against the
// depth limit, and a malformed array or an element its reader refuses is reported.
func TestElements(t *testing.T) {
	for _, c := range []struct {
		in    string
		depth int
		want  []string
		ok    bool
	}{
		{`[]`, 4, nil, true},
		{`[1, "a" ,{"k":[2]}]`, 4, []string{`1`, `"a"`, `{"k":[2]}`}, true},
		{`[1 2]`, 4, []string{`1`}, false},
		{`[1,]`, 4, []string{`1`}, false},
		{`[1`, 4, []string{`1`}, false},
		{`{}`, 4, nil, false},
		{`[[1]]`, 0, nil, false},
	} {
		r := jsonscan.NewReader(c.in, c.depth)
		var got []string
		ok := r.Elements(func() bool {
			v, ok := r.Value()
			if ok {
				got = append(got, v)
			}
			return ok
		})
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("Elements(%s): %q %v, want %q %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
