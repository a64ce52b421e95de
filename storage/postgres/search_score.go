package postgres

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// Scoring in Go. A search reads, for each candidate document, only the part of its tsvector
// that holds the query's lexemes (see scoreSQL), as text, and computes BM25 here with
// storage/fts's parameters: term frequencies from positions, phrases (and multi-term words
// such as paths) from consecutive positions. PostgreSQL offers no BM25, and ts_rank's
// figures cannot be turned back into frequencies. The rows are read as raw text and parsed
// without allocating: a search may read 20,000 of them, and pgx's Scan into Go values took
// about 1.5 µs a row, half of it allocations.

// scoreSQL is the two columns a document's score is computed from, for alias a, arg adding
// a placeholder:
//
//   - the lexemes of its tsvector that the words and the self-overlapping phrases use
//     (ts_filter of setweight, as tsvector text; NULL when there are none): positions give
//     a word's frequency, and a phrase's runs;
//   - for each prefix and other phrase (countedByRank), its frequency as ts_rank_cd with
//     unit weights counts it, in a real[]: each occurrence of a query of one operand is one
//     cover of weight 1 (a tsvector's lexemes are sorted, so a prefix's lexemes are found by
//     binary search), and each occurrence of a phrase too, when its occurrences cannot overlap.
//
// Expanding a prefix to the lexemes of each document instead (unnest of tsvector_to_array)
// cost about six times as much as ts_rank_cd. For a phrase, ts_rank_cd costs about half of
// setweight and ts_filter, and the positions need not travel.
func (r *ranker) scoreSQL(a string, arg func(any) string) string {
	vec := "NULL::text"
	if len(r.lexemes) > 0 {
		vec = "ts_filter(setweight(" + a + ".terms, 'A', " + arg(r.lexemes) + "::text[]), '{a}')::text"
	}
	ranks := "NULL::real[]"
	if len(r.ranked) > 0 {
		var cols []string
		for _, i := range r.ranked {
			cols = append(cols, "ts_rank_cd('{1,1,1,1}', "+a+".terms, "+arg(r.terms[i].tsq)+"::tsquery)")
		}
		ranks = "ARRAY[" + strings.Join(cols, ", ") + "]::real[]"
	}
	return vec + ", " + ranks
}

// scorer turns scoreSQL's columns into scores, reusing its buffers from row to row.
type scorer struct {
	index map[string]int // lexeme: its place in pos
	pos   [][]int32      // the current document's positions of each lexeme
	terms []scoreTerm
	avgdl float64
	buf   tsvBuf
	tfs   []int
}

// countedByRank reports whether a term's frequency is ts_rank_cd's count (scoreSQL) rather
// than read from positions: a prefix (its lexemes are not known), and a phrase whose
// occurrences cannot overlap (ts_rank_cd counts overlapping occurrences, fts.Term.Count does
// not; a phrase such as "the the" or "a b a" is counted from positions).
func countedByRank(t fts.Term) bool {
	if t.Prefix {
		return true
	}
	n := len(t.Terms)
	if n < 2 {
		return false
	}
	for k := 1; k < n; k++ {
		if slices.Equal(t.Terms[k:], t.Terms[:n-k]) {
			return false
		}
	}
	return true
}

// scoreTerm is a ranked term as the scorer sees it.
type scoreTerm struct {
	idf    float64
	lex    []int // for a term without a prefix: the places in pos of its terms, in order
	ranked int   // for a term with a prefix: its place in the ranks column
}

func newScorer(terms []rankTerm, lexemes []string, avgdl float64) *scorer {
	s := &scorer{index: map[string]int{}, pos: make([][]int32, len(lexemes)), avgdl: avgdl, tfs: make([]int, len(terms))}
	for i, x := range lexemes {
		s.index[x] = i
	}
	ranked := 0
	for _, t := range terms {
		st := scoreTerm{idf: t.idf, ranked: -1}
		if countedByRank(t.term) {
			st.ranked = ranked
			ranked++
		} else {
			for _, x := range t.term.Terms {
				st.lex = append(st.lex, s.index[x])
			}
		}
		s.terms = append(s.terms, st)
	}
	return s
}

// score is a document's own BM25 score from its scoreSQL columns as text (vec nil: NULL)
// and its length as text (-1: unknown, ranked as of average length).
func (s *scorer) score(vec, ranks, length []byte) (float64, error) {
	for i := range s.pos {
		s.pos[i] = s.pos[i][:0]
	}
	if vec != nil {
		err := walkTSVector(vec, &s.buf, func(lex []byte, pos []int32) {
			if i, ok := s.index[string(lex)]; ok {
				s.pos[i] = append(s.pos[i], pos...)
			}
		})
		if err != nil {
			return 0, err
		}
	}
	for i, t := range s.terms {
		if t.ranked < 0 {
			s.tfs[i] = phraseFreq(len(t.lex), func(k int) []int32 { return s.pos[t.lex[k]] })
		}
	}
	if err := s.rankFreqs(ranks); err != nil {
		return 0, err
	}
	n, err := parseInt(length)
	if err != nil {
		return 0, err
	}
	dl := float64(n)
	if n < 0 {
		dl = s.avgdl
	}
	score := 0.0
	for i, t := range s.terms {
		score += fts.TermScore(t.idf, s.tfs[i], dl, s.avgdl)
	}
	return score, nil
}

// rankFreqs reads the ranks column ({1,3}) into the frequencies of the prefix terms.
func (s *scorer) rankFreqs(ranks []byte) error {
	k := 0
	if len(ranks) >= 2 && ranks[0] == '{' && ranks[len(ranks)-1] == '}' {
		for _, f := range strings.Split(string(ranks[1:len(ranks)-1]), ",") {
			v, err := strconv.ParseFloat(f, 32)
			if err != nil {
				return err
			}
			for i, t := range s.terms {
				if t.ranked == k {
					s.tfs[i] = int(v + 0.5)
				}
			}
			k++
		}
	}
	for _, t := range s.terms {
		if t.ranked >= k {
			return fmt.Errorf("ranks %q: %d frequencies for more prefix terms", ranks, k)
		}
	}
	return nil
}

// phraseFreq is how many times a term of n terms occurs, positionsOf(k) giving the positions
// of its k-th term: for one term, its positions; for several (a phrase, a path), the
// non-overlapping runs at consecutive positions, as fts.Term.Count counts them.
func phraseFreq(n int, positionsOf func(k int) []int32) int {
	first := positionsOf(0)
	if n == 1 || len(first) == 0 {
		return len(first)
	}
	for k := 1; k < n; k++ {
		if len(positionsOf(k)) == 0 {
			return 0
		}
	}
	count := 0
	next := int32(0) // occurrences do not overlap: the next one starts at or after this
	for _, p := range first {
		if p < next {
			continue
		}
		ok := true
		for k := 1; k < n && ok; k++ {
			_, ok = slices.BinarySearch(positionsOf(k), p+int32(k))
		}
		if ok {
			count++
			next = p + int32(n)
		}
	}
	return count
}

// textRows checks that rows come as text (pgx's exec mode asks for text results), so that
// RawValues can be parsed as such.
func textRows(rows pgx.Rows) error {
	for _, f := range rows.FieldDescriptions() {
		if f.Format != pgx.TextFormatCode {
			return fmt.Errorf("column %s came in format %d, not text", f.Name, f.Format)
		}
	}
	return nil
}
