package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
)

// docs builds the docs of one record for snippets (text does not depend on the file mapping).
func (s *Service) docs(h storage.Header, rec storage.Record) []fts.Doc { return Docs(h, rec) }

// scanCursorPrefix marks the cursors of scan, so a page of a scan continues as a scan even
// once the index is back.
const scanCursorPrefix = "scan."

// maxScanHits bounds what a scan keeps in memory (a common word in a large store).
const maxScanHits = 50000

// scan answers a search without an index: it reads every session the filters allow, builds
// each record's docs as the index would (NewDocs) and keeps those that match, ranked by how
// often the query's words occur, then newest first. Paging is by offset; a cursor carries a
// hash of the query so that another query's cursor is refused.
func (s *Service) scan(ctx context.Context, q storage.SearchQuery) (storage.SearchResult, error) {
	off := 0
	fp := scanFingerprint(q)
	if q.Cursor != "" {
		rest, ok := strings.CutPrefix(q.Cursor, scanCursorPrefix)
		a, b, ok2 := strings.Cut(rest, ".")
		n, err := strconv.Atoi(a)
		if !ok || !ok2 || err != nil || n < 0 || b != fp {
			return storage.SearchResult{}, invalidf("search again without cursor", "cursor is not one this search returned")
		}
		off = n
	}
	metas, err := s.listMetas(ctx, storage.ListQuery{WorkingDir: q.WorkingDir})
	if err != nil {
		return storage.SearchResult{}, err
	}
	docs := NewDocs(s.opts.FileMapping)
	var hits []storage.SearchHit
	for _, m := range metas {
		if q.SessionID != "" && m.ID != q.SessionID {
			continue
		}
		if err := ctx.Err(); err != nil {
			return storage.SearchResult{}, err
		}
		file := q.File
		if file != "" && !path.IsAbs(file) {
			if !path.IsAbs(m.WorkingDir) {
				continue
			}
			file = path.Join(m.WorkingDir, file)
		}
		err := s.store.View(ctx, m.ID, func(r storage.Reader) error {
			h := r.Header()
			for rec, err := range r.Records(1) {
				if err != nil {
					return err
				}
				for _, d := range docs(h, rec) {
					if !scanKeeps(q, d, file) {
						continue
					}
					score := 0.0
					if q.Match != nil {
						score = occurrences(q.Match, d.Text)
					}
					hits = append(hits, storage.SearchHit{SessionID: m.ID, SessionName: m.Name, WorkingDir: m.WorkingDir,
						Seq: d.Seq, EntryID: d.EntryID, Kind: d.Kind, Role: d.Role, Time: d.Time, Score: score})
					if len(hits) > maxScanHits {
						return errTooMany
					}
				}
			}
			return nil
		})
		if errors.Is(err, errTooMany) {
			break
		}
		if errors.Is(err, storage.ErrUnavailable) {
			return storage.SearchResult{}, mapStoreErr(m.ID, err)
		}
		if err != nil {
			// One damaged or vanished session must not fail the search of the others.
			s.log.Warn("search: skipping session", "session", m.ID, "err", err)
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Time.After(hits[j].Time)
	})
	res := storage.SearchResult{Hits: []storage.SearchHit{}}
	if off < len(hits) {
		end := min(off+q.Limit, len(hits))
		res.Hits = hits[off:end]
		if end < len(hits) {
			res.NextCursor = fmt.Sprintf("%s%d.%s", scanCursorPrefix, end, fp)
		}
	}
	return res, nil
}

var errTooMany = errors.New("too many matches")

// scanKeeps applies the query and its filters to one doc (file already made absolute).
func scanKeeps(q storage.SearchQuery, d fts.Doc, file string) bool {
	switch {
	case q.Role != "" && d.Role != q.Role,
		q.Kind != "" && d.Kind != q.Kind,
		!q.Since.IsZero() && d.Time.Before(q.Since),
		!q.Until.IsZero() && d.Time.After(q.Until):
		return false
	}
	if file != "" {
		found := false
		for _, f := range d.Files {
			found = found || f == path.Clean(file)
		}
		if !found {
			return false
		}
	}
	return q.Match == nil || q.Match.Matches(d.Text)
}

// occurrences counts the positions where one of q's Include terms starts: the scan's rough
// relevance.
func occurrences(q *fts.Query, text string) float64 {
	n := 0
	for _, t := range fts.Terms(text) {
		for _, inc := range q.Include {
			first := inc.Terms[0]
			if t == first || (inc.Prefix && len(inc.Terms) == 1 && strings.HasPrefix(t, first)) {
				n++
			}
		}
	}
	return float64(n)
}

// scanFingerprint identifies a query (not its limit or cursor) in a scan cursor.
func scanFingerprint(q storage.SearchQuery) string {
	h := fnv.New32a()
	match := ""
	if q.Match != nil {
		match = q.Match.String()
	}
	for _, v := range []string{match, q.SessionID, q.WorkingDir, q.Role, q.Kind, q.File, q.Since.String(), q.Until.String()} {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}
