package memory_test

import (
	"encoding/json"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/redact"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// BenchmarkSaveSteps times the CPU steps memory takes for one session_save of one ~2 KB
// corpus message with the server's default redaction, each step on its own (no store, no
// fsync): decoding the message as the transport hands it over, validating it, the
// redaction gate, encoding the entry and applying it to the session's state; "all" runs them
// in a row.
//
//	go test -run '^$' -bench SaveSteps -count 10 ./memory/
func BenchmarkSaveSteps(b *testing.B) {
	msgs := transcripttest.Sized(b, 200, 1024, 4096)
	raws := make([][]byte, len(msgs))
	for i, m := range msgs {
		raw, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = raw
	}
	r, err := redact.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	opts := memory.Options{Redact: r.String}
	x := memory.NewSaveSteps(opts)
	entries := make([]memory.Entry, len(msgs))
	encoded := make([][]byte, len(msgs))
	for i := range msgs {
		entries[i] = x.Entry(&msgs[i])
		if entries[i], err = x.Gate(entries[i]); err != nil {
			b.Fatal(err)
		}
		if encoded[i], err = x.Encode(entries[i]); err != nil {
			b.Fatal(err)
		}
	}
	step := func(name string, f func(i int) error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := f(i % len(msgs)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	step("decode", func(i int) error { _, err := memory.DecodeInputMessage(raws[i]); return err })
	step("validate", func(i int) error { return x.Validate(msgs[i : i+1]) })
	step("gate", func(i int) error { _, err := x.Gate(entries[i]); return err })
	step("encode", func(i int) error { _, err := x.Encode(entries[i]); return err })
	applier := memory.NewSaveSteps(opts)
	step("apply", func(i int) error { return applier.Apply(encoded[i]) })
	all := memory.NewSaveSteps(opts)
	step("all", func(i int) error {
		m, err := memory.DecodeInputMessage(raws[i])
		if err != nil {
			return err
		}
		if err := all.Validate([]memory.Message{m}); err != nil {
			return err
		}
		e, err := all.Gate(all.Entry(&m))
		if err != nil {
			return err
		}
		data, err := all.Encode(e)
		if err != nil {
			return err
		}
		return all.Apply(data)
	})
}
