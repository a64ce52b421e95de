package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

func testAppendRead(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	got := appendJSON(t, s, "a", storage.Meta{}, `{"type":"message","x":1}`, `{"y":"two"}`)
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 || got[0].Kind != "message" {
		t.Fatalf("append returned %+v", got)
	}
	err := s.Update(context.Background(), "a", func(w storage.Writer) error {
		if w.LastSeq() != 2 {
			return fmt.Errorf("writer last seq %d", w.LastSeq())
		}
		out, err := w.Append([]storage.Record{{Kind: "compaction", Data: []byte(`{"z":3}`), Barrier: true}, {Kind: "message", Data: []byte(`{"type":"message"}`)}}, storage.Meta{})
		if err != nil {
			return err
		}
		if out[0].Seq != 3 || out[1].Seq != 4 || w.LastSeq() != 4 {
			return fmt.Errorf("second batch %+v, last %d", out, w.LastSeq())
		}
		// Read your writes inside the same Update.
		n := 0
		for rec, err := range w.Records(3) {
			if err != nil {
				return err
			}
			n++
			_ = rec
		}
		if n != 2 {
			return fmt.Errorf("writer read %d records from 3", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"seq":1,"type":"message","x":1}`, `{"seq":2,"y":"two"}`, `{"seq":3,"type":"compaction","z":3}`, `{"seq":4,"type":"message"}`}
	if got := readAll(t, s, "a", 1); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("read back\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	err = s.View(context.Background(), "a", func(r storage.Reader) error {
		kinds := []string{}
		for rec, err := range r.Records(1) {
			if err != nil {
				return err
			}
			kinds = append(kinds, rec.Kind)
		}
		if strings.Join(kinds, ",") != "message,,compaction,message" {
			return fmt.Errorf("kinds %v", kinds)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testRecordsFrom(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	const n = 300
	for i := 0; i < n; i += 30 {
		var objs []string
		for j := i; j < i+30; j++ {
			objs = append(objs, fmt.Sprintf(`{"i":%d,"pad":%q}`, j+1, strings.Repeat("p", j*7%500)))
		}
		appendJSON(t, s, "a", storage.Meta{}, objs...)
	}
	for _, from := range []uint64{0, 1, 2, 29, 30, 31, 150, 299, 300, 301, 1000} {
		got := readAll(t, s, "a", from)
		start := max(from, 1)
		wantN := 0
		if start <= n {
			wantN = int(n - start + 1)
		}
		if len(got) != wantN {
			t.Fatalf("Records(%d) gave %d records, want %d", from, len(got), wantN)
		}
		if wantN > 0 && !strings.HasPrefix(got[0], fmt.Sprintf(`{"seq":%d,"i":%d,`, start, start)) {
			t.Fatalf("Records(%d) starts with %.40s", from, got[0])
		}
	}
	// Stopping early is allowed.
	err := s.View(context.Background(), "a", func(r storage.Reader) error {
		for rec, err := range r.Records(10) {
			if err != nil || rec.Seq != 10 {
				return fmt.Errorf("first record %d, %v", rec.Seq, err)
			}
			break
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testAppendRejects(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	appendJSON(t, s, "a", storage.Meta{}, `{"ok":1}`)
	for _, tc := range []struct {
		name string
		recs []storage.Record
	}{
		{"not an object", []storage.Record{{Data: []byte(`[1]`)}}},
		{"invalid json", []storage.Record{{Data: []byte(`{"a":`)}}},
		{"empty", []storage.Record{{Data: nil}}},
		{"has seq", []storage.Record{{Data: []byte(`{"seq":5}`)}}},
		{"kind differs", []storage.Record{{Kind: "a", Data: []byte(`{"type":"b"}`)}}},
		{"type not a string", []storage.Record{{Data: []byte(`{"type":1}`)}}},
		{"bad record after good", []storage.Record{{Data: []byte(`{"good":1}`)}, {Data: []byte(`nope`)}}},
	} {
		err := s.Update(context.Background(), "a", func(w storage.Writer) error {
			_, err := w.Append(tc.recs, storage.Meta{})
			return err
		})
		if err == nil {
			t.Errorf("%s: append succeeded", tc.name)
		}
	}
	if got := readAll(t, s, "a", 1); len(got) != 1 {
		t.Fatalf("rejected appends wrote records: %v", got)
	}
}

func testExactBytes(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	objs := []string{
		`{"t":"<b>&amp; \u00e9 é 日本 🙂","n":1.50,"e":[]}`,
		`{"esc":"a\"b\\c\n\t\u0000","big":12345678901234567890}`,
		`{"nested":{"k":[{"x":null},{"y":true}]},"s":""}`,
		`{ "spaced" : 1 }`,
	}
	appendJSON(t, s, "a", storage.Meta{}, objs...)
	got := readAll(t, s, "a", 1)
	want := []string{
		`{"seq":1,"t":"<b>&amp; \u00e9 é 日本 🙂","n":1.50,"e":[]}`,
		`{"seq":2,"esc":"a\"b\\c\n\t\u0000","big":12345678901234567890}`,
		`{"seq":3,"nested":{"k":[{"x":null},{"y":true}]},"s":""}`,
		`{"seq":4,"spaced" : 1 }`,
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
}

// testNormalize: every backend stores the same line for the same input (storage.AppendRecord):
// surrounding white space trimmed, line breaks compacted away, the kind added after the seq.
func testNormalize(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	err := s.Update(context.Background(), "a", func(w storage.Writer) error {
		_, err := w.Append([]storage.Record{
			{Data: []byte("  {\n  \"a\" : [1,\n 2],\r\n \"s\": \"x y\"\n}\t ")},
			{Kind: "k", Data: []byte(`{}`)},
			{Kind: "k", Data: []byte(`{ "z":1}`)},
			{Kind: "k", Data: []byte(`{"type":"k","z":2}`)},
			{Data: []byte(`{}`)},
		}, storage.Meta{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"seq":1,"a":[1,2],"s":"x y"}`,
		`{"seq":2,"type":"k"}`,
		`{"seq":3,"type":"k","z":1}`,
		`{"seq":4,"type":"k","z":2}`,
		`{"seq":5}`,
	}
	got := readAll(t, s, "a", 1)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, line := range want {
		seq := uint64(i + 1)
		data, ok := storage.StripSeq([]byte(line))
		if !ok {
			t.Fatalf("StripSeq(%s) failed", line)
		}
		again, _, err := storage.AppendRecord(nil, storage.Record{Data: data}, seq)
		if err != nil || string(again) != line+"\n" {
			t.Fatalf("StripSeq does not invert AppendRecord: %s -> %s -> %q (%v)", line, data, again, err)
		}
	}
}

// testKeys: records with keys read back exactly like records without; distinct keys across
// appends are accepted. (Whether a repeated key is refused is up to the backend: memory never
// repeats one.)
func testKeys(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	for i := 0; i < 3; i++ {
		err := s.Update(context.Background(), "a", func(w storage.Writer) error {
			_, err := w.Append([]storage.Record{
				{Data: []byte(fmt.Sprintf(`{"i":%d}`, i)), Key: fmt.Sprintf("k%d-a", i)},
				{Data: []byte(fmt.Sprintf(`{"i":%d,"b":1}`, i))},
				{Data: []byte(fmt.Sprintf(`{"i":%d,"c":1}`, i)), Key: fmt.Sprintf("k%d-c", i)},
			}, storage.Meta{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	got := readAll(t, s, "a", 4)
	if len(got) != 6 || got[0] != `{"seq":4,"i":1}` || got[5] != `{"seq":9,"i":2,"c":1}` {
		t.Fatalf("read back %v", got)
	}
}

func testLargeRecord(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	big := strings.Repeat("0123456789abcdef", 3<<16) // 3 MiB
	appendJSON(t, s, "a", storage.Meta{}, `{"small":1}`, `{"big":"`+big+`"}`, `{"small":2}`)
	got := readAll(t, s, "a", 2)
	if len(got) != 2 || got[0] != `{"seq":2,"big":"`+big+`"}` {
		t.Fatalf("large record did not round-trip (%d records)", len(got))
	}
}

// testRecordsTwice: a Reader's Records can be iterated more than once, and stopped early.
func testRecordsTwice(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	for i := 0; i < 10; i++ {
		appendJSON(t, s, "a", storage.Meta{}, `{"x":1}`, `{"x":2}`, `{"x":3}`)
	}
	err := s.View(context.Background(), "a", func(r storage.Reader) error {
		for pass := 0; pass < 3; pass++ {
			n := 0
			for rec, err := range r.Records(uint64(pass*7 + 1)) {
				if err != nil {
					return err
				}
				if rec.Seq != uint64(pass*7+1+n) {
					return fmt.Errorf("pass %d: record %d has seq %d", pass, n, rec.Seq)
				}
				n++
				if pass == 1 && n == 5 {
					break
				}
			}
			if want := []int{30, 5, 16}[pass]; n != want {
				return fmt.Errorf("pass %d read %d records, want %d", pass, n, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testUpdateError: after an Update whose fn failed (after appending or not), the session is
// consistent and later appends continue its sequence.
func testUpdateError(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	create(t, s, "a", "/w", t0)
	appendJSON(t, s, "a", storage.Meta{Messages: 1}, `{"x":1}`)
	boom := errors.New("boom")
	err := s.Update(ctx, "a", func(w storage.Writer) error {
		if _, err := w.Append([]storage.Record{{Data: []byte(`{"x":2}`)}}, storage.Meta{Messages: 2}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	err = s.Update(ctx, "a", func(w storage.Writer) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	out := appendJSON(t, s, "a", storage.Meta{Messages: 9}, `{"x":3}`)
	got := readAll(t, s, "a", 1)
	if len(got) == 0 || out[0].Seq != uint64(len(got)) {
		t.Fatalf("after a failed Update: appended seq %d, read %v", out[0].Seq, got)
	}
	if m, _ := s.Get(ctx, "a"); m.LastSeq != out[0].Seq || m.Messages != 9 {
		t.Fatalf("meta after a failed Update: %+v", m)
	}
}
