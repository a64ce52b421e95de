package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/storage"
)

// snippetRadius is how many bytes of context a search snippet shows on each side of a match.
const snippetRadius = 90

// Search finds text across sessions, newest session first, streaming each session's records so
// memory stays bounded whatever the store's size. Matching is a case-insensitive substring match
// over message text, thinking, tool-call arguments and tool output.
func (s *Service) Search(ctx context.Context, req SearchRequest) (SearchResult, error) {
	q := strings.TrimSpace(req.Query)
	if q == "" {
		return SearchResult{}, invalidf("pass the text to look for in query", "query is empty")
	}
	if len(q) > MaxQueryBytes {
		return SearchResult{}, invalidf(fmt.Sprintf("shorten query to under %d bytes", MaxQueryBytes), "query is %d bytes long", len(q))
	}
	limit, err := checkLimit(req.Limit, 20, 100)
	if err != nil {
		return SearchResult{}, err
	}
	if err := checkWorkingDir(req.WorkingDir); err != nil {
		return SearchResult{}, err
	}
	metas, err := s.listMetas(ctx, storage.ListQuery{WorkingDir: req.WorkingDir})
	if err != nil {
		return SearchResult{}, err
	}
	needle := strings.ToLower(q)
	res := SearchResult{Matches: []SearchMatch{}}
	for _, m := range metas {
		if err := ctx.Err(); err != nil {
			return SearchResult{}, err
		}
		err := s.store.View(ctx, m.ID, func(r storage.Reader) error {
			for rec, err := range r.Records(1) {
				if err != nil {
					return err
				}
				if rec.Kind != KindMessage {
					continue
				}
				if snip, ok := matchRecord(rec.Data, needle); ok {
					res.Matches = append(res.Matches, SearchMatch{
						SessionID: m.ID,
						EntryID:   gjson.GetBytes(rec.Data, "id").String(),
						Role:      Role(gjson.GetBytes(rec.Data, "message.role").String()),
						Snippet:   snip,
					})
					if len(res.Matches) == limit {
						return errStop
					}
				}
			}
			return nil
		})
		if err == errStop {
			break
		}
		if errors.Is(err, storage.ErrUnavailable) {
			return SearchResult{}, mapStoreErr(m.ID, err)
		}
		if err != nil {
			// One damaged or vanished session must not fail the search of the others.
			s.log.Warn("search: skipping session", "session", m.ID, "err", err)
			continue
		}
	}
	return res, nil
}

var errStop = fmt.Errorf("stop")

// matchRecord looks for needle (lower case) in a message record's searchable text: text,
// thinking, tool-call names and the string values of their arguments, and tool output.
func matchRecord(data []byte, needle string) (string, bool) {
	// Cheap rejection first: most records do not contain the needle at all. Only sound when
	// the needle cannot appear escaped in the stored JSON (arguments are kept as the client
	// or the imported transcript encoded them, possibly with \u escapes).
	if prefilterable(needle) && !containsFold(data, needle) {
		return "", false
	}
	var snip string
	var found bool
	try := func(text string) bool {
		if i, n := indexFold(text, needle); i >= 0 {
			snip, found = snippet(text, i, n), true
		}
		return found
	}
	var visit func(blocks gjson.Result)
	visit = func(blocks gjson.Result) {
		blocks.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").String() {
			case BlockText:
				try(b.Get("text").String())
			case BlockThinking:
				try(b.Get("thinking").String())
			case BlockToolCall:
				if !try(b.Get("name").String()) {
					try(argumentText(b.Get("arguments")))
				}
			case BlockToolResult:
				visit(b.Get("content"))
			}
			return !found
		})
	}
	visit(gjson.GetBytes(data, "message.content"))
	return snip, found
}

// containsFold reports whether data contains the lower-case ASCII needle, ignoring case.
func containsFold(data []byte, needle string) bool {
	return bytes.Contains(bytes.ToLower(data), []byte(needle))
}

// prefilterable reports whether needle, if present in a record, is present in its raw JSON
// too: plain ASCII without characters JSON encoders escape.
func prefilterable(needle string) bool {
	for i := 0; i < len(needle); i++ {
		c := needle[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// argumentText joins the string values (and keys) of tool-call arguments, decoded.
func argumentText(args gjson.Result) string {
	var sb strings.Builder
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.IsObject() || v.IsArray():
			v.ForEach(func(k, x gjson.Result) bool {
				if k.Type == gjson.String {
					sb.WriteString(k.String())
					sb.WriteByte(' ')
				}
				walk(x)
				return true
			})
		default:
			sb.WriteString(v.String())
			sb.WriteByte(' ')
		}
	}
	walk(args)
	return sb.String()
}

// indexFold finds needle (already lower case) in text ignoring case, returning the byte offset
// and length of the match in text itself, even where lower-casing changes byte lengths.
func indexFold(text, needle string) (int, int) {
	lower := strings.ToLower(text)
	if len(lower) == len(text) {
		if i := strings.Index(lower, needle); i >= 0 {
			return i, len(needle)
		}
		return -1, 0
	}
	// Lower-case rune by rune, remembering where each lowered byte came from.
	var lb []byte
	var from []int
	for i, r := range text {
		l := []byte(strings.ToLower(string(r)))
		for range l {
			from = append(from, i)
		}
		lb = append(lb, l...)
	}
	j := strings.Index(string(lb), needle)
	if j < 0 {
		return -1, 0
	}
	start := from[j]
	end := len(text)
	if k := j + len(needle); k < len(from) {
		end = from[k]
	}
	return start, end - start
}

// snippet cuts text around [i, i+n) to one line.
func snippet(text string, i, n int) string {
	start, end := i-snippetRadius, i+n+snippetRadius
	if start < 0 {
		start = 0
	}
	if end > len(text) {
		end = len(text)
	}
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	out := strings.Join(strings.Fields(text[start:end]), " ")
	if start > 0 {
		out = "…" + out
	}
	if end < len(text) {
		out += "…"
	}
	return out
}
