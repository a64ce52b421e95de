package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/tidwall/gjson"
)

// AppendRecord validates rec and appends its stored line to buf: `{"seq":N,` followed by the
// rest of rec.Data (with `"type":Kind` after the seq when Kind is set and Data has no
// "type"), then a newline. It returns the grown buffer and the record's kind. Every backend
// stores exactly this line, so what a read returns is the same whatever the backend.
//
// Data is trimmed of surrounding white space and, only if it contains a line break, compacted
// (a stored line never contains one). It must be one JSON object without a "seq" key; a
// "type" must be a string and equal Kind when both are set. On error buf is returned
// unchanged.
func AppendRecord(buf []byte, rec Record, seq uint64) ([]byte, string, error) {
	data := bytes.TrimSpace(rec.Data)
	if len(data) == 0 || data[0] != '{' || !gjson.ValidBytes(data) {
		return buf, "", errors.New("data must be one JSON object")
	}
	if bytes.ContainsAny(data, "\n\r") {
		var c bytes.Buffer
		if err := json.Compact(&c, data); err != nil {
			return buf, "", fmt.Errorf("data: %w", err)
		}
		data = c.Bytes()
	}
	if gjson.GetBytes(data, "seq").Exists() {
		return buf, "", errors.New(`data must not contain "seq" (storage assigns it)`)
	}
	kind := rec.Kind
	typ := gjson.GetBytes(data, "type")
	addType := false
	switch {
	case typ.Exists() && typ.Type != gjson.String:
		return buf, "", errors.New(`"type" must be a string`)
	case typ.Exists() && kind != "" && typ.Str != kind:
		return buf, "", fmt.Errorf("record kind %q differs from data's \"type\" %q", kind, typ.Str)
	case typ.Exists():
		kind = typ.Str
	case kind != "":
		addType = true
	}
	rest := bytes.TrimLeft(data[1:], " \t")
	buf = append(buf, `{"seq":`...)
	buf = strconv.AppendUint(buf, seq, 10)
	if addType {
		kb, _ := json.Marshal(kind)
		buf = append(buf, `,"type":`...)
		buf = append(buf, kb...)
	}
	if rest[0] != '}' {
		buf = append(buf, ',')
	}
	buf = append(buf, rest...)
	return append(buf, '\n'), kind, nil
}

// RecordKind returns a stored record's kind: its top-level "type" string ("" if none).
func RecordKind(line []byte) string { return gjson.GetBytes(line, "type").String() }

// RecordSeq parses the `{"seq":N` prefix every stored record starts with. It reports false
// for a line that does not start that way (so is not a stored record).
func RecordSeq(line []byte) (uint64, bool) {
	const prefix = `{"seq":`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0, false
	}
	var n uint64
	i := len(prefix)
	start := i
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
		d := uint64(line[i] - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if i == start || i-start > 1 && line[start] == '0' || i >= len(line) || (line[i] != ',' && line[i] != '}') || n == 0 {
		return 0, false
	}
	return n, true
}

// StripSeq turns a stored record back into the Data that Append stored it from: the
// `"seq":N` member is removed, so AppendRecord(StripSeq(line), N) gives line again, byte for
// byte. Copying a session between stores relies on this. It reports false for a line that is
// not a stored record.
func StripSeq(line []byte) ([]byte, bool) {
	if _, ok := RecordSeq(line); !ok {
		return nil, false
	}
	i := bytes.IndexAny(line[len(`{"seq":`):], ",}") + len(`{"seq":`)
	out := make([]byte, 0, len(line)-i+1)
	out = append(out, '{')
	if line[i] == ',' {
		i++
	}
	return append(out, line[i:]...), true
}
