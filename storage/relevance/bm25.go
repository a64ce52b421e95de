package relevance

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
)

// BM25 parameters of the baseline.
const (
	BM25K1 = 1.2
	BM25B  = 0.75
)

// BM25 is the baseline retriever: plain Okapi BM25 over each message's own text (Message.Text),
// with words that are lower-cased runs of letters and digits, English stop words dropped, no
// stemming, no weight for neighbouring messages, and the query's words OR-ed. Document
// frequencies and the average length are taken over the whole fixture, as an index holding
// every project would; a working directory only filters the candidates.
//
// It is deliberately simple: it is the yardstick engines are measured against.
type BM25 struct {
	docs  []bm25Doc
	df    map[string]int // documents containing the term
	avgdl float64
}

type bm25Doc struct {
	id, workingDir string
	time           time.Time
	tf             map[string]int
	length         int
}

// NewBM25 indexes every message of the sessions.
func NewBM25(sessions []Session) *BM25 {
	b := &BM25{df: map[string]int{}}
	total := 0
	for _, s := range sessions {
		for _, m := range s.Messages {
			d := bm25Doc{id: m.ID, workingDir: s.WorkingDir, time: m.Time, tf: map[string]int{}}
			for _, w := range Words(m.Text()) {
				d.tf[w]++
				d.length++
			}
			for w := range d.tf {
				b.df[w]++
			}
			total += d.length
			b.docs = append(b.docs, d)
		}
	}
	if len(b.docs) > 0 {
		b.avgdl = float64(total) / float64(len(b.docs))
	}
	return b
}

// Hit is a message found by the baseline and its BM25 score.
type Hit struct {
	ID    string
	Score float64
}

// Search returns the ids of the best limit messages for query, best first (see Hits).
func (b *BM25) Search(query, workingDir string, limit int) []string {
	var out []string
	for _, h := range b.Hits(query, workingDir, limit) {
		out = append(out, h.ID)
	}
	return out
}

// Hits returns the best limit messages for query with their scores, best first, searching
// only the sessions of workingDir when it is not empty. A message matches when it holds at
// least one of the query's words (each distinct word counts once); equal scores go to the
// newer message first. A query made only of stop words finds nothing.
func (b *BM25) Hits(query, workingDir string, limit int) []Hit {
	terms := slices.Compact(slices.Sorted(slices.Values(Words(query))))
	type hit struct {
		score float64
		doc   *bm25Doc
	}
	var hits []hit
	n := float64(len(b.docs))
	for i := range b.docs {
		d := &b.docs[i]
		if workingDir != "" && d.workingDir != workingDir {
			continue
		}
		score := 0.0
		for _, t := range terms {
			f := float64(d.tf[t])
			if f == 0 {
				continue
			}
			df := float64(b.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			score += idf * f * (BM25K1 + 1) / (f + BM25K1*(1-BM25B+BM25B*float64(d.length)/b.avgdl))
		}
		if score > 0 {
			hits = append(hits, hit{score, d})
		}
	}
	slices.SortFunc(hits, func(x, y hit) int {
		if c := cmp.Compare(y.score, x.score); c != 0 {
			return c
		}
		if c := y.doc.time.Compare(x.doc.time); c != 0 {
			return c
		}
		return strings.Compare(x.doc.id, y.doc.id)
	})
	var out []Hit
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, Hit{h.doc.id, h.score})
	}
	return out
}

// Words returns the words of s the baseline indexes and searches: maximal runs of Unicode
// letters and digits, lower-cased, without the stop words.
func Words(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		w = strings.ToLower(w)
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// stopWords are English function words: articles, pronouns, auxiliary and modal verbs,
// prepositions, conjunctions, question words and the fragments contractions split into
// (didn't -> didn, t). They carry no topic, and a question asked in natural language is
// mostly made of them.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a an the this that these those
		i me my myself mine we us our ours ourselves you your yours yourself yourselves
		he him his himself she her hers herself it its itself they them their theirs themselves
		what which who whom whose when where why how
		am is are was were be been being have has had having do does did doing done
		will would shall should can could may might must ought
		and but or nor if then else so than too very not no only own same such both each
		few more most other some any all
		at by for from in into of off on onto out over under up down to with without about
		above below between through during before after again further once here there
		against among upon via
		just now also s t d ll m o re ve y
		don didn doesn isn wasn aren weren hasn haven hadn won wouldn shouldn couldn
		mustn needn shan mightn ain`) {
		m[w] = true
	}
	return m
}()
