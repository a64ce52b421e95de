package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/internal/jsonscan"
	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
)

// nesting is the depth of valid JSON text as encoding/json's tokenizer reads it, without
// recursion; ok is false when the text is not valid JSON.
func nesting(b []byte) (deepest int, ok bool) {
	if !json.Valid(b) && !deepValid(b) {
		return 0, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return deepest, true
		}
		if err != nil {
			return 0, false
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// deepValid reports whether b is valid JSON nested deeper than json.Valid reads (10,000): the
// tokenizer reads it all the same.
func deepValid(b []byte) bool {
	d := json.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := d.Token(); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}

func TestDeeper(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  bool
	}{
		{`1`, 0, false},
		{`{}`, 0, true},
		{`{}`, 1, false},
		{`[[[]]]`, 2, true},
		{`[[[]]]`, 3, false},
		{`[[],[],[],[]]`, 2, false}, // many brackets, none deep
		{`["[[[[", "{{{{"]`, 1, false},
		{`["\"[[[[", "\\", [[]]]`, 2, true},
		{`["\\\"[[", "a\\\\"]`, 1, false},
		{`{"a\\":[{"b":"\\\\\"]]]"}]}`, 3, false},
		{`{"a\\":[{"b":"\\\\\"]]]"}]}`, 2, true},
		{`"unterminated [[[[[`, 0, false},
		{strings.Repeat("[", 20000) + strings.Repeat("]", 20000), 10000, true},
		{strings.Repeat("[", 10000) + strings.Repeat("]", 10000), 10000, false},
		{strings.Repeat(`{"a":`, 512) + "1" + strings.Repeat("}", 512), 512, false},
		{strings.Repeat(`{"a":`, 513) + "1" + strings.Repeat("}", 513), 512, true},
	}
	for _, tt := range tests {
		if got := jsonscan.Deeper([]byte(tt.in), tt.limit); got != tt.want {
			t.Errorf("Deeper(%.60s, %d) = %v, want %v", tt.in, tt.limit, got, tt.want)
		}
	}
}

// TestDeeperRandom compares Deeper with the depth encoding/json's tokenizer reads, at and
// around it, on random valid JSON (strings with escaped quotes, backslashes and brackets),
// and checks that it returns on damaged text.
func TestDeeperRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 11))
	for range 20000 {
		v := []byte(deepValue(rng))
		depth, ok := nesting(v)
		if ok {
			for _, limit := range []int{max(depth-1, 0), depth, depth + 1} {
				if got := jsonscan.Deeper(v, limit); got != (depth > limit) {
					t.Fatalf("Deeper(%s, %d) = %v; depth %d", v, limit, got, depth)
				}
			}
		}
		jsonscan.Deeper([]byte(jsontest.Damage(rng, string(v))), rng.IntN(4))
	}
}

// deepValue is a random JSON value, sometimes wrapped in up to 40 more levels.
func deepValue(rng *rand.Rand) string {
	v := jsontest.Value(rng, 0, randomString)
	for range rng.IntN(40) {
		if rng.IntN(2) == 0 {
			v = "[" + v + "]"
		} else {
			v = `{` + randomString(rng) + `:` + v + `}`
		}
	}
	return v
}

func FuzzDeeper(f *testing.F) {
	rng := rand.New(rand.NewPCG(6, 1))
	for range 50 {
		f.Add(deepValue(rng), 3)
	}
	f.Fuzz(func(t *testing.T, raw string, limit int) {
		depth, ok := nesting([]byte(raw))
		got := jsonscan.Deeper([]byte(raw), limit)
		if ok && limit >= 0 && got != (depth > limit) {
			t.Fatalf("Deeper(%q, %d) = %v; depth %d", raw, limit, got, depth)
		}
	})
}
