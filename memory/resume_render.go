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
	// page is the raw page's JSON (ResumeResult.RawPage) as add builds it: one buffer for
	// the whole page (2,000 messages are not 2,000 allocations, each, in a server just
	// started, costing page faults too), sized by resumePage for what the page will hold.
	page []byte
}

// rawPageStart opens a raw page (ResumeResult.RawPage).
const rawPageStart = `{"messages":[`

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
		// may change them. A view into the record (add copies what is kept).
		if js, ok := objectMember(rec.Data, KindMessage); ok && len(js) > 0 && js[0] == '{' {
			if !pr.mayPrune(n) || !bytes.Contains(js, []byte(`"type":"tool_result"`)) {
				return pageItem{stored: js, id: n.id, size: storedPageChars(js, n.id) + 1}, nil
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
func (pr *pageRenderer) add(res *ResumeResult, it pageItem) error {
	if !pr.raw {
		res.Messages = append(res.Messages, it.m)
		return nil
	}
	var js []byte
	if it.stored == nil {
		var err error
		if js, err = rawMessageJSON(it.e, it.m, it.changed); err != nil {
			return err
		}
	}
	if len(pr.page) == 0 {
		pr.page = append(pr.page, rawPageStart...)
	} else {
		pr.page = append(pr.page, ',')
	}
	start := len(pr.page)
	if it.stored != nil && bytes.IndexByte(it.stored, '\n') < 0 && bytes.IndexByte(it.stored, '\r') < 0 {
		pr.page = appendWithEntryID(pr.page, it.stored, it.id)
	} else {
		if it.stored != nil {
			js = withEntryID(it.stored, it.id)
		}
		// The page is one line on stdio: a line break between tokens (never written by
		// this package, but valid JSON) goes.
		if bytes.IndexByte(js, '\n') >= 0 || bytes.IndexByte(js, '\r') >= 0 {
			var c bytes.Buffer
			if err := json.Compact(&c, js); err != nil {
				return err
			}
			js = c.Bytes()
		}
		pr.page = message.AppendASCII(pr.page, js)
	}
	res.RawMessages = append(res.RawMessages, pr.page[start:len(pr.page):len(pr.page)])
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
	out := make([]byte, 0, len(raw)+len(`,"entry_id":""`)+len(entryID))
	return insertEntryID(out, raw, entryID, func(out, b []byte) []byte { return append(out, b...) })
}

// appendWithEntryID appends withEntryID(raw, entryID) to out, its non-ASCII characters
// escaped (message.AppendASCII).
func appendWithEntryID(out, raw []byte, entryID string) []byte {
	return insertEntryID(out, raw, entryID, message.AppendASCII)
}

// insertEntryID appends raw to out with "entry_id" inserted, copying raw's bytes with put.
func insertEntryID(out, raw []byte, entryID string, put func(out, b []byte) []byte) []byte {
	at := 1
	if bytes.HasPrefix(raw, []byte(`{"id":`)) {
		r := gjson.Get(unsafeString(raw), "id")
		at = r.Index + len(r.Raw)
	}
	out = put(out, raw[:at])
	if at > 1 {
		out = append(out, ',')
	}
	out = append(out, `"entry_id":"`...)
	out = append(out, entryID...) // an entry id is ASCII
	out = append(out, '"')
	if at == 1 {
		out = append(out, ',')
	}
	return put(out, raw[at:])
}

// rawOutputChars is the length in characters of a stored message as a resume page carries it
// (storedPageChars), computed from the stored JSON without encoding it again. It returns -1 for
// entries that are not stored messages.
func rawOutputChars(e *pathEntry) int {
	if e.raw == nil {
		return -1
	}
	return storedPageChars(e.raw, e.ID)
}

// storedPageChars is the length in characters of a stored message's JSON with its entry id added,
// as a transport may send it (message.WireChars: non-ASCII characters as \u escapes, which is
// how resume pages go out, and <, > and & escaped as encoding/json escapes them).
func storedPageChars(raw []byte, entryID string) int {
	return message.WireChars(raw) + len(`"entry_id":"",`) + len(entryID)
}

// outputChars is the length in characters of json.Marshal of a stored message with its entry
// id: the stored form differs only by HTML escaping (<, > and & become six-character escapes)
// and the added entry_id. The pinned messages' budget (pinCost) is counted with it.
func outputChars(raw []byte, entryID string) int {
	n := utf8.RuneCount(raw)
	for _, c := range raw {
		if c == '<' || c == '>' || c == '&' {
			n += 5
		}
	}
	return n + len(`"entry_id":"",`) + len(entryID)
}
