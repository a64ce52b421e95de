package redact

import "fmt"

// prefilter finds, in one pass over the text, which rules have a trigger literal in it, matching
// ASCII letters case-insensitively. It is an Aho-Corasick automaton compiled to a full DFA, so
// clean text costs one table lookup per byte and no allocation.
//
// The table is kept small so that the states text visits stay in the first-level cache (a
// full table of 256 columns per state, 228 KB, did not, and the scan ran at about 2.7 ns a
// byte): bytes that no trigger holds share one column, and a letter shares its column with its
// other case, so a state's row holds a few dozen columns. The states that end a trigger are
// numbered last, so that the scan tells them by comparing, without a second lookup per byte.
type prefilter struct {
	class [256]uint8 // a byte's column
	shift uint       // a row holds 1<<shift columns
	// next[row+class[c]] is the row of the state after reading c in the state of row (a row
	// is a state's number << shift).
	next []uint16
	// hitRow is the first row of a state that ends a trigger; out[row>>shift] are the rules
	// whose trigger ends there (failure links folded in).
	hitRow uint16
	out    []uint64
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// newPrefilter builds the automaton; triggers[i] are the literals of rule i (i < 64).
func newPrefilter(triggers [][]string) *prefilter {
	return compile(automaton(triggers), triggers)
}

// acNode is a state of the Aho-Corasick automaton: its transitions by lower-cased byte (after
// automaton, a full DFA's), its failure link and the rules whose trigger ends in it.
type acNode struct {
	child [256]int32
	fail  int32
	out   uint64
}

// automaton builds the DFA of the triggers; state 0 is the start.
func automaton(triggers [][]string) []acNode {
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

// compile lays out the automaton of the triggers as a prefilter's table.
func compile(nodes []acNode, triggers [][]string) *prefilter {
	n := len(nodes)
	p := &prefilter{}
	columns := 1 // column 0: the bytes no trigger holds, which lead every state back to the start
	for _, lits := range triggers {
		for _, lit := range lits {
			for i := 0; i < len(lit); i++ {
				if c := lower(lit[i]); p.class[c] == 0 {
					p.class[c] = uint8(columns)
					columns++
				}
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		p.class[c] = p.class[c+'a'-'A']
	}
	for 1<<p.shift < columns {
		p.shift++
	}
	// Number the states that end no trigger first (the start among them: no trigger is empty).
	order := make([]int32, n) // state → its number here
	num := int32(0)
	for pass := range 2 {
		for i := range n {
			if (nodes[i].out != 0) == (pass == 1) {
				order[i] = num
				num++
			}
			if pass == 0 && i == n-1 {
				p.hitRow = uint16(num << p.shift)
			}
		}
	}
	if order[0] != 0 || columns > 256 || n<<p.shift > 1<<16 {
		panic(fmt.Sprintf("redact: prefilter of %d states and %d columns does not fit its table", n, columns))
	}
	p.next = make([]uint16, n<<p.shift)
	p.out = make([]uint64, n)
	for i := range n {
		child := &nodes[i].child
		row := int(order[i]) << p.shift
		p.out[order[i]] = nodes[i].out
		to := func(c int) uint16 { return uint16(order[child[lower(byte(c))]] << p.shift) }
		for c := range 256 {
			p.next[row+int(p.class[c])] = to(c)
		}
		for c := range 256 { // the bytes of a column must lead where the column leads
			if p.next[row+int(p.class[c])] != to(c) {
				panic("redact: bytes of one prefilter column lead to different states")
			}
		}
	}
	return p
}

// hit is a place where a trigger ends (exclusive byte offset) and the rules it belongs to.
type hit struct {
	end   int
	rules uint64
}

// hits appends to buf every position in s where a trigger of a rule in mask ends.
func (p *prefilter) hits(s string, mask uint64, buf []hit) []hit {
	next, class, hitRow := p.next, &p.class, p.hitRow
	row := uint16(0)
	for i := 0; i < len(s); i++ {
		row = next[int(row)+int(class[s[i]])]
		if row >= hitRow {
			if r := p.out[row>>p.shift] & mask; r != 0 {
				buf = append(buf, hit{end: i + 1, rules: r})
			}
		}
	}
	return buf
}

// scanHits returns the set of rules whose trigger occurs in s and hits(s, that set, buf), in
// one pass: String needs both whenever a trigger occurs, and a second pass over the text cost
// a third of the first. Clean text costs one lookup per byte and leaves buf as it is. (The
// tests' scan is the first half on its own.)
func (p *prefilter) scanHits(s string, buf []hit) (uint64, []hit) {
	var mask uint64
	next, class, hitRow := p.next, &p.class, p.hitRow
	row := uint16(0)
	for i := 0; i < len(s); i++ {
		row = next[int(row)+int(class[s[i]])]
		if row >= hitRow {
			// mask holds r from here on, so every hit of a rule in the final mask is kept,
			// with the rules hits would give it.
			r := p.out[row>>p.shift]
			mask |= r
			buf = append(buf, hit{end: i + 1, rules: r})
		}
	}
	return mask, buf
}
