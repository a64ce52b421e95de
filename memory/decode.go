package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/message"
)

// decodeEntry parses a stored record. Stored records were written by encodeEntry from validated
// entries, so one gjson pass over each object suffices (each key is visited once, never looked
// up by a scan from the start); it is several times faster than encoding/json with the
// string-or-blocks content decoding the input side needs, and resume decodes every entry it
// returns. The strings of the result never point into data.
func decodeEntry(data []byte) (Entry, error) {
	e, _, err := decodeRecord(data)
	return e, err
}

// decodeRecord is decodeEntry that also returns, for a message, the message's JSON as stored
// (a view into data).
func decodeRecord(data []byte) (Entry, string, error) {
	if !gjson.ValidBytes(data) {
		return Entry{}, "", fmt.Errorf("record is not valid JSON")
	}
	var e Entry
	var body gjson.Result
	parseObject(unsafeString(data), func(k string, v gjson.Result) {
		switch k {
		case "type":
			e.Type = v.String()
		case "id":
			e.ID = v.String()
		case "parent_id":
			e.ParentID = v.String()
		case "ts":
			e.Time, _ = time.Parse(time.RFC3339Nano, v.Str)
		case KindMessage, KindCompaction, KindBranchSummary, KindLabel, KindSessionInfo, KindModelChange:
			body = v
		}
	})
	e.Type, e.ID, e.ParentID = kindName(e.Type), strings.Clone(e.ID), strings.Clone(e.ParentID)
	switch e.Type {
	case KindMessage:
		m := message.DecodeStored(body)
		e.Message = &m
	case KindCompaction:
		var c Compaction
		if err := json.Unmarshal([]byte(body.Raw), &c); err != nil {
			return Entry{}, "", fmt.Errorf("compaction entry %s: %w", e.ID, err)
		}
		e.Compaction = &c
	case KindBranchSummary:
		e.BranchSummary = &BranchSummary{FromID: str(body.Get("from_id")), Summary: str(body.Get("summary"))}
	case KindLabel:
		e.Label = &Label{TargetID: str(body.Get("target_id")), Label: str(body.Get("label"))}
	case KindSessionInfo:
		e.SessionInfo = &SessionInfo{Name: str(body.Get("name"))}
	case KindModelChange:
		e.ModelChange = &ModelChange{Model: str(body.Get("model")), Provider: str(body.Get("provider"))}
	}
	if e.Type == KindMessage {
		return e, body.Raw, nil
	}
	return e, "", nil
}

// unsafeString reads b as a string without copying; results that outlive the call go through str.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// str returns a gjson string result as a string of its own (gjson returns escaped strings
// unescaped in fresh memory, and others as slices of the input).
func str(r gjson.Result) string {
	if r.Type != gjson.String {
		return r.String()
	}
	return strings.Clone(r.Str)
}

// parseObject calls fn for each key of a JSON object, in one pass.
func parseObject(js string, fn func(k string, v gjson.Result)) {
	gjson.Parse(js).ForEach(func(k, v gjson.Result) bool {
		fn(k.Str, v)
		return true
	})
}
