package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
	"github.com/sessionmem/sessionmem/storage/storetest"
)

// The ranking oracle: BM25 with storage/fts's parameters and context (fts.ContextScore),
// computed in Go by brute force from fts.Terms of the same texts the store indexed
// (storetest.Docs of the same records), with the tier rule of search_context.go.

// omsg is a record a test saves: a message (role, text, files read through a tool call) or,
// with summary set, a compaction's summary.
type omsg struct {
	role, text string
	at         time.Time
	files      []string
	summary    bool
}

func (m omsg) record(id string) storage.Record {
	if m.summary {
		b, _ := json.Marshal(map[string]any{"type": "compaction", "id": id, "ts": m.at.Format(time.RFC3339Nano),
			"compaction": map[string]any{"summary": m.text, "first_kept_id": "x", "read_files": m.files, "modified_files": []string{}}})
		return storage.Record{Kind: "compaction", Data: b}
	}
	content := []map[string]any{{"type": "text", "text": m.text}}
	for _, f := range m.files {
		content = append(content, map[string]any{"type": "tool_call", "id": "c-" + id, "name": "read", "arguments": map[string]any{"path": f}})
	}
	b, _ := json.Marshal(map[string]any{"type": "message", "id": id, "ts": m.at.Format(time.RFC3339Nano),
		"message": map[string]any{"role": m.role, "content": content}})
	return storage.Record{Kind: "message", Data: b}
}

// oracle remembers what a test saved.
type oracle struct {
	mu    sync.Mutex // recs, for saves from several goroutines (each to its own sessions)
	order []string   // sessions in creation order
	hdrs  map[string]storage.Header
	recs  map[string][]storage.Record
}

func newOracle() *oracle {
	return &oracle{hdrs: map[string]storage.Header{}, recs: map[string][]storage.Record{}}
}

// create makes session id in working directory wd on s.
func (o *oracle) create(t testing.TB, s *Store, id, wd string) {
	t.Helper()
	h := storage.Header{ID: id, WorkingDir: wd, Created: t0}
	if err := s.Create(context.Background(), h, storage.Meta{Name: "n-" + id}); err != nil {
		t.Fatal(err)
	}
	o.order = append(o.order, id)
	o.hdrs[id] = h
}

// save appends msgs to session id in one Update and writes their documents; entry ids are
// "<id>-<seq>".
func (o *oracle) save(t testing.TB, s *Store, id string, msgs ...omsg) {
	t.Helper()
	if err := o.trySave(s, id, msgs...); err != nil {
		t.Fatal(err)
	}
}

func (o *oracle) trySave(s *Store, id string, msgs ...omsg) error {
	var recs []storage.Record
	err := s.Update(context.Background(), id, func(w storage.Writer) error {
		recs = recs[:0]
		for i, m := range msgs {
			seq := w.LastSeq() + uint64(i) + 1
			r := m.record(fmt.Sprintf("%s-%d", id, seq))
			r.Seq = seq
			recs = append(recs, r)
		}
		_, err := w.Append(recs, storage.Meta{})
		return err
	})
	if err != nil {
		return err
	}
	o.mu.Lock()
	o.recs[id] = append(o.recs[id], recs...)
	o.mu.Unlock()
	// Written now, for every handle (a search writes only its own Store's queue).
	return s.flushDocs(context.Background())
}

// oDoc is a document as the oracle sees it.
type oDoc struct {
	session string
	d       fts.Doc
	terms   []string
}

func (o *oracle) docs() []oDoc {
	var out []oDoc
	for _, id := range o.order {
		for _, rec := range o.recs[id] {
			for _, d := range storetest.Docs(o.hdrs[id], rec) {
				if d.Kind == fts.KindMessage || d.Kind == fts.KindSummary {
					out = append(out, oDoc{session: id, d: d, terms: fts.Terms(d.Text)})
				}
			}
		}
	}
	return out
}

// oHit is a hit of the oracle.
type oHit struct {
	id    string // session/entry
	score float64
	time  time.Time
}

// rank returns every hit of q among the documents keep accepts, in the store's order: the
// tier best by own score ordered by score with context, then the rest by own score.
func (o *oracle) rank(q *fts.Query, keep func(oDoc) bool, tier int) []oHit {
	docs := o.docs()
	n := len(docs)
	total := 0
	for _, d := range docs {
		total += len(d.terms)
	}
	avgdl := 1.0
	if total > 0 {
		avgdl = float64(total) / float64(n)
	}
	ranked := q.Ranked()
	idf := make([]float64, len(ranked))
	for i, t := range ranked {
		df := 0
		for _, d := range docs {
			if t.OccursIn(d.terms) {
				df++
			}
		}
		idf[i] = fts.IDF(n, df)
	}
	own := func(d oDoc) float64 {
		if !q.MatchesTerms(d.terms) {
			return 0
		}
		s := 0.0
		for i, t := range ranked {
			s += fts.TermScore(idf[i], t.Count(d.terms), float64(len(d.terms)), avgdl)
		}
		return s
	}
	type scored struct {
		i        int
		own, fin float64
	}
	var hits []scored
	for i, d := range docs {
		if q.MatchesTerms(d.terms) && keep(d) {
			hits = append(hits, scored{i: i, own: own(d)})
		}
	}
	byKey := func(score func(scored) float64) func(a, b scored) int {
		return func(a, b scored) int {
			if c := cmp.Compare(score(b), score(a)); c != 0 {
				return c
			}
			if c := docs[b.i].d.Time.Compare(docs[a.i].d.Time); c != 0 {
				return c
			}
			return cmp.Compare(b.i, a.i)
		}
	}
	slices.SortFunc(hits, byKey(func(s scored) float64 { return s.own }))
	cut := min(tier, len(hits))
	for k := range hits[:cut] {
		d := docs[hits[k].i]
		var prev, next float64
		for j := hits[k].i - 1; j >= 0 && docs[j].session == d.session; j-- {
			if docs[j].d.Kind == fts.KindMessage {
				prev = own(docs[j])
				break
			}
		}
		for j := hits[k].i + 1; j < len(docs) && docs[j].session == d.session; j++ {
			if docs[j].d.Kind == fts.KindMessage {
				next = own(docs[j])
				break
			}
		}
		hits[k].fin = fts.ContextScore(hits[k].own, prev, next)
	}
	slices.SortFunc(hits[:cut], byKey(func(s scored) float64 { return s.fin }))
	var out []oHit
	for k, h := range hits {
		score := h.own
		if k < cut {
			score = h.fin
		}
		d := docs[h.i]
		out = append(out, oHit{id: d.session + "/" + d.d.EntryID, score: score, time: d.d.Time})
	}
	return out
}

// searchAll returns every hit of query, page by page (limit per page).
func searchAll(t testing.TB, s *Store, query string, q storage.SearchQuery, limit int) ([]storage.SearchHit, bool) {
	t.Helper()
	var all []storage.SearchHit
	windowed := false
	q.Limit = limit
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		res := find(t, s, query, q)
		if len(res.Hits) > limit {
			t.Fatalf("page of %d hits for limit %d", len(res.Hits), limit)
		}
		all = append(all, res.Hits...)
		windowed = windowed || res.Windowed
		if res.NextCursor == "" {
			return all, windowed
		}
		q.Cursor = res.NextCursor
	}
}

// compareHits fails the test when the store's hits are not the oracle's, in the same order
// with the same scores (within float rounding).
func compareHits(t testing.TB, what string, got []storage.SearchHit, want []oHit) {
	t.Helper()
	ids := func() (g, w []string) {
		for _, h := range got {
			g = append(g, fmt.Sprintf("%s/%s:%.6g", h.SessionID, h.EntryID, h.Score))
		}
		for _, h := range want {
			w = append(w, fmt.Sprintf("%s:%.6g", h.id, h.score))
		}
		return
	}
	if len(got) != len(want) {
		g, w := ids()
		t.Fatalf("%s: %d hits, want %d\ngot  %v\nwant %v", what, len(got), len(want), g, w)
	}
	for i := range got {
		id := got[i].SessionID + "/" + got[i].EntryID
		if id != want[i].id || math.Abs(got[i].Score-want[i].score) > 1e-9*math.Max(1, math.Abs(want[i].score)) {
			g, w := ids()
			t.Fatalf("%s: hit %d is %s (%.12g), want %s (%.12g)\ngot  %v\nwant %v", what, i, id, got[i].Score, want[i].id, want[i].score, g, w)
		}
	}
}

// oracleVocabulary: words of very different frequencies (index = rank), function words,
// identifiers and paths, so that df, tf, length, phrases and prefixes all vary.
var oracleVocabulary = []string{
	"the", "we", "did", "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
	"parseConfig", "internal/auth/login.go", "login", "timeout", "fixing", "fixed", "configuration",
	"config", "conflict", "release", "date", "zebrafish",
}

// oracleText is a random text of 1 to 60 words, the first ones of the vocabulary the most
// frequent.
func oracleText(rng *rand.Rand) string {
	n := 1 + rng.IntN(60)
	words := make([]string, n)
	for i := range words {
		// A rough Zipf: rank k with probability about 1/(k+1).
		k := int(math.Exp(rng.Float64()*math.Log(float64(len(oracleVocabulary)+1)))) - 1
		words[i] = oracleVocabulary[min(k, len(oracleVocabulary)-1)]
	}
	return strings.Join(words, " ")
}

// oracleQueries exercise every query form of contract v3.
var oracleQueries = []string{
	"alpha", "zebrafish", "alpha bravo", "when did we change the golf hotel india", "+alpha bravo",
	`"alpha bravo"`, `"bravo alpha" charlie`, "alph*", "conf*", "fix*", "fixing*", "alpha -bravo", "the", "the did we",
	"login.go", "auth/login.go", "parseConfig", "parseconfig", "bra* charlie", `"bravo char*"`,
	"+echo -foxtrot golf hotel", "release date", "+kilo +lima", `-"alpha bravo" delta`, "nomatchatall",
	`"alpha alpha"`, `"the the" bravo`, `"alpha bravo alpha"`,
	"what did the user say about the release date and the login timeout configuration",
}

// TestSearchOracle: every query form, with and without filters, paged at several limits and
// with a tier of a few documents (so pages cross from the tier to the rest), ranks exactly as
// the brute-force oracle, scores included.
func TestSearchOracle(t *testing.T) {
	for _, tc := range []struct{ tier, roundDocs int }{{0, 0}, {4, 0}, {4, 1}, {12, 1}} {
		tier := tc.tier
		t.Run(fmt.Sprintf("tier%d-round%d", tc.tier, tc.roundDocs), func(t *testing.T) {
			s := openStore(t, newSchema(t), Options{Docs: storetest.Docs, StatsMaxAge: -1, tier: tier, roundDocs: tc.roundDocs, BackfillInterval: -1})
			o := newOracle()
			rng := rand.New(rand.NewPCG(1, uint64(tier)))
			at := t0
			for k := range 5 {
				id := fmt.Sprintf("s%d", k)
				o.create(t, s, id, fmt.Sprintf("/w%d", k%2))
				for range 4 {
					var msgs []omsg
					for j := range 1 + rng.IntN(8) {
						at = at.Add(time.Second)
						m := omsg{role: []string{"user", "assistant"}[j%2], text: oracleText(rng), at: at}
						if rng.IntN(6) == 0 {
							m.files = []string{"internal/auth/login.go"}
						}
						if rng.IntN(15) == 0 {
							m.summary, m.role = true, ""
						}
						msgs = append(msgs, m)
					}
					o.save(t, s, id, msgs...)
				}
			}
			checkOracle(t, s, o, tier)
		})
	}
}

// oracleFilters are the filters the oracle checks, with what each keeps.
var oracleFilters = []struct {
	name string
	q    storage.SearchQuery
	keep func(oDoc) bool
}{
	{"none", storage.SearchQuery{}, func(oDoc) bool { return true }},
	{"role", storage.SearchQuery{Role: "user"}, func(d oDoc) bool { return d.d.Role == "user" }},
	{"session", storage.SearchQuery{SessionID: "s1"}, func(d oDoc) bool { return d.session == "s1" }},
	{"dir", storage.SearchQuery{WorkingDir: "/w0"}, func(d oDoc) bool { return d.session == "s0" || d.session == "s2" || d.session == "s4" }},
	{"kind", storage.SearchQuery{Kind: fts.KindSummary}, func(d oDoc) bool { return d.d.Kind == fts.KindSummary }},
	{"since", storage.SearchQuery{Since: t0.Add(40 * time.Second)}, func(d oDoc) bool { return !d.d.Time.Before(t0.Add(40 * time.Second)) }},
	{"file", storage.SearchQuery{File: "internal/auth/login.go"}, func(d oDoc) bool {
		return slices.Contains(d.d.Files, "/w0/internal/auth/login.go") || slices.Contains(d.d.Files, "/w1/internal/auth/login.go")
	}},
}

func checkOracle(t *testing.T, s *Store, o *oracle, tier int) {
	t.Helper()
	if tier == 0 {
		tier = minTier
	}
	for _, query := range oracleQueries {
		q, err := fts.Parse(query)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range oracleFilters {
			want := o.rank(q, f.keep, tier)
			for _, limit := range []int{1, 3, 100} {
				if f.name != "none" && limit != 3 {
					continue
				}
				got, windowed := searchAll(t, s, query, f.q, limit)
				if windowed {
					t.Errorf("%q: windowed", query)
				}
				compareHits(t, fmt.Sprintf("%q, filter %s, limit %d", query, f.name, limit), got, want)
			}
		}
	}
}
