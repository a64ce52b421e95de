package memory

import (
	"context"
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
	metas, err := s.listMetas(req.WorkingDir, "")
	if err != nil {
		return SearchResult{}, err
	}
	needle := strings.ToLower(q)
	res := SearchResult{Matches: []SearchMatch{}}
	for _, m := range metas {
		if err := ctx.Err(); err != nil {
			return SearchResult{}, err
		}
		err := s.store.View(ctx, m.ID, func(r *storage.Reader) error {
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
		if err != nil {
			// One damaged or vanished session must not fail the search of the others.
			s.log.Warn("search: skipping session", "session", m.ID, "err", err)
			continue
		}
	}
	return res, nil
}

var errStop = fmt.Errorf("stop")

// matchRecord looks for needle (lower case) in a message record's searchable text.
func matchRecord(data []byte, needle string) (string, bool) {
	// Cheap rejection first: most records do not contain the needle at all. Only sound when
	// the needle has no character JSON might have escaped.
	if !strings.ContainsAny(needle, "\"\\") && !hasControl(needle) && !containsFold(data, needle) {
		return "", false
	}
	var snip string
	var found bool
	var visit func(blocks gjson.Result)
	visit = func(blocks gjson.Result) {
		blocks.ForEach(func(_, b gjson.Result) bool {
			var text string
			switch b.Get("type").String() {
			case BlockText:
				text = b.Get("text").String()
			case BlockThinking:
				text = b.Get("thinking").String()
			case BlockToolCall:
				text = b.Get("name").String() + " " + b.Get("arguments").Raw
			case BlockToolResult:
				visit(b.Get("content"))
				return !found
			}
			if i := strings.Index(strings.ToLower(text), needle); i >= 0 && len(strings.ToLower(text)) == len(text) {
				snip, found = snippet(text, i, len(needle)), true
			} else if i >= 0 {
				snip, found = oneLine(text, 2*snippetRadius), true
			}
			return !found
		})
	}
	visit(gjson.GetBytes(data, "message.content"))
	return snip, found
}

// containsFold reports whether data contains needle ignoring ASCII and Unicode case, without
// allocating for ASCII needles in the common no-match case.
func containsFold(data []byte, needle string) bool {
	return strings.Contains(strings.ToLower(string(data)), needle)
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
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
