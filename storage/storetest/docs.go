package storetest

import (
	"path"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// Docs is a storage.DocsFunc for tests, a small stand-in for memory.Docs on records in
// memory's format:
//
//   - a "message" record ({"type":"message","id":...,"ts":...,"message":{"role":...,
//     "content":[blocks]}}) gives one KindMessage document: the text of its "text" and
//     "thinking" blocks, the name and string arguments of its "tool_call" blocks and the text
//     of its "tool_result" blocks, joined with newlines; its files are the "path" and
//     "file_path" arguments of the tool calls, made absolute against the session's working
//     directory;
//   - a "compaction" record ({"compaction":{"summary":...,"read_files":[...],
//     "modified_files":[...]}}) gives one KindSummary document with the summary as text and
//     the listed files;
//   - any other record gives none.
//
// Backends pass it in their options when the contract suite runs (storetest.Run), so that
// every backend indexes the same documents.
func Docs(h storage.Header, rec storage.Record) []fts.Doc {
	v := gjson.ParseBytes(rec.Data)
	d := fts.Doc{SessionID: h.ID, Seq: rec.Seq, EntryID: v.Get("id").String()}
	if ts, err := time.Parse(time.RFC3339Nano, v.Get("ts").String()); err == nil {
		d.Time = ts
	}
	abs := func(p string) string {
		if !path.IsAbs(p) {
			p = path.Join(h.WorkingDir, p)
		}
		return path.Clean(p)
	}
	switch rec.Kind {
	case "message":
		m := v.Get("message")
		d.Kind, d.Role = fts.KindMessage, m.Get("role").String()
		var parts []string
		var blocks func(gjson.Result)
		blocks = func(content gjson.Result) {
			for _, b := range content.Array() {
				switch b.Get("type").String() {
				case "text":
					parts = append(parts, b.Get("text").String())
				case "thinking":
					parts = append(parts, b.Get("thinking").String())
				case "tool_call":
					parts = append(parts, b.Get("name").String())
					args := b.Get("arguments")
					args.ForEach(func(k, val gjson.Result) bool {
						if val.Type == gjson.String {
							parts = append(parts, val.String())
							if k.String() == "path" || k.String() == "file_path" {
								d.Files = append(d.Files, abs(val.String()))
							}
						}
						return true
					})
				case "tool_result":
					blocks(b.Get("content"))
				}
			}
		}
		blocks(m.Get("content"))
		d.Text = strings.Join(parts, "\n")
	case "compaction":
		c := v.Get("compaction")
		d.Kind, d.Text = fts.KindSummary, c.Get("summary").String()
		for _, f := range append(c.Get("read_files").Array(), c.Get("modified_files").Array()...) {
			d.Files = append(d.Files, abs(f.String()))
		}
	default:
		return nil
	}
	return []fts.Doc{d}
}
