package memory

import (
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// SaveSteps exposes the CPU steps of a save to the external benchmarks (which alone may use
// the corpus: transcript/transcripttest imports transcript, which imports memory), so each can be timed apart from the store.
type SaveSteps struct {
	s  *Service
	st *state
	h  storage.Header
}

// NewSaveSteps returns the steps of saves into a new, empty session of a Service with opts.
func NewSaveSteps(opts Options) *SaveSteps {
	h := storage.Header{ID: "bench", Nonce: "n", Created: time.Unix(1, 0)}
	return &SaveSteps{s: New(nil, opts), st: newState(h), h: h}
}

// Validate is Save's check of the batch.
func (x *SaveSteps) Validate(msgs []Message) error { return validateMessages(msgs) }

// Entry returns m as the next message entry of the session (a fresh id, chained to the leaf).
func (x *SaveSteps) Entry(m *Message) Entry {
	b := newBatch(x.st, x.st.leaf, time.Unix(2, 0))
	b.add(Entry{Type: KindMessage, Message: m})
	return b.entries[0]
}

// Gate is commit's redaction gate.
func (x *SaveSteps) Gate(e Entry) (Entry, error) { return x.s.gateEntry(x.h, e) }

// Encode is commit's encoding of an entry.
func (x *SaveSteps) Encode(e Entry) ([]byte, error) { return encodeEntry(e) }

// Apply applies an encoded entry to the session's state as commit does.
func (x *SaveSteps) Apply(data []byte) error {
	return x.st.apply(storage.Record{Seq: x.st.lastSeq + 1, Kind: KindMessage, Data: data})
}

// RedactJSONBoth returns what the gate makes of a JSON value with hook, and what the general
// way (decoding it into maps) alone makes of it.
func RedactJSONBoth(hook func(string) string, raw []byte) (got, want []byte) {
	s := New(nil, Options{Redact: hook})
	return s.redactJSON(raw), s.redactJSONGeneral(raw)
}
