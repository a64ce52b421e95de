package ftsindex

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// synthText is deterministic text with what tokenizing must get right: English words in
// several forms (one stem), identifiers, numbers, case, non-ASCII words, Han characters
// (a term each), apostrophes, and words too long to index.
func synthText(rng *rand.Rand, words int) string {
	vocab := []string{"fix", "fixes", "fixed", "Fixing", "migration", "migrate", "parseConfig", "parse_config",
		"v2", "the", "a", "of", "error", "Errors", "ERROR", "café", "naïve", "Über", "日本語", "テスト", "don't",
		"'quoted'", "x", "ok", "README", "login.go", "/home/dev/internal/auth/login.go", "42", "3.14",
		"travelled", "skies", "generously", "ticket-" + fmt.Sprint(rng.IntN(1000)), strings.Repeat("z", 130),
		strings.Repeat("ab", 64), "résumé", "ﬁle"}
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteString([]string{" ", "\n", ", ", "(", ") ", "; "}[rng.IntN(6)])
		}
		if rng.IntN(5) == 0 {
			fmt.Fprintf(&b, "w%d", rng.IntN(5000))
			continue
		}
		b.WriteString(vocab[rng.IntN(len(vocab))])
	}
	return b.String()
}

// synthBatches makes sessions of per docs each, in batches of at most chunk docs.
func synthBatches(seed uint64, sessions, per, chunk int) []Batch {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []Batch
	roles := []string{"user", "assistant", "tool_result"}
	for k := range sessions {
		id := fmt.Sprintf("bulk%03d", k)
		s := sess(id)
		for from := 1; from <= per; from += chunk {
			b := Batch{Session: s, From: uint64(from), Through: uint64(min(from+chunk-1, per))}
			for seq := b.From; seq <= b.Through; seq++ {
				if rng.IntN(10) == 0 {
					continue // a record without a doc (a label)
				}
				var files []string
				for range rng.IntN(3) {
					files = append(files, fmt.Sprintf("/w/%s/f%d.go", id, rng.IntN(4)))
				}
				d := doc(id, seq, roles[rng.IntN(len(roles))], synthText(rng, 5+rng.IntN(300)), files...)
				if rng.IntN(20) == 0 {
					d.Kind = fts.KindSummary
				}
				b.Docs = append(b.Docs, d)
			}
			out = append(out, b)
		}
	}
	return out
}

func seqOf(bs []Batch) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		for _, b := range bs {
			if !yield(b, nil) {
				return
			}
		}
	}
}

// TestTokenizerMatchesAppendTerms: IndexAll's tokenizer gives every doc the terms, counts
// and length that Index gives it (fts.AppendTerms and the files' terms), its caches warm or
// cleared.
func TestTokenizerMatchesAppendTerms(t *testing.T) {
	bs := synthBatches(1, 3, 200, 64)
	tk := newTokenizer(1 << 20)
	for _, b := range bs {
		docs := slices.Clone(b.Docs)
		g := &tokGroup{batches: []Batch{b}}
		tk.group(g)
		prev := int32(0)
		for i, d := range docs {
			if g.batches[0].Docs[i].Text != "" {
				t.Fatal("the group keeps the doc's text")
			}
			body, n := fts.AppendTerms(nil, d.Text)
			want := map[string]uint32{}
			for _, term := range strings.Split(string(body), " ") {
				if term != "" {
					want[term]++
				}
			}
			for _, f := range d.Files {
				want[fileTerm(path.Clean(f))] = 1
			}
			got := map[string]uint32{}
			for _, e := range g.ents[prev:g.docs[i].end] {
				if _, dup := got[string(g.term(e))]; dup {
					t.Fatalf("doc %d: term %q twice", d.Seq, g.term(e))
				}
				got[string(g.term(e))] = e.tf
			}
			prev = g.docs[i].end
			if int(g.docs[i].n) != n || !maps.Equal(got, want) {
				t.Fatalf("doc %d (%q): length %d, want %d; terms %v, want %v", d.Seq, d.Text, g.docs[i].n, n, got, want)
			}
		}
		if len(tk.words) > 100 {
			clear(tk.words) // and once more from cold caches
			clear(tk.ids)
			tk.terms, tk.tf = tk.terms[:0], tk.tf[:0]
		}
	}
}

// indexDump is an index's content in terms that do not depend on how it is cut into
// segments: every doc's attributes and every term's postings by doc id, the sessions' rows
// and the counters.
type indexDump struct {
	docs     map[int64]string
	postings map[string][]string
	sessions []string
	counters map[string]int64
	segments int
}

func dumpIndex(t *testing.T, ix *Index) indexDump {
	t.Helper()
	ctx := context.Background()
	db, release, err := ix.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	d := indexDump{docs: map[int64]string{}, postings: map[string][]string{}, counters: map[string]int64{}}
	sids := map[int64]string{}
	rows, err := db.r.QueryContext(ctx, `SELECT id, sid, created, working_dir, name, through, coalesce(gaps, x''), ndocs, nterms FROM sessions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, created, through, ndocs, nterms int64
		var sid, dir, name string
		var gaps []byte
		if err := rows.Scan(&id, &sid, &created, &dir, &name, &through, &gaps, &ndocs, &nterms); err != nil {
			t.Fatal(err)
		}
		sids[id] = sid
		d.sessions = append(d.sessions, fmt.Sprint(sid, created, dir, name, through, decodeSeqs(gaps), ndocs, nterms))
	}
	rows.Close()
	rows, err = db.r.QueryContext(ctx, `SELECT k, v FROM counters`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var v int64
		rows.Scan(&k, &v)
		if k != "sessions" { // a generation: how often the rows changed, not what they are
			d.counters[k] = v
		}
	}
	rows.Close()
	segs, err := listSegments(ctx, db.r)
	if err != nil {
		t.Fatal(err)
	}
	d.segments = len(segs)
	for _, m := range segs {
		docs, packed, err := readSegment(ctx, db.r, m.id)
		if err != nil {
			t.Fatal(err)
		}
		for o := range docs.len() {
			if _, ok := sids[docs.sess[o]]; !ok {
				continue // dead (its session is gone) until a merge drops it
			}
			d.docs[docs.ids[o]] = fmt.Sprint(sids[docs.sess[o]], docs.seqs[o], docs.times[o], docs.kinds[o],
				docs.roleNames[docs.roles[o]], docs.lens[o], docs.entry(o))
		}
		it, err := termSource{ctx: ctx, q: db.r, seg: m.id, packed: packed}.iter("", "")
		if err != nil {
			t.Fatal(err)
		}
		for {
			ok, err := it.next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			ps, err := decodePostings(it.data(), docs.len())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if _, ok := sids[docs.sess[p.ord]]; !ok {
					continue
				}
				d.postings[it.term()] = append(d.postings[it.term()], fmt.Sprintf("%d:%d", docs.ids[p.ord], p.tf))
			}
		}
		it.close()
	}
	return d
}

func compareDumps(t *testing.T, got, want indexDump) {
	t.Helper()
	if !reflect.DeepEqual(got.sessions, want.sessions) {
		t.Fatalf("sessions:\n%v\nwant\n%v", got.sessions, want.sessions)
	}
	if !maps.Equal(got.counters, want.counters) {
		t.Fatalf("counters %v, want %v", got.counters, want.counters)
	}
	if !maps.Equal(got.docs, want.docs) {
		for id, w := range want.docs {
			if got.docs[id] != w {
				t.Fatalf("doc %d: %q, want %q (%d docs, want %d)", id, got.docs[id], w, len(got.docs), len(want.docs))
			}
		}
		t.Fatalf("%d docs, want %d", len(got.docs), len(want.docs))
	}
	if !maps.EqualFunc(got.postings, want.postings, slices.Equal) {
		for term, w := range want.postings {
			if !slices.Equal(got.postings[term], w) {
				t.Fatalf("term %q: %v, want %v", term, got.postings[term], w)
			}
		}
		t.Fatalf("%d terms, want %d", len(got.postings), len(want.postings))
	}
}

// TestIndexAllSameAsIndex: IndexAll builds the index that Index calls of the same batches,
// one after the other, build: the same doc ids, attributes, postings, sessions and counters,
// whether it writes one segment or many (a small budget), and whatever Index had indexed
// before (docs indexed already are left out; a deleted session's batches are ignored).
func TestIndexAllSameAsIndex(t *testing.T) {
	all := synthBatches(2, 12, 150, 40)
	for _, tc := range []struct {
		name   string
		budget int
		before int // batches Index indexes first, in both
		delete bool
	}{
		{name: "one segment"},
		{name: "many segments", budget: 64 << 10},
		{name: "after Index", budget: 64 << 10, before: 7},
		{name: "deleted session", before: 3, delete: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, got := openTest(t, ""), openTest(t, "")
			for _, ix := range []*Index{want, got} {
				for _, b := range all[:tc.before] {
					if _, err := ix.Index(t.Context(), b); err != nil {
						t.Fatal(err)
					}
				}
				if tc.delete {
					if err := ix.DeleteSession(t.Context(), all[0].Session.ID, all[0].Session.Created); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The stream starts over from the first batch: what is indexed already repeats.
			for _, b := range all {
				if _, err := want.Index(t.Context(), b); err != nil {
					t.Fatal(err)
				}
			}
			var last int
			if err := got.IndexAll(t.Context(), seqOf(all), BulkOptions{Progress: func(d int) { last = d }, MaxBytes: tc.budget}); err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, b := range all {
				total += len(b.Docs)
			}
			if last != total {
				t.Fatalf("progress ended at %d, want %d", last, total)
			}
			g, w := dumpIndex(t, got), dumpIndex(t, want)
			compareDumps(t, g, w)
			t.Logf("%d docs, %d terms; IndexAll wrote %d segments, Index %d", len(g.docs), len(g.postings), g.segments, w.segments)
			if err := got.Verify(t.Context()); err != nil {
				t.Fatal(err)
			}
			// And they answer alike (once merges dropped the deleted session's docs, which
			// count in a word's rarity until then).
			if tc.delete {
				for _, ix := range []*Index{want, got} {
					if err := ix.Optimize(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, q := range []string{"fix", "migration error", `"parse config"`, "w12*", "日本語", "café -fix", "ticket"} {
				a, b := search(t, got, Query{Match: mustParse(t, q)}), search(t, want, Query{Match: mustParse(t, q)})
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("%s: %v, want %v", q, a, b)
				}
			}
		})
	}
}
