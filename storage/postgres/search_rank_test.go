package postgres

import (
	"context"
	"errors"
	"fmt"
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

// TestTermFreq: term frequencies read off a tsvector's text (the filtered lexemes a search
// fetches) are fts.Term.Count's, for words, phrases and paths; and the length read off the
// positions is the number of terms.
func TestTermFreq(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var terms []rankTerm
	var lexemes []string
	// Words, and phrases whose occurrences may overlap: the others are counted by
	// PostgreSQL (countedByRank), which the oracle tests check.
	for _, query := range []string{"alpha", `"alpha alpha"`, `"alpha bravo alpha"`, "parseConfig", "the", `"the the"`,
		"naïve", "京"} {
		q, err := fts.Parse(query)
		if err != nil {
			t.Fatal(err)
		}
		tm := q.Include[0]
		if countedByRank(tm) {
			t.Fatalf("%s: counted by ts_rank_cd", query)
		}
		terms = append(terms, rankTerm{term: tm, idf: 1})
		for _, x := range tm.Terms {
			if !slices.Contains(lexemes, x) {
				lexemes = append(lexemes, x)
			}
		}
	}
	sc := newScorer(terms, lexemes, 1)
	var buf tsvBuf
	for i := range 300 {
		text := oracleText(rng)
		if i%7 == 0 {
			text = "it's a 'quoted' back\\slash O'Brien naïve 東京 " + text
		}
		vec := []byte(fts.TSVector(text))
		words := fts.Terms(text)
		if n, err := tsvectorLength(vec, &buf); err != nil || n != len(words) {
			t.Fatalf("%q: length %d (%v), want %d", text, n, err, len(words))
		}
		if _, err := sc.score(vec, nil, []byte("-1")); err != nil {
			t.Fatal(err)
		}
		for k, tm := range terms {
			if got, want := sc.tfs[k], tm.term.Count(words); got != want {
				t.Fatalf("%q in %q: tf %d, want %d", tm.term.Source, text, got, want)
			}
		}
	}
	// PostgreSQL's output: weights after positions, quotes and backslashes doubled.
	var got []string
	err := walkTSVector([]byte(`'a''b':1A,3 'c\\d':2B 'x'`), &buf, func(lex []byte, pos []int32) {
		got = append(got, fmt.Sprint(string(lex), pos))
	})
	if err != nil || strings.Join(got, " ") != `a'b[1 3] c\d[2] x[]` {
		t.Fatalf("walked %q, %v", got, err)
	}
	for _, bad := range []string{`'a`, `a`, `'a':x`, `'a':`} {
		if err := walkTSVector([]byte(bad), &buf, func([]byte, []int32) {}); err == nil {
			t.Errorf("%q walked", bad)
		}
	}
}

// TestCountedByRank: which terms' frequencies ts_rank_cd counts.
func TestCountedByRank(t *testing.T) {
	for query, want := range map[string]bool{
		"alpha": false, "alph*": true, `"alpha bravo"`: true, `"alpha bravo alpha"`: false, `"alpha alpha"`: false,
		`"alpha bravo alpha bravo"`: false, `"alpha bravo bravo"`: true, "auth/login.go": true, "go/go": false,
		`"alpha bra*"`: true,
	} {
		q, err := fts.Parse(query)
		if err != nil {
			t.Fatal(err)
		}
		if got := countedByRank(q.Include[0]); got != want {
			t.Errorf("%s: %v, want %v", query, got, want)
		}
	}
}

// TestSearchPrunes: with a rare and a common word, the top hits come from the rare word's
// documents alone (MaxScore stops before the common word's round), and still rank as the
// oracle does.
func TestSearchPrunes(t *testing.T) {
	s := openStore(t, newSchema(t), Options{Docs: storetest.Docs, StatsMaxAge: -1, tier: 1, roundDocs: 1, BackfillInterval: -1})
	o := newOracle()
	o.create(t, s, "p", "/w")
	var msgs []omsg
	for i := range 300 {
		text := "alpha filler words here"
		if i%100 == 7 {
			text = "zebrafish alpha"
		}
		msgs = append(msgs, omsg{role: "user", text: text, at: t0.Add(time.Duration(i) * time.Second)})
	}
	o.save(t, s, "p", msgs...)
	q, _ := fts.Parse("zebrafish alpha")
	before := s.scored.Load()
	res := find(t, s, "zebrafish alpha", storage.SearchQuery{Limit: 1})
	if n := s.scored.Load() - before; n != 3 {
		t.Errorf("scored %d documents, want the rare word's 3", n)
	}
	want := o.rank(q, func(oDoc) bool { return true }, 1)
	compareHits(t, "first page", res.Hits, want[:1])
	got, _ := searchAll(t, s, "zebrafish alpha", storage.SearchQuery{}, 2)
	compareHits(t, "all pages", got, want)
}

// TestScoreBudget: a query whose matches fit the budget ranks exactly; a round that would
// pass it is left out (Windowed), the hits being the oracle's over the rounds kept; a query
// whose rarest word alone passes it ranks the newest matches (Windowed); pages agree.
func TestScoreBudget(t *testing.T) {
	url := newSchema(t)
	s := openStore(t, url, Options{Docs: storetest.Docs, StatsMaxAge: -1, tier: 3, roundDocs: 1, BackfillInterval: -1})
	o := newOracle()
	o.create(t, s, "b", "/w")
	var msgs []omsg
	for i := range 60 {
		words := []string{"alpha"}
		if i%2 == 0 {
			words = append(words, "bravo")
		}
		if i%10 == 0 {
			words = append(words, "charlie")
		}
		msgs = append(msgs, omsg{role: "user", text: strings.Join(words, " ") + strings.Repeat(" pad", i%7), at: t0.Add(time.Duration(i) * time.Second)})
	}
	o.save(t, s, "b", msgs...)
	all := func(oDoc) bool { return true }
	has := func(word string) func(oDoc) bool {
		term := fts.Terms(word)[0] // its index form (a stem)
		return func(d oDoc) bool { return slices.Contains(d.terms, term) }
	}
	for _, tc := range []struct {
		name, query string
		budget      int
		keep        func(oDoc) bool
		windowed    bool
	}{
		{"fits exactly", "alpha", 60, all, false},
		{"rounds fit", "charlie bravo", 30, all, false},
		{"second round cut", "charlie bravo", 29, has("charlie"), true},
		{"second round surely past the budget", "charlie bravo", 15, has("charlie"), true},
		{"newest window", "bravo alpha", 20, func(d oDoc) bool { return d.d.Time.After(t0.Add(39 * time.Second)) }, true},
		{"required within the budget", "+alpha +bravo", 30, all, false},
		{"predicted past the budget, within it", "alpha -bravo", 40, all, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := openStore(t, url, Options{Docs: storetest.Docs, StatsMaxAge: -1, tier: 3, roundDocs: 1, BackfillInterval: -1, ScoreBudget: tc.budget})
			q, _ := fts.Parse(tc.query)
			want := o.rank(q, tc.keep, 3)
			for _, limit := range []int{2, 100} {
				got, windowed := searchAll(t, b, tc.query, storage.SearchQuery{}, limit)
				if windowed != tc.windowed {
					t.Errorf("limit %d: windowed %v", limit, windowed)
				}
				compareHits(t, fmt.Sprintf("%s, limit %d", tc.query, limit), got, want)
			}
		})
	}
}

// checkDocStats fails the test unless sessionmem_doc_stats sums what the documents hold and
// every document's len is the number of terms of its text.
func checkDocStats(t testing.TB, s *Store, o *oracle) {
	t.Helper()
	var docs, lens, terms, wantDocs, wantLens, wantTerms int64
	err := s.pool.QueryRow(context.Background(), `SELECT (SELECT sum(docs) FROM sessionmem_doc_stats)::bigint,
		(SELECT sum(lens) FROM sessionmem_doc_stats)::bigint, (SELECT sum(terms) FROM sessionmem_doc_stats)::bigint,
		count(*), count(len), coalesce(sum(len), 0)::bigint FROM sessionmem_documents`).Scan(&docs, &lens, &terms, &wantDocs, &wantLens, &wantTerms)
	if err != nil {
		t.Fatal(err)
	}
	if docs != wantDocs || lens != wantLens || terms != wantTerms {
		t.Fatalf("stats say %d documents, %d lengths, %d terms; the table has %d, %d, %d", docs, lens, terms, wantDocs, wantLens, wantTerms)
	}
	if o == nil {
		return
	}
	rows, err := s.pool.Query(context.Background(), `SELECT s.id, d.entry_id, d.len FROM sessionmem_documents d JOIN sessionmem_sessions s ON s.sid = d.sid`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for rows.Next() {
		var id, entry string
		var n int
		if err := rows.Scan(&id, &entry, &n); err != nil {
			t.Fatal(err)
		}
		got[id+"/"+entry] = n
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	want := map[string]int{}
	for _, d := range o.docs() {
		want[d.session+"/"+d.d.EntryID] = len(d.terms)
	}
	if len(got) != len(want) {
		t.Fatalf("%d documents, the oracle has %d", len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("%s: len %d, want %d", k, got[k], n)
		}
	}
}

// TestSearchDeleteRewrite: deleting a session and redacting one (storage.Rewriter) keep N,
// the lengths and every df right: the ranking stays the oracle's.
func TestSearchDeleteRewrite(t *testing.T) {
	s := openStore(t, newSchema(t), Options{Docs: storetest.Docs, StatsMaxAge: -1, tier: 5, BackfillInterval: -1})
	o := newOracle()
	rng := rand.New(rand.NewPCG(5, 6))
	at := t0
	for k := range 4 {
		id := fmt.Sprintf("s%d", k)
		o.create(t, s, id, "/w")
		var msgs []omsg
		for j := range 12 {
			at = at.Add(time.Second)
			msgs = append(msgs, omsg{role: []string{"user", "assistant"}[j%2], text: oracleText(rng), at: at})
		}
		o.save(t, s, id, msgs...)
	}
	check := func(what string) {
		t.Helper()
		checkDocStats(t, s, o)
		for _, query := range []string{"alpha", "zebrafish release", "bravo charlie delta", `"alpha bravo"`, "conf*"} {
			q, _ := fts.Parse(query)
			got, _ := searchAll(t, s, query, storage.SearchQuery{}, 4)
			compareHits(t, what+": "+query, got, o.rank(q, func(oDoc) bool { return true }, 5))
		}
	}
	check("saved")
	if err := s.Delete(context.Background(), "s1"); err != nil {
		t.Fatal(err)
	}
	o.order = slices.DeleteFunc(o.order, func(id string) bool { return id == "s1" })
	check("after a delete")
	// Redact: every "alpha" of s2 becomes "zebrafish".
	_, err := s.Rewrite(context.Background(), "s2", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		out := make([][]byte, len(recs))
		for i, r := range recs {
			d, _ := storage.StripSeq(r.Data)
			out[i] = []byte(strings.ReplaceAll(string(d), "alpha", "zebrafish"))
			o.recs["s2"][i].Data = out[i]
		}
		return h, out, storage.Meta{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check("after a rewrite")
}

// TestSearchPagingWithSaves: the pages of a query continue the first page's ranking exactly,
// although documents that change N, the average length and the words' df are saved (and a
// session deleted) between pages.
func TestSearchPagingWithSaves(t *testing.T) {
	s := openStore(t, newSchema(t), Options{Docs: storetest.Docs, StatsMaxAge: -1, tier: 6, roundDocs: 1, BackfillInterval: -1})
	o := newOracle()
	rng := rand.New(rand.NewPCG(7, 8))
	at := t0
	for k := range 3 {
		id := fmt.Sprintf("s%d", k)
		o.create(t, s, id, "/w")
		var msgs []omsg
		for range 25 {
			at = at.Add(time.Second)
			msgs = append(msgs, omsg{role: "user", text: oracleText(rng), at: at})
		}
		o.save(t, s, id, msgs...)
	}
	o.create(t, s, "late", "/w")
	for _, query := range []string{"alpha bravo", "when did we fix the golf hotel", "+charlie delta", "conf*"} {
		whole, _ := searchAll(t, s, query, storage.SearchQuery{}, 100)
		var got []storage.SearchHit
		q := storage.SearchQuery{Limit: 4}
		for page := 0; ; page++ {
			res := find(t, s, query, q)
			got = append(got, res.Hits...)
			// Between pages: more of the same words (N, lengths, df all move), in a new
			// session and in the ranked ones.
			o.save(t, s, "late", omsg{role: "user", text: "alpha bravo charlie delta golf hotel configuration fixing " + oracleText(rng), at: at.Add(time.Hour)})
			o.save(t, s, "s0", omsg{role: "assistant", text: oracleText(rng), at: at.Add(time.Hour)})
			if res.NextCursor == "" {
				break
			}
			q.Cursor = res.NextCursor
		}
		if len(got) != len(whole) {
			t.Fatalf("%q: pages gave %d hits, one page %d", query, len(got), len(whole))
		}
		for i := range got {
			if got[i].SessionID+got[i].EntryID != whole[i].SessionID+whole[i].EntryID || got[i].Score != whole[i].Score {
				t.Fatalf("%q: hit %d of the pages is %s/%s %v, of one page %s/%s %v", query, i,
					got[i].SessionID, got[i].EntryID, got[i].Score, whole[i].SessionID, whole[i].EntryID, whole[i].Score)
			}
		}
	}
	// A delete between pages: nothing repeats, nothing of the deleted session comes back.
	first := find(t, s, "alpha", storage.SearchQuery{Limit: 5})
	if err := s.Delete(context.Background(), "s1"); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, h := range first.Hits {
		seen[h.SessionID+"/"+h.EntryID] = true
	}
	for q := (storage.SearchQuery{Limit: 5, Cursor: first.NextCursor}); q.Cursor != ""; {
		res := find(t, s, "alpha", q)
		for _, h := range res.Hits {
			if seen[h.SessionID+"/"+h.EntryID] || h.SessionID == "s1" {
				t.Fatalf("after a delete: %s/%s again or deleted", h.SessionID, h.EntryID)
			}
			seen[h.SessionID+"/"+h.EntryID] = true
		}
		q.Cursor = res.NextCursor
	}
}

// TestSearchTwoHandles: two Stores (two processes' handles) save into one database at the
// same time; the statistics stay exact and both rank as the oracle does.
func TestSearchTwoHandles(t *testing.T) {
	url := newSchema(t)
	a := openStore(t, url, Options{Docs: storetest.Docs, StatsMaxAge: -1, BackfillInterval: -1})
	b := openStore(t, url, Options{Docs: storetest.Docs, StatsMaxAge: -1, BackfillInterval: -1})
	o := newOracle()
	for k := range 4 {
		o.create(t, a, fmt.Sprintf("s%d", k), "/w")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w, st := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(9, uint64(w)))
			for i := range 30 {
				// Each handle its own sessions, so the oracle knows each session's order;
				// the documents' statistics are shared.
				id := fmt.Sprintf("s%d", w+2*(i%2))
				if err := o.trySave(st, id, omsg{role: "user", text: oracleText(rng), at: t0.Add(time.Duration(w*1000+i) * time.Second)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, st := range []*Store{a, b} {
		if err := st.flushDocs(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	checkDocStats(t, a, o)
	for _, query := range []string{"alpha", "golf hotel india", "+bravo charlie", "fix*"} {
		q, _ := fts.Parse(query)
		want := o.rank(q, func(oDoc) bool { return true }, minTier)
		for name, st := range map[string]*Store{"a": a, "b": b} {
			got, _ := searchAll(t, st, query, storage.SearchQuery{}, 7)
			compareHits(t, name+": "+query, got, want)
		}
	}
}

// TestMigrateFrom3: documents written before schema 4 have no len; they count in N at once,
// rank as of average length meanwhile, and the background fill sets their len (read off the
// tsvector), after which the statistics are exact and the ranking is the oracle's.
func TestMigrateFrom3(t *testing.T) {
	url := newSchema(t)
	old := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	o := newOracle()
	rng := rand.New(rand.NewPCG(11, 12))
	for k := range 3 {
		id := fmt.Sprintf("s%d", k)
		o.create(t, old, id, "/w")
		var msgs []omsg
		for j := range 30 {
			msgs = append(msgs, omsg{role: "user", text: oracleText(rng), at: t0.Add(time.Duration(k*100+j) * time.Second)})
		}
		o.save(t, old, id, msgs...)
	}
	if err := old.flushDocs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := old.pool.Exec(context.Background(), undoSchema4); err != nil {
		t.Fatal(err)
	}
	old.Close()
	// The new version, whose background job is not started yet (no fill).
	s := openStore(t, url, Options{Docs: storetest.Docs, StatsMaxAge: -1, BackfillInterval: -1})
	if res := find(t, s, "alpha", storage.SearchQuery{Limit: 100}); len(res.Hits) == 0 {
		t.Fatal("nothing found before the fill")
	}
	var docs, lens int64
	if err := s.pool.QueryRow(context.Background(), `SELECT sum(docs), sum(lens) FROM sessionmem_doc_stats`).Scan(&docs, &lens); err != nil {
		t.Fatal(err)
	}
	if docs != 90 || lens != 0 {
		t.Fatalf("before the fill: stats of %d documents, %d lengths", docs, lens)
	}
	// A new document meanwhile has its len at once.
	o.save(t, s, "s0", omsg{role: "user", text: "alpha after the upgrade", at: t0.Add(time.Hour)})
	if err := s.Reindex(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	checkDocStats(t, s, o)
	var unknown int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM sessionmem_documents WHERE len IS NULL`).Scan(&unknown); err != nil || unknown != 0 {
		t.Fatalf("%d documents without len, %v", unknown, err)
	}
	for _, query := range []string{"alpha", "bravo charlie delta", `"alpha bravo"`} {
		q, _ := fts.Parse(query)
		got, _ := searchAll(t, s, query, storage.SearchQuery{}, 10)
		compareHits(t, query, got, o.rank(q, func(oDoc) bool { return true }, minTier))
	}
}

// TestSearchBadCursor: cursors that could not come from this query's pages are errors
// wrapping fts.ErrBadQuery, tampered ones included.
func TestSearchBadCursor(t *testing.T) {
	s := openStore(t, newSchema(t), Options{Docs: storetest.Docs, tier: 2, BackfillInterval: -1})
	o := newOracle()
	o.create(t, s, "c", "/w")
	for i := range 10 {
		o.save(t, s, "c", omsg{role: "user", text: strings.Repeat("lemur ", 1+i%3), at: t0.Add(time.Duration(i) * time.Second)})
	}
	res := find(t, s, "lemur", storage.SearchQuery{Limit: 3})
	if res.NextCursor == "" {
		t.Fatal("no cursor")
	}
	cur, err := parseSearchCursor(res.NextCursor, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]string{
		"other words":  res.NextCursor, // used with "lemur other" below
		"phase 3":      func() string { x := cur; x.phase = 3; return x.String() }(),
		"no last hit":  func() string { x := cur; x.last.doc = 0; return x.String() }(),
		"dfs missing":  func() string { x := cur; x.u.dfs = nil; return x.String() }(),
		"floor > snap": func() string { x := cur; x.u.floor = x.u.snap + 1; return x.String() }(),
		"truncated":    res.NextCursor[:len(res.NextCursor)-4],
	} {
		query := "lemur"
		if name == "other words" {
			query = "lemur other"
		}
		m, _ := fts.Parse(query)
		if _, err := s.Search(context.Background(), storage.SearchQuery{Match: m, Cursor: c}); !errors.Is(err, fts.ErrBadQuery) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestScoreBudgetStaleDF: a df remembered from an earlier search (Options.StatsMaxAge) can
// be far below the truth; a first round that then passes the budget falls back to the
// newest matches, and the ranking is the oracle's over those (up to the df used: the order
// of a one-word query does not depend on it).
func TestScoreBudgetStaleDF(t *testing.T) {
	s := openStore(t, newSchema(t), Options{Docs: storetest.Docs, StatsMaxAge: time.Hour, ScoreBudget: 20, tier: 3, BackfillInterval: -1})
	o := newOracle()
	o.create(t, s, "d", "/w")
	at := t0
	save := func(n int) {
		var msgs []omsg
		for i := range n {
			at = at.Add(time.Second)
			msgs = append(msgs, omsg{role: "user", text: "alpha" + strings.Repeat(" pad", i%5), at: at})
		}
		o.save(t, s, "d", msgs...)
	}
	save(10)
	if res := find(t, s, "alpha", storage.SearchQuery{}); res.Windowed || len(res.Hits) != 10 {
		t.Fatalf("10 matches: %d hits, windowed %v", len(res.Hits), res.Windowed)
	}
	save(30)
	before := s.scored.Load()
	got, windowed := searchAll(t, s, "alpha", storage.SearchQuery{}, 6)
	if !windowed {
		t.Error("not windowed")
	}
	// 4 pages of 6: the first tries the round (21 documents read) and ranks the window
	// (20), the others rank the window.
	if n := s.scored.Load() - before; n != 21+4*20 {
		t.Errorf("scored %d documents for 4 pages under a budget of 20", n)
	}
	q, _ := fts.Parse("alpha")
	want := o.rank(q, func(d oDoc) bool { return d.d.Time.After(t0.Add(20 * time.Second)) }, 3)
	if len(got) != len(want) {
		t.Fatalf("%d hits, want %d", len(got), len(want))
	}
	for i := range got {
		if id := got[i].SessionID + "/" + got[i].EntryID; id != want[i].id {
			t.Fatalf("hit %d is %s, want %s", i, id, want[i].id)
		}
	}
}

// TestDocStatsRepair: statistics gone wrong (documents written with the triggers disabled)
// are set right by Reindex, and the ranking is the oracle's again.
func TestDocStatsRepair(t *testing.T) {
	s := openStore(t, newSchema(t), Options{Docs: storetest.Docs, StatsMaxAge: -1, BackfillInterval: -1})
	o := newOracle()
	o.create(t, s, "r", "/w")
	rng := rand.New(rand.NewPCG(13, 14))
	for range 3 {
		o.save(t, s, "r", omsg{role: "user", text: oracleText(rng), at: t0.Add(time.Duration(rng.IntN(1000)) * time.Second)})
	}
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `ALTER TABLE sessionmem_documents DISABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	o.save(t, s, "r", omsg{role: "user", text: "alpha bravo charlie", at: t0.Add(time.Hour)}, omsg{role: "user", text: "alpha", at: t0.Add(2 * time.Hour)})
	if _, err := s.pool.Exec(ctx, `ALTER TABLE sessionmem_documents ENABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	var docs int64
	if err := s.pool.QueryRow(ctx, `SELECT sum(docs) FROM sessionmem_doc_stats`).Scan(&docs); err != nil || docs != 3 {
		t.Fatalf("stats count %d documents before the repair (%v), want the 3 the triggers saw", docs, err)
	}
	if err := s.Reindex(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkDocStats(t, s, o)
	q, _ := fts.Parse("alpha charlie")
	got, _ := searchAll(t, s, "alpha charlie", storage.SearchQuery{}, 10)
	compareHits(t, "after the repair", got, o.rank(q, func(oDoc) bool { return true }, minTier))
}
