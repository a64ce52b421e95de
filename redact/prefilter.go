package redact

// prefilter finds, in one pass over the text, which rules have a trigger literal in it, matching
// ASCII letters case-insensitively. It is an Aho-Corasick automaton compiled to a full DFA over
// bytes, so clean text costs one table lookup per byte and no allocation.
type prefilter struct {
	next []uint16 // next[state<<8|byte]
	out  []uint64 // rules whose trigger ends in state (failure links folded in)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// newPrefilter builds the automaton; triggers[i] are the literals of rule i (i < 64).
func newPrefilter(triggers [][]string) *prefilter {
	type node struct {
		child [256]int32
		fail  int32
		out   uint64
	}
	newNode := func() node {
		var n node
		for i := range n.child {
			n.child[i] = -1
		}
		return n
	}
	nodes := []node{newNode()}
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
	p := &prefilter{next: make([]uint16, len(nodes)<<8), out: make([]uint64, len(nodes))}
	for i := range nodes {
		p.out[i] = nodes[i].out
		for c := range 256 {
			p.next[i<<8|c] = uint16(nodes[i].child[lower(byte(c))])
		}
	}
	return p
}

// scan returns the set of rules whose trigger occurs in s.
func (p *prefilter) scan(s string) uint64 {
	var mask uint64
	next, out := p.next, p.out
	st := uint16(0)
	for i := 0; i < len(s); i++ {
		st = next[int(st)<<8|int(s[i])]
		mask |= out[st]
	}
	return mask
}

// hit is a place where a trigger ends (exclusive byte offset) and the rules it belongs to.
type hit struct {
	end   int
	rules uint64
}

// hits appends to buf every position in s where a trigger of a rule in mask ends.
func (p *prefilter) hits(s string, mask uint64, buf []hit) []hit {
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

// scanHits is scan and hits(s, scan(s), buf) in one pass: String needs both whenever a trigger
// occurs, and the second pass over the text cost a third of the first. Clean text costs what
// scan costs and leaves buf as it is.
func (p *prefilter) scanHits(s string, buf []hit) (uint64, []hit) {
	var mask uint64
	next, out := p.next, p.out
	st := uint16(0)
	for i := 0; i < len(s); i++ {
		st = next[int(st)<<8|int(s[i])]
		if r := out[st]; r != 0 {
			// mask holds r from here on, so every hit of a rule in the final mask is kept,
			// with the rules hits would give it.
			mask |= r
			buf = append(buf, hit{end: i + 1, rules: r})
		}
	}
	return mask, buf
}
