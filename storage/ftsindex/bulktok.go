package ftsindex

import (
	"path"
	"slices"
	"strings"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// Tokenizing for IndexAll: each worker turns a group of docs into their distinct terms and
// counts, remembering the term of every distinct word it has seen (a word's term depends on
// the word alone), so that lower-casing and stemming run once per distinct word instead of
// once per occurrence.

// tokGroup is a run of consecutive batches, tokenized by a worker: for each doc (in batch
// order) its term count and its distinct terms with their counts (files included, count 1).
type tokGroup struct {
	batches []Batch
	docs    []tokDoc
	ents    []tokEnt
	arena   []byte // the terms of ents, one after the other
	done    chan struct{}
}

// tokDoc is one doc of a group: its entries end at ents[end-1], after the previous doc's.
type tokDoc struct {
	end int32
	n   uint32 // terms in its text (BM25's length; its files do not count)
}

// tokEnt is one distinct term of a doc: arena[off:off+len], tf times.
type tokEnt struct {
	off, len uint32
	tf       uint32
}

func (g *tokGroup) term(e tokEnt) []byte { return g.arena[e.off : e.off+e.len] }

// tokenizer is one worker's memory of words and terms. Its maps are cleared when they reach
// tokMaxWords, which bounds a worker's memory whatever the store holds.
type tokenizer struct {
	maxText int
	words   map[string]int32 // a word as the text spells it → its term (-1: none)
	ids     map[string]int32 // a term → its index in terms
	terms   []string
	tf      []uint32 // per term: its count in the current doc
	touched []int32  // the terms the current doc has
	buf     []byte
	roles   []string
}

const tokMaxWords = 1 << 16

func newTokenizer(maxText int) *tokenizer {
	return &tokenizer{maxText: maxText, words: map[string]int32{}, ids: map[string]int32{}}
}

// intern returns term's index, adding it.
func (tk *tokenizer) intern(term []byte) int32 {
	if id, ok := tk.ids[string(term)]; ok {
		return id
	}
	id := int32(len(tk.terms))
	t := string(term)
	tk.ids[t] = id
	tk.terms = append(tk.terms, t)
	tk.tf = append(tk.tf, 0)
	return id
}

// group tokenizes every doc of g.
func (tk *tokenizer) group(g *tokGroup) {
	if len(tk.words) >= tokMaxWords || len(tk.terms) >= tokMaxWords {
		clear(tk.words)
		clear(tk.ids)
		tk.terms, tk.tf = tk.terms[:0], tk.tf[:0]
	}
	n := 0
	for _, b := range g.batches {
		n += len(b.Docs)
	}
	g.docs = slices.Grow(g.docs[:0], n)
	for _, b := range g.batches {
		for i := range b.Docs {
			d := &b.Docs[i]
			g.docs = append(g.docs, tk.doc(g, *d))
			// What the segment keeps of the doc, without its text or the record its strings
			// point into (the caller's Docs hook cuts them from it), which the group would
			// otherwise hold until the segment takes it.
			d.Text, d.Files = "", nil
			d.EntryID, d.Role = strings.Clone(d.EntryID), tk.role(d.Role)
		}
	}
}

// role returns a copy of role shared by every doc of the worker (a handful of names).
func (tk *tokenizer) role(role string) string {
	for _, r := range tk.roles {
		if r == role {
			return r
		}
	}
	r := strings.Clone(role)
	if len(tk.roles) < 16 {
		tk.roles = append(tk.roles, r)
	}
	return r
}

// doc adds d's distinct terms to g (as fts.AppendTerms and the files' terms would give
// them) and returns its entry.
func (tk *tokenizer) doc(g *tokGroup, d fts.Doc) tokDoc {
	text := clipText(d.Text, tk.maxText)
	n := uint32(0)
	fts.ScanWords(text, func(start, end int) {
		w := text[start:end]
		id, ok := tk.words[w]
		if !ok {
			var t []byte
			if t, ok = fts.AppendTerm(tk.buf[:0], w); ok {
				tk.buf = t
				id = tk.intern(t)
			} else {
				id = -1
			}
			tk.words[strings.Clone(w)] = id
		}
		if id < 0 {
			return
		}
		n++
		if tk.terms[id] == "" {
			return // counted in the length, never a term (as AppendTerms' body splits)
		}
		if tk.tf[id] == 0 {
			tk.touched = append(tk.touched, id)
		}
		tk.tf[id]++
	})
	for _, f := range d.Files {
		id := tk.intern([]byte(fileTerm(path.Clean(f))))
		if tk.tf[id] == 0 {
			tk.touched = append(tk.touched, id)
		}
		tk.tf[id] = 1
	}
	for _, id := range tk.touched {
		t := tk.terms[id]
		g.ents = append(g.ents, tokEnt{off: uint32(len(g.arena)), len: uint32(len(t)), tf: tk.tf[id]})
		g.arena = append(g.arena, t...)
		tk.tf[id] = 0
	}
	tk.touched = tk.touched[:0]
	return tokDoc{end: int32(len(g.ents)), n: n}
}
