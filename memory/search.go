package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// Limits of session_search, and the kinds of its matches.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
	// MinPrefixChars is the fewest characters before a prefix's trailing *, MaxQueryWords
	// the most words and phrases in one query.
	MinPrefixChars = fts.MinPrefixRunes
	MaxQueryWords  = fts.MaxQueryTerms
	// MatchMessage and MatchSummary are SearchMatch.Kind's values.
	MatchMessage = fts.KindMessage
	MatchSummary = fts.KindSummary
)

// SearchRequest is session_search's input (contract v2; the v1 calls, query with
// working_dir and limit, are a subset).
type SearchRequest struct {
	// Query is in the query language of storage/fts (contract v3): words, ranked (a plain
	// question works); +required, "phrases", prefix*, -excluded. Optional when File is given.
	Query string `json:"query,omitempty"`
	// WorkingDir, SessionID and Role keep entries with exactly these values.
	WorkingDir string `json:"working_dir,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	Role       string `json:"role,omitempty"`
	// File keeps entries whose tool calls read or modified it (absolute, or relative to the
	// session's working directory).
	File string `json:"file,omitempty"`
	// Since and Until bound the entries' time (RFC 3339, inclusive).
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
	// Limit is 1..MaxSearchLimit (0: DefaultSearchLimit).
	Limit int `json:"limit,omitempty"`
	// Cursor continues a previous search with the same arguments.
	Cursor string `json:"cursor,omitempty"`
}

// SearchMatch is one hit.
type SearchMatch struct {
	SessionID   string `json:"session_id"`
	SessionName string `json:"session_name"`
	EntryID     string `json:"entry_id"`
	// MessageID is the client's id of the message (contract v3), absent for summaries and
	// for messages saved without one.
	MessageID string `json:"message_id,omitempty"`
	// Kind is "message" or "summary" (a compaction's summary; Role is then "").
	Kind    string    `json:"kind"`
	Role    Role      `json:"role"`
	Time    time.Time `json:"time"`
	Snippet string    `json:"snippet"`
	// Score orders the matches of one answer (higher is better); its scale is not fixed.
	Score float64 `json:"score"`
}

// SearchResult is session_search's output.
type SearchResult struct {
	Matches []SearchMatch `json:"matches"`
	// NextCursor continues with the next page; "" when there are no more.
	NextCursor string `json:"next_cursor"`
}

// Search finds entries across sessions, best first (see SearchRequest and the contract's
// session_search v3). It asks the store's full-text index (storage.Searcher) and cuts each
// match's snippet from the record read back from the store. When the store has no index,
// or its index is being rebuilt, it scans the sessions instead, with the same query
// semantics (slower: every record is read).
func (s *Service) Search(ctx context.Context, req SearchRequest) (SearchResult, error) {
	q, err := s.searchQuery(req)
	if err != nil {
		return SearchResult{}, err
	}
	var res storage.SearchResult
	searcher, ok := s.store.(storage.Searcher)
	if ok && !strings.HasPrefix(q.Cursor, scanCursorPrefix) {
		res, err = searcher.Search(ctx, q)
	}
	switch {
	case !ok || strings.HasPrefix(q.Cursor, scanCursorPrefix) || errors.Is(err, storage.ErrSearchUnavailable):
		if err != nil {
			s.log.Debug("search: index unavailable, scanning the sessions", "err", err)
		}
		res, err = s.scan(ctx, q)
		if err != nil {
			return SearchResult{}, err
		}
	case errors.Is(err, fts.ErrBadQuery):
		return SearchResult{}, invalidf(cursorHint, "%s", clip(cursorRefusal(err), 300))
	case err != nil:
		return SearchResult{}, mapStoreErr("", fmt.Errorf("search: %w", err))
	}
	if q.SessionID != "" && len(res.Hits) == 0 {
		// An unknown session is a tool error, as in every tool, not an empty answer; the
		// check costs a lookup only when nothing was found.
		if _, err := s.store.Get(ctx, q.SessionID); err != nil {
			return SearchResult{}, mapStoreErr(q.SessionID, err)
		}
	}
	out := SearchResult{Matches: make([]SearchMatch, 0, len(res.Hits)), NextCursor: res.NextCursor}
	snips := s.snippets(ctx, res.Hits, q.Match)
	for i, h := range res.Hits {
		out.Matches = append(out.Matches, SearchMatch{SessionID: h.SessionID, SessionName: h.SessionName,
			EntryID: h.EntryID, MessageID: snips[i].messageID, Kind: h.Kind, Role: Role(h.Role), Time: h.Time,
			Snippet: snips[i].text, Score: h.Score})
	}
	return out, nil
}

// searchQuery checks a request completely and turns it into the store's query.
func (s *Service) searchQuery(req SearchRequest) (storage.SearchQuery, error) {
	var q storage.SearchQuery
	text := strings.TrimSpace(req.Query)
	file := strings.TrimSpace(req.File)
	if text == "" && file == "" {
		return q, invalidf(`pass the words to look for in query (e.g. "retry backoff"), or a file path in file`, "query and file are both empty")
	}
	if len(text) > MaxQueryBytes {
		return q, invalidf(fmt.Sprintf("shorten query to under %d bytes", MaxQueryBytes), "query is %d bytes long", len(text))
	}
	if text != "" {
		m, err := fts.Parse(text)
		if err != nil {
			return q, invalidf(`ask in plain words; +word and "quoted phrase" must occur, prefix*, -word excludes`, "query: %s", clip(err.Error(), 300))
		}
		q.Match = m
	}
	limit, err := checkLimit(req.Limit, DefaultSearchLimit, MaxSearchLimit)
	if err != nil {
		return q, err
	}
	q.Limit = limit
	if err := checkWorkingDir(req.WorkingDir); err != nil {
		return q, err
	}
	q.WorkingDir = s.redact(req.WorkingDir) // stored working dirs went through the gate
	if req.SessionID != "" {
		if err := checkSessionID("session_id", req.SessionID); err != nil {
			return q, err
		}
		q.SessionID = req.SessionID
	}
	switch Role(req.Role) {
	case "", RoleUser, RoleAssistant, RoleToolResult, RoleSystem:
		q.Role = req.Role
	default:
		return q, invalidf("pass one of user, assistant, tool_result, system, or omit role", "role %q is not a message role", clip(req.Role, 40))
	}
	if file != "" {
		if !utf8.ValidString(file) || strings.ContainsAny(file, "\x00\n\r") {
			return q, invalidf("pass a file path, absolute or relative to the session's working_dir", "file is not a valid path")
		}
		q.File = s.redact(path.Clean(file))
	}
	for _, t := range []struct {
		name, v string
		dst     *time.Time
	}{{"since", req.Since, &q.Since}, {"until", req.Until, &q.Until}} {
		if t.v == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339Nano, t.v)
		if err != nil {
			return q, invalidf(`write it in RFC 3339, e.g. "2026-01-31T09:00:00Z"`, "%s %q is not an RFC 3339 time", t.name, clip(t.v, 60))
		}
		// Indexes keep times as Unix nanoseconds (years 1678 to 2262): clamp, which
		// changes no answer (no entry lies outside).
		switch {
		case v.Before(minSearchTime):
			v = minSearchTime
		case v.After(maxSearchTime):
			v = maxSearchTime
		}
		*t.dst = v
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until) {
		return q, invalidf("pass a since before until", "since %s is after until %s", req.Since, req.Until)
	}
	if len(req.Cursor) > 512 {
		return q, invalidf("search again without cursor", "cursor is not one this search returned")
	}
	q.Cursor = req.Cursor
	return q, nil
}

// cursorHint is what to do about a cursor the store refused.
const cursorHint = "search again without cursor (or with the next_cursor the same search returned)"

// cursorRefusal is what was wrong with a cursor the store refused (searchQuery has checked
// everything else a store refuses): the store's text without its wrapping ("bad search
// query: " of fts.ErrBadQuery, "invalid search: " of the local index) and without its own
// hint, which cursorHint gives.
func cursorRefusal(err error) string {
	msg := err.Error()
	for _, p := range []string{fts.ErrBadQuery.Error() + ": ", "invalid search: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return strings.TrimSuffix(msg, "; search again without cursor")
}

var (
	minSearchTime = time.Unix(0, math.MinInt64+1).UTC()
	maxSearchTime = time.Unix(0, math.MaxInt64).UTC()
)

// snippet is what a match takes from its record: the snippet and the message's client id.
type snippet struct {
	text, messageID string
}

// snippets cuts each hit's snippet from its record, read back from the store, and reads the
// message's client id there: one View per session, seeking to each seq. A hit whose record
// cannot be read gets an empty snippet.
func (s *Service) snippets(ctx context.Context, hits []storage.SearchHit, q *fts.Query) []snippet {
	out := make([]snippet, len(hits))
	bySession := map[string][]int{}
	var order []string
	for i, h := range hits {
		if _, ok := bySession[h.SessionID]; !ok {
			order = append(order, h.SessionID)
		}
		bySession[h.SessionID] = append(bySession[h.SessionID], i)
	}
	for _, id := range order {
		err := s.store.View(ctx, id, func(r storage.Reader) error {
			h := r.Header()
			for _, i := range bySession[id] {
				for rec, err := range r.Records(hits[i].Seq) {
					if err != nil {
						return err
					}
					if d, ok := docOf(s.docs(h, rec), hits[i].Kind); ok && rec.Seq == hits[i].Seq {
						// Docs gives the text as the viewer shows it, without escape codes.
						out[i].text = fts.Snippet(d.Text, q)
						if d.Kind == fts.KindMessage {
							out[i].messageID = gjson.GetBytes(rec.Data, "message.id").String()
						}
					}
					break
				}
			}
			return nil
		})
		if err != nil {
			s.log.Warn("search: cannot read snippets", "session", id, "err", err)
		}
	}
	return out
}
