package postgres

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// BM25's collection statistics on PostgreSQL.
//
//   - N and the average document length come from sessionmem_doc_stats, which triggers keep
//     exact in the same transactions as the documents' inserts and deletes (schema 4): one
//     read of sixteen rows, consistent with the search's snapshot.
//   - A term's document frequency (df) is counted through the GIN index when that is cheap,
//     and estimated from PostgreSQL's own statistics when it is not. Counting visits every
//     matching row (a GIN index cannot count without the heap): about 5 µs each, so "the" in
//     a 100 MB store (20,000 documents) took 100-450 ms. ANALYZE, which autovacuum runs
//     after every 10% of the table changed, records in pg_stats the 1,000 most common
//     lexemes of the terms column with the share of rows holding each (most_common_elems);
//     on the 100 MB store its estimate of "the" was 20,646 for 20,623, and the least common
//     of those lexemes was in 1.4% of the documents. So a lexeme listed there with an
//     estimate of at least mceMinDocs documents takes the estimate, and every other term is
//     counted, up to dfCountCap documents (a term past it that the statistics do not list,
//     in a store not analyzed yet, counts as dfCountCap). Counts and estimates are kept per
//     process for Options.StatsMaxAge (a minute): a term's df moves slowly, and a question
//     asked again, or a later page, should not count again.
//   - Keeping exact counts per term in a table was rejected: every saved message would
//     update a hundred-odd rows (its distinct terms), tripling the cost of writing a
//     document, and the rows of common words would be a lock every writer of every server
//     queues on.
const (
	dfCountCap   = 5000
	mceMinDocs   = 1000
	mceMaxAge    = 5 * time.Minute
	dfCacheLimit = 20000 // entries; the cache is emptied when it grows past this
)

// DefaultStatsMaxAge is how long a process reuses a term's document frequency.
const DefaultStatsMaxAge = time.Minute

// corpusStats are N and the average document length (in terms).
type corpusStats struct {
	n     int64
	avgdl float64
}

// loadCorpusStats reads N and the average length from sessionmem_doc_stats, and the newest
// document (a search's snapshot), in one round trip. Documents whose length is not known yet
// (written before schema 4, not filled yet) count in N but not in the average; they are
// ranked as of average length.
func loadCorpusStats(ctx context.Context, tx pgx.Tx) (corpusStats, int64, error) {
	var snap, docs, lens, terms int64
	err := tx.QueryRow(ctx, `SELECT coalesce((SELECT max(doc) FROM sessionmem_documents), 0),
		coalesce(sum(docs), 0)::bigint, coalesce(sum(lens), 0)::bigint, coalesce(sum(terms), 0)::bigint
		FROM sessionmem_doc_stats`).Scan(&snap, &docs, &lens, &terms)
	if err != nil {
		return corpusStats{}, 0, err
	}
	st := corpusStats{n: max(docs, 0), avgdl: 1}
	if lens > 0 && terms > 0 {
		st.avgdl = float64(terms) / float64(lens)
	}
	return st, snap, nil
}

// statsCache is a Store's memory of document frequencies and of pg_stats' common lexemes.
type statsCache struct {
	mu    sync.Mutex
	df    map[string]cachedDF // by the term's tsquery
	mce   map[string]float64  // lexeme: share of documents holding it
	mceAt time.Time
}

type cachedDF struct {
	df int64
	at time.Time
}

// termDFs returns the document frequency of each term (see the comment above), n being the
// number of documents.
func (s *Store) termDFs(ctx context.Context, tx pgx.Tx, terms []fts.Term, n int64) ([]int64, error) {
	c := &s.stats
	maxAge := s.opts.StatsMaxAge
	now := time.Now()
	out := make([]int64, len(terms))
	mce, err := s.commonLexemes(ctx, tx, now)
	if err != nil {
		return nil, err
	}
	var todo []int // terms to count
	c.mu.Lock()
	for i, t := range terms {
		key := t.TSQuery()
		if e, ok := c.df[key]; ok && maxAge > 0 && now.Sub(e.at) < maxAge {
			out[i] = e.df
			continue
		}
		if est := estimateDF(t, mce, n); est >= mceMinDocs {
			out[i] = est
			continue
		}
		todo = append(todo, i)
	}
	c.mu.Unlock()
	if len(todo) > 0 {
		var sql strings.Builder
		args := []any{pgx.QueryExecModeExec, dfCountCap}
		sql.WriteString("SELECT ")
		for k, i := range todo {
			if k > 0 {
				sql.WriteString(", ")
			}
			args = append(args, terms[i].TSQuery())
			sql.WriteString("(SELECT count(*) FROM (SELECT 1 FROM sessionmem_documents WHERE terms @@ $" +
				strconv.Itoa(len(args)-1) + "::tsquery LIMIT $1) x)")
		}
		counts := make([]int64, len(todo))
		dest := make([]any, len(todo))
		for k := range counts {
			dest[k] = &counts[k]
		}
		if err := tx.QueryRow(ctx, sql.String(), args...).Scan(dest...); err != nil {
			return nil, err
		}
		for k, i := range todo {
			out[i] = counts[k]
			if counts[k] >= dfCountCap {
				out[i] = max(counts[k], estimateDF(terms[i], mce, n))
			}
		}
	}
	if maxAge > 0 {
		c.mu.Lock()
		if c.df == nil || len(c.df) > dfCacheLimit {
			c.df = map[string]cachedDF{}
		}
		for i, t := range terms {
			c.df[t.TSQuery()] = cachedDF{df: out[i], at: now}
		}
		c.mu.Unlock()
	}
	return out, nil
}

// estimateDF estimates a term's document frequency from the common lexemes: a plain
// lexeme's share times n; for a prefix, the largest share among the lexemes it covers (a
// lower bound: they overlap, word forms often occur together); 0 when unknown, and for
// phrases and multi-term words.
func estimateDF(t fts.Term, mce map[string]float64, n int64) int64 {
	if len(t.Terms) != 1 || len(mce) == 0 {
		return 0
	}
	share := 0.0
	if !t.Prefix {
		share = mce[t.Terms[0]]
	} else {
		for lx, f := range mce {
			if t.PrefixMatch(lx) {
				share = max(share, f)
			}
		}
	}
	return int64(math.Round(share * float64(n)))
}

// commonLexemes returns pg_stats' most common lexemes of the documents' terms with their
// shares (nil before the table was first analyzed), read at most every mceMaxAge (at every
// search when StatsMaxAge is negative).
func (s *Store) commonLexemes(ctx context.Context, tx pgx.Tx, now time.Time) (map[string]float64, error) {
	c := &s.stats
	c.mu.Lock()
	if s.opts.StatsMaxAge > 0 && !c.mceAt.IsZero() && now.Sub(c.mceAt) < mceMaxAge {
		m := c.mce
		c.mu.Unlock()
		return m, nil
	}
	c.mu.Unlock()
	var elems []string
	var freqs []float32
	err := tx.QueryRow(ctx, `SELECT st.most_common_elems::text::text[], st.most_common_elem_freqs FROM pg_stats st
		WHERE st.tablename = 'sessionmem_documents' AND st.attname = 'terms' AND st.schemaname = (SELECT n.nspname
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = 'sessionmem_documents'::regclass)`).
		Scan(&elems, &freqs)
	if err != nil && err != pgx.ErrNoRows {
		return nil, err
	}
	var m map[string]float64
	if len(elems) > 0 && len(freqs) >= len(elems) {
		m = make(map[string]float64, len(elems))
		for i, e := range elems {
			m[e] = float64(freqs[i])
		}
	}
	c.mu.Lock()
	c.mce, c.mceAt = m, now
	c.mu.Unlock()
	return m, nil
}
