package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The JSON the shape tests write and read: values that keep what encoders may change (key
// order, repeated keys, the digits of numbers), written with escapes and white space chosen
// at random.

// jv is a JSON value whose objects keep their order and repeated keys, and whose numbers keep
// their digits: nil, bool, jnum, string, []jv or jobj.
type jv any

type (
	jnum string
	jobj []jkv
	jkv  struct {
		k string
		v jv
	}
)

// get returns the value of the last k in o.
func (o jobj) get(k string) (jv, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].k == k {
			return o[i].v, true
		}
	}
	return nil, false
}

// sorted returns o's members by key (stably): the shape of the message and block objects,
// whose key order is the server's to choose.
func (o jobj) sorted() jobj {
	s := append(jobj(nil), o...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].k < s[j].k })
	return s
}

// parseJV reads JSON text as a jv (it recurses: the texts it reads nest at most a few levels
// past memory.MaxMessageDepth).
func parseJV(b []byte) (jv, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := readJV(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("text after the value")
	}
	return v, nil
}

func readJV(d *json.Decoder) (jv, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			list := []jv{}
			for d.More() {
				v, err := readJV(d)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := d.Token()
			return list, err
		}
		obj := jobj{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := readJV(d)
			if err != nil {
				return nil, err
			}
			obj = append(obj, jkv{k.(string), v})
		}
		_, err := d.Token()
		return obj, err
	case json.Number:
		return jnum(t), nil
	}
	return tok, nil
}

// writer writes jv values as JSON text, choosing escapes and white space at random.
type writer struct {
	rng *rand.Rand
	b   strings.Builder
}

// space writes white space now and then; never a line break, which ends a message on stdio.
func (w *writer) space() {
	if w.rng.IntN(8) == 0 {
		w.b.WriteString([]string{" ", "\t", "  \t "}[w.rng.IntN(3)])
	}
}

func (w *writer) value(v jv) {
	w.space()
	switch x := v.(type) {
	case nil:
		w.b.WriteString("null")
	case bool:
		w.b.WriteString(strconv.FormatBool(x))
	case jnum:
		w.b.WriteString(string(x))
	case string:
		w.str(x)
	case []jv:
		w.b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.value(e)
		}
		w.space()
		w.b.WriteByte(']')
	case jobj:
		w.b.WriteByte('{')
		for i, m := range x {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.space()
			w.str(m.k)
			w.space()
			w.b.WriteByte(':')
			w.value(m.v)
		}
		w.space()
		w.b.WriteByte('}')
	default:
		panic(fmt.Sprintf("writer: %T", v))
	}
	w.space()
}

// str writes s as a JSON string, each character raw or escaped (\uXXXX, a surrogate pair
// beyond the BMP, or a short escape) at random; characters that must be escaped always are.
func (w *writer) str(s string) {
	w.b.WriteByte('"')
	escapeAll := w.rng.IntN(4) == 0
	for _, r := range s {
		esc := escapeAll || w.rng.IntN(16) == 0
		switch {
		case r == '"' || r == '\\':
			if esc {
				fmt.Fprintf(&w.b, `\u%04x`, r)
			} else {
				w.b.WriteByte('\\')
				w.b.WriteRune(r)
			}
		case r < 0x20:
			short := map[rune]string{'\n': `\n`, '\t': `\t`, '\r': `\r`, '\b': `\b`, '\f': `\f`}[r]
			if short != "" && !esc {
				w.b.WriteString(short)
			} else {
				fmt.Fprintf(&w.b, `\u%04X`, r)
			}
		case r == '/' && esc:
			w.b.WriteString(`\/`)
		case esc && r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&w.b, `\u%04x\u%04X`, r1, r2)
		case esc:
			fmt.Fprintf(&w.b, `\u%04x`, r)
		default:
			w.b.WriteRune(r)
		}
	}
	w.b.WriteByte('"')
}

// encodeJV returns v as JSON text written by a writer drawing from rng.
func encodeJV(rng *rand.Rand, v jv) string {
	w := writer{rng: rng}
	w.value(v)
	return w.b.String()
}
