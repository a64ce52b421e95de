package redact

import (
	"slices"
	"strings"
	"testing"
)

// The prefilter as it was before its columns were merged (one column per byte value, states
// in the order they were built): the oracle the tests compare the prefilter with.

// bytePrefilter finds, in one pass over the text, which rules have a trigger literal in it, matching
// ASCII letters case-insensitively. It is an Aho-Corasick automaton compiled to a full DFA over
// bytes, so clean text costs one table lookup per byte and no allocation.
type bytePrefilter struct {
	next []uint16 // next[state<<8|byte]
	out  []uint64 // rules whose trigger ends in state (failure links folded in)
}

// newBytePrefilter lays out the automaton of the triggers with a column per byte value.
func newBytePrefilter(triggers [][]string) *bytePrefilter {
	nodes := byteAutomaton(triggers)
	p := &bytePrefilter{next: make([]uint16, len(nodes)<<8), out: make([]uint64, len(nodes))}
	for i := range nodes {
		p.out[i] = nodes[i].out
		for c := range 256 {
			p.next[i<<8|c] = uint16(nodes[i].child[lower(byte(c))])
		}
	}
	return p
}

// scan returns the set of rules whose trigger occurs in s.
func (p *bytePrefilter) scan(s string) uint64 {
	var mask uint64
	next, out := p.next, p.out
	st := uint16(0)
	for i := 0; i < len(s); i++ {
		st = next[int(st)<<8|int(s[i])]
		mask |= out[st]
	}
	return mask
}

// hits appends to buf every position in s where a trigger of a rule in mask ends.
func (p *bytePrefilter) hits(s string, mask uint64, buf []hit) []hit {
	next, out := p.next, p.out
	st := uint16(0)
	for i := 0; i < len(s); i++ {
		st = next[int(st)<<8|int(s[i])]
		if r := out[st] & mask; r != 0 {
			buf = append(buf, hit{end: i + 1, rules: r})
		}
	}
	return buf
}

// TestPrefilterMatchesByteTable: the compact table finds the rules and the hits the full byte
// table finds, on the corpus lines and random texts built around the triggers, with user
// patterns and without.
func TestPrefilterMatchesByteTable(t *testing.T) {
	r := mustNew(t)
	triggers := make([][]string, len(r.rules))
	for i, ru := range r.rules {
		triggers[i] = ru.triggers
	}
	old := newBytePrefilter(triggers)
	texts := append(corpusLinesOrNone(t), randomTriggerTexts(r, 20000)...)
	for i := range 256 {
		texts = append(texts, string([]byte{byte(i)}), strings.Repeat(string([]byte{byte(i)}), 9))
	}
	for _, s := range texts {
		mask, want := r.pre.scan(s), old.scan(s)
		if mask != want {
			t.Fatalf("%q: scan = %x, byte table %x", s, mask, want)
		}
		for _, m := range []uint64{want, ^uint64(0), want & (want - 1), 1 << 3} {
			if got, want := r.pre.hits(s, m, nil), old.hits(s, m, nil); !slices.Equal(got, want) {
				t.Fatalf("%q: hits(%x) = %v, byte table %v", s, m, got, want)
			}
		}
	}
}

// acNode is a state of the oracle's Aho-Corasick automaton: its transitions by lower-cased
// byte (after byteAutomaton, a full DFA's), its failure link and the rules whose trigger ends
// in it.
type acNode struct {
	child [256]int32
	fail  int32
	out   uint64
}

// byteAutomaton builds the DFA of the triggers over byte values, built apart from the
// prefilter's own (which works over its columns); state 0 is the start.
func byteAutomaton(triggers [][]string) []acNode {
	newNode := func() acNode {
		var n acNode
		for i := range n.child {
			n.child[i] = -1
		}
		return n
	}
	nodes := []acNode{newNode()}
	for rule, lits := range triggers {
		for _, lit := range lits {
			cur := int32(0)
			for i := 0; i < len(lit); i++ {
				c := lower(lit[i])
				if nodes[cur].child[c] < 0 {
					nodes = append(nodes, newNode())
					nodes[cur].child[c] = int32(len(nodes) - 1)
				}
				cur = nodes[cur].child[c]
			}
			nodes[cur].out |= 1 << uint(rule)
		}
	}
	// Breadth-first: fill failure links and turn missing edges into DFA transitions.
	queue := make([]int32, 0, len(nodes))
	for c := range 256 {
		if ch := nodes[0].child[c]; ch >= 0 {
			nodes[ch].fail = 0
			queue = append(queue, ch)
		} else {
			nodes[0].child[c] = 0
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		nodes[n].out |= nodes[nodes[n].fail].out
		for c := range 256 {
			ch := nodes[n].child[c]
			if ch >= 0 {
				nodes[ch].fail = nodes[nodes[n].fail].child[c]
				queue = append(queue, ch)
			} else {
				nodes[n].child[c] = nodes[nodes[n].fail].child[c]
			}
		}
	}
	return nodes
}
