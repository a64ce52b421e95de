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
// each record's docs as the index would (NewDocs) and keeps those that match, ranked as the
// index ranks (BM25 over the words, counted over the sessions read, plus the neighbouring
// messages' scores: fts.ContextScore), then newest first. Paging is by offset; a cursor
// carries a hash of the query so that another query's cursor is refused.
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
	sc := newScanRank(q.Match)
	docs := NewDocs(s.opts.FileMapping)
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
		sc.startSession()
		err := s.store.View(ctx, m.ID, func(r storage.Reader) error {
			h := r.Header()
			for rec, err := range r.Records(1) {
				if err != nil {
					return err
				}
				for _, d := range docs(h, rec) {
					keep := scanFilters(q, d, file)
					hit := storage.SearchHit{SessionID: m.ID, SessionName: m.Name, WorkingDir: m.WorkingDir,
						Seq: d.Seq, EntryID: d.EntryID, Kind: d.Kind, Role: d.Role, Time: d.Time}
					if sc.add(d, keep, hit) > maxScanHits {
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
	hits := sc.sorted()
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

// scanRank ranks the docs a scan reads as an index would: it counts every doc and the
// docs holding each of the query's ranked terms (for their rarity), and keeps each session's
// messages in order (for context).
type scanRank struct {
	q      *fts.Query
	ranked []fts.Term
	n      int   // docs read
	total  int   // their terms
	df     []int // per ranked term
	hits   []storage.SearchHit
	docs   []scanDoc // the hits' and their neighbours' counts
	msgs   [][]int   // per session, its message docs (indexes into docs) in order
	hitDoc []int     // per hit, its doc
}

// scanDoc is what ranking needs of a doc that matched (or -1 counts: it did not).
type scanDoc struct {
	counts []int // of each ranked term; nil: the doc does not match
	dl     int
}

func newScanRank(q *fts.Query) *scanRank {
	sc := &scanRank{q: q}
	if q != nil {
		sc.ranked = q.Ranked()
		sc.df = make([]int, len(sc.ranked))
	}
	return sc
}

func (sc *scanRank) startSession() { sc.msgs = append(sc.msgs, nil) }

// add counts d and keeps it as a hit when it matches and keep (its filters) holds; it
// returns the number of hits kept.
func (sc *scanRank) add(d fts.Doc, keep bool, hit storage.SearchHit) int {
	var sd scanDoc
	if sc.q != nil {
		terms := fts.Terms(d.Text)
		sc.n++
		sc.total += len(terms)
		counts := make([]int, len(sc.ranked))
		for i, t := range sc.ranked {
			if counts[i] = t.Count(terms); counts[i] > 0 {
				sc.df[i]++
			}
		}
		if sc.q.MatchesTerms(terms) {
			sd = scanDoc{counts: counts, dl: len(terms)}
		} else {
			keep = false
		}
	}
	i := len(sc.docs)
	sc.docs = append(sc.docs, sd)
	if d.Kind == fts.KindMessage {
		last := len(sc.msgs) - 1
		sc.msgs[last] = append(sc.msgs[last], i)
	}
	if keep {
		sc.hits = append(sc.hits, hit)
		sc.hitDoc = append(sc.hitDoc, i)
	}
	return len(sc.hits)
}

// sorted scores the hits and sorts them best first (newest first on ties); without words,
// newest first.
func (sc *scanRank) sorted() []storage.SearchHit {
	if sc.q != nil {
		avgdl := 1.0
		if sc.n > 0 {
			avgdl = float64(sc.total) / float64(sc.n)
		}
		idf := make([]float64, len(sc.ranked))
		for i := range idf {
			idf[i] = fts.IDF(sc.n, sc.df[i])
		}
		own := make([]float64, len(sc.docs))
		for i, d := range sc.docs {
			for k, c := range d.counts {
				own[i] += fts.TermScore(idf[k], c, float64(d.dl), avgdl)
			}
		}
		prev, next := map[int]int{}, map[int]int{}
		for _, list := range sc.msgs {
			for k, i := range list {
				if k > 0 {
					prev[i] = list[k-1]
				}
				if k+1 < len(list) {
					next[i] = list[k+1]
				}
			}
		}
		nb := func(m map[int]int, i int) float64 {
			if j, ok := m[i]; ok {
				return own[j]
			}
			return 0
		}
		for h, i := range sc.hitDoc {
			sc.hits[h].Score = fts.ContextScore(own[i], nb(prev, i), nb(next, i))
		}
	}
	sort.SliceStable(sc.hits, func(i, j int) bool {
		if sc.hits[i].Score != sc.hits[j].Score {
			return sc.hits[i].Score > sc.hits[j].Score
		}
		return sc.hits[i].Time.After(sc.hits[j].Time)
	})
	return sc.hits
}

var errTooMany = errors.New("too many matches")

// scanFilters applies the filters to one doc (file already made absolute).
func scanFilters(q storage.SearchQuery, d fts.Doc, file string) bool {
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
	return true
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
