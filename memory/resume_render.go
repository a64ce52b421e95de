package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/storage"
)

// pageRenderer makes the output of a resume page's messages: the stored bytes with entry_id
// added when they go out unchanged (raw pages), else the decoded message, pruned or cut.
type pageRenderer struct {
	raw, prune  bool
	protectFrom int // entries whose out total is above it are in prune's protected window
}

// pageItem is one message of a page as the renderer made it.
type pageItem struct {
	stored  []byte     // the stored message's JSON, a view into the record, when it goes out as it is
	id      string     // its entry id
	e       *pathEntry // else the decoded entry
	m       Message    // and the message to send
	changed bool       // m differs from the stored message (pruned or cut)
	size    int        // its characters in the page, the comma before it included
}

// render makes entry n's output from its record and measures it.
func (pr pageRenderer) render(rec storage.Record, n *node) (pageItem, error) {
	if pr.raw && n.kind == KindMessage {
		// The common case needs no decoding: the stored bytes are the output, unless prune
		// may change them. A view into the record (add copies what is kept): GetBytes would
		// copy the message twice over.
		r := gjson.Get(unsafeString(rec.Data), KindMessage)
		if r.IsObject() && r.Index > 0 && r.Index+len(r.Raw) <= len(rec.Data) {
			js := rec.Data[r.Index : r.Index+len(r.Raw)]
			if !pr.mayPrune(n) || !bytes.Contains(js, []byte(`"type":"tool_result"`)) {
				return pageItem{stored: js, id: n.id, size: outputChars(js, n.id) + 1}, nil
			}
		}
	}
	e, err := readEntry(rec)
	if err != nil {
		return pageItem{}, err
	}
	it := pageItem{e: e, id: e.ID, size: rawOutputChars(e)}
	it.m, _ = outputMessage(e)
	// Prune keeps the tool outputs of the newest PruneProtectTokens of the context: an entry
	// is in that window when the conversation after it weighs less.
	if pr.mayPrune(n) && pruneToolOutputs(&it.m) {
		it.size, it.changed = -1, true
	}
	if it.size < 0 {
		it.size = jsonChars(it.m)
	}
	it.size++ // the comma between array elements
	return it, nil
}

func (pr pageRenderer) mayPrune(n *node) bool { return pr.prune && n.out <= pr.protectFrom }

// cut makes it, a message larger than the whole page, take at most chars characters.
func (pr pageRenderer) cut(it pageItem, rec storage.Record, chars int) (pageItem, error) {
	if it.e == nil {
		e, err := readEntry(rec)
		if err != nil {
			return pageItem{}, err
		}
		it.e, it.stored = e, nil
		it.m, _ = outputMessage(e)
	}
	it.m = fitMessage(it.m, chars)
	it.size, it.changed = jsonChars(it.m)+1, true
	return it, nil
}

// add appends it to the page.
func (pr pageRenderer) add(res *ResumeResult, it pageItem) error {
	switch {
	case it.stored != nil:
		res.RawMessages = append(res.RawMessages, withEntryID(it.stored, it.id))
	case !pr.raw:
		res.Messages = append(res.Messages, it.m)
	default:
		js, err := rawMessageJSON(it.e, it.m, it.changed)
		if err != nil {
			return err
		}
		res.RawMessages = append(res.RawMessages, js)
	}
	return nil
}

// rawMessageJSON returns m's JSON as the result will encode it: e's stored bytes with entry_id
// added when m is the stored message unchanged, else m encoded.
func rawMessageJSON(e *pathEntry, m Message, changed bool) (json.RawMessage, error) {
	if e.raw != nil && !changed {
		return withEntryID(e.raw, e.ID), nil
	}
	b, err := message.MarshalNoEscape(m)
	if err != nil {
		return nil, fmt.Errorf("encode message %s: %w", e.ID, err)
	}
	return b, nil
}

// withEntryID inserts "entry_id" into a stored message's JSON where encoding a Message puts it:
// after "id" when the client gave one, else first.
func withEntryID(raw []byte, entryID string) json.RawMessage {
	at := 1
	if bytes.HasPrefix(raw, []byte(`{"id":`)) {
		r := gjson.Get(unsafeString(raw), "id")
		at = r.Index + len(r.Raw)
	}
	out := make([]byte, 0, len(raw)+len(`,"entry_id":""`)+len(entryID))
	out = append(out, raw[:at]...)
	if at > 1 {
		out = append(out, ',')
	}
	out = append(out, `"entry_id":"`...)
	out = append(out, entryID...)
	out = append(out, '"')
	if at == 1 {
		out = append(out, ',')
	}
	return append(out, raw[at:]...)
}

// rawOutputChars is the length in characters of json.Marshal of a stored message as Resume
// returns it, computed from the stored JSON without encoding again: the stored form differs
// only by HTML escaping (<, > and & become six-character escapes) and the added entry_id.
// It returns -1 for entries that are not stored messages.
func rawOutputChars(e *pathEntry) int {
	if e.raw == nil {
		return -1
	}
	return outputChars(e.raw, e.ID)
}

// outputChars is rawOutputChars of a stored message's JSON and its entry id.
func outputChars(raw []byte, entryID string) int {
	n := utf8.RuneCount(raw)
	for _, c := range raw {
		if c == '<' || c == '>' || c == '&' {
			n += 5
		}
	}
	return n + len(`"entry_id":"",`) + len(entryID)
}
