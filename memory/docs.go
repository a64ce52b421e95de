package memory

import (
	"path"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/fileops"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// Docs is the storage.DocsFunc of sessionmem's records: what a store's full-text index
// receives for each stored record (already redacted: the store indexes what it keeps).
//
//   - A message gives one doc (kind "message") with the text of its text and thinking
//     blocks, its tool calls' names and the string values of their arguments, and tool
//     output (string or text blocks), joined with newlines, terminal escape codes removed
//     (stripANSI); Files are the absolute, clean
//     paths its tool calls read or modified (fileops, relative paths taken from the
//     session's working directory).
//   - A compaction gives one doc (kind "summary") with its summary text (without the file
//     lists) and the files it lists; its EntryID is the compaction's entry id.
//   - Other records give none.
//
// It recognises the built-in file tools; NewDocs adds configured ones.
func Docs(h storage.Header, rec storage.Record) []fts.Doc { return defaultDocs(h, rec) }

var defaultDocs = NewDocs(nil)

// NewDocs returns a DocsFunc like Docs that also recognises the file tools of mapping (the
// Service's Options.FileMapping), so that the file filter sees the same files compaction
// lists.
func NewDocs(mapping fileops.Mapping) storage.DocsFunc {
	x := &fileops.Extractor{Mapping: mapping}
	return func(h storage.Header, rec storage.Record) []fts.Doc {
		switch rec.Kind {
		case KindMessage, KindCompaction:
		default:
			return nil
		}
		r := gjson.ParseBytes(rec.Data)
		d := fts.Doc{SessionID: h.ID, Seq: rec.Seq, EntryID: r.Get("id").String()}
		d.Time, _ = time.Parse(time.RFC3339Nano, r.Get("ts").String())
		switch rec.Kind {
		case KindMessage:
			msg := r.Get("message")
			d.Kind, d.Role = fts.KindMessage, msg.Get("role").String()
			var ok bool
			if d.Text, ok = messageTextScan(msg.Raw); !ok {
				d.Text = messageText(msg)
			}
			for _, op := range x.Message([]byte(msg.Raw), h.WorkingDir) {
				d.Files = appendAbs(d.Files, op.Path, h.WorkingDir)
			}
		case KindCompaction:
			c := r.Get("compaction")
			d.Kind = fts.KindSummary
			d.Text = summaryText(c.Get("summary").String())
			for _, list := range []string{"read_files", "modified_files"} {
				for _, f := range c.Get(list).Array() {
					d.Files = appendAbs(d.Files, f.String(), h.WorkingDir)
				}
			}
		}
		// Colored command output is indexed as the viewer shows it: "\x1b[31mred" would
		// otherwise be the word "31mred", and a search for "red" would miss it.
		d.Text = stripANSI(d.Text)
		return []fts.Doc{d}
	}
}

// messageText joins the searchable text of a stored message.
func messageText(msg gjson.Result) string {
	var parts []string
	add := func(s string) {
		if strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	var visit func(content gjson.Result)
	visit = func(content gjson.Result) {
		if content.Type == gjson.String {
			add(content.String())
			return
		}
		content.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").String() {
			case BlockText:
				add(b.Get("text").String())
			case BlockThinking:
				add(b.Get("thinking").String())
			case BlockToolCall:
				add(b.Get("name").String())
				add(argumentStrings(b.Get("arguments")))
			case BlockToolResult:
				visit(b.Get("content"))
			}
			return true
		})
	}
	visit(msg.Get("content"))
	return strings.Join(parts, "\n")
}

// argumentStrings joins the string values inside tool-call arguments (an object, or a JSON
// string as some transcripts store them), one per line.
func argumentStrings(args gjson.Result) string {
	var parts []string
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.IsObject() || v.IsArray():
			v.ForEach(func(_, x gjson.Result) bool {
				walk(x)
				return true
			})
		case v.Type == gjson.String && strings.TrimSpace(v.Str) != "":
			parts = append(parts, v.Str)
		}
	}
	walk(args)
	return strings.Join(parts, "\n")
}

// appendAbs adds p (as fileops lists it: relative to workingDir when inside it) as an
// absolute clean path, once. Paths that cannot be made absolute ("~/x", or relative
// without a working directory) are left out: no filter can name them reliably.
func appendAbs(files []string, p, workingDir string) []string {
	if p == "" || p[0] == '~' {
		return files
	}
	if !path.IsAbs(p) {
		if !path.IsAbs(workingDir) {
			return files
		}
		p = path.Join(workingDir, p)
	}
	p = path.Clean(p)
	for _, f := range files {
		if f == p {
			return files
		}
	}
	return append(files, p)
}

// docOf returns the doc of kind among what docs built for one record.
func docOf(docs []fts.Doc, kind string) (fts.Doc, bool) {
	for _, d := range docs {
		if d.Kind == kind {
			return d, true
		}
	}
	return fts.Doc{}, false
}
