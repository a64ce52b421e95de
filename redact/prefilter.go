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
//
// It is built over the table's columns, not over all 256 byte values: a state's transitions
// take 4 bytes per column (a few dozen) instead of 1 KB, and every process builds the table
// at its start.
func newPrefilter(triggers [][]string) *prefilter {
	p := &prefilter{}
	columns := p.setColumns(triggers)
	for 1<<p.shift < columns {
		p.shift++
	}
	a := automaton(triggers, &p.class, columns)
	n := len(a.out)
	// Number the states that end no trigger first (the start among them: no trigger is empty).
	order := make([]int32, n) // state → its number here
	num := int32(0)
	for pass := range 2 {
		for i := range n {
			if (a.out[i] != 0) == (pass == 1) {
				order[i] = num
				num++
			}
			if pass == 0 && i == n-1 {
				p.hitRow = uint16(num << p.shift)
			}
		}
	}
	if order[0] != 0 || n<<p.shift > 1<<16 {
		panic(fmt.Sprintf("redact: prefilter of %d states and %d columns does not fit its table", n, columns))
	}
	p.next = make([]uint16, n<<p.shift)
	p.out = make([]uint64, n)
	for i := range n {
		row := int(order[i]) << p.shift
		p.out[order[i]] = a.out[i]
		for col, to := range a.child[i*columns : (i+1)*columns] {
			p.next[row+col] = uint16(order[to] << p.shift)
		}
	}
	return p
}

// setColumns gives every byte its column and returns how many there are. Column 0 holds the
// bytes no trigger holds, which lead every state back to the start; a letter shares its
// column with its other case.
func (p *prefilter) setColumns(triggers [][]string) int {
	columns := 1
	for _, lits := range triggers {
		for _, lit := range lits {
			for i := 0; i < len(lit); i++ {
				if c := lower(lit[i]); p.class[c] == 0 {
					if columns == 256 {
						panic("redact: prefilter triggers hold more byte values than its table has columns")
					}
					p.class[c] = uint8(columns)
					columns++
				}
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		p.class[c] = p.class[c+'a'-'A']
	}
	return columns
}

// dfa is the Aho-Corasick automaton of the triggers as a full DFA over columns: state s goes
// to child[s*columns+col]; out[s] are the rules whose trigger ends in s (failure links folded
// in). State 0 is the start.
type dfa struct {
	child []int32
	out   []uint64
}

// automaton builds the DFA of the triggers over the columns class gives their bytes.
func automaton(triggers [][]string, class *[256]uint8, columns int) dfa {
	states := 1
	for _, lits := range triggers {
		for _, lit := range lits {
			states += len(lit)
		}
	}
	// At most one state per trigger byte: the tables are sized once.
	child := make([]int32, columns, states*columns)
	for c := range child {
		child[c] = -1
	}
	out := make([]uint64, 1, states)
	for rule, lits := range triggers {
		for _, lit := range lits {
			cur := int32(0)
			for i := 0; i < len(lit); i++ {
				at := int(cur)*columns + int(class[lit[i]])
				if child[at] < 0 {
					child[at] = int32(len(out))
					out = append(out, 0)
					for range columns {
						child = append(child, -1)
					}
				}
				cur = child[at]
			}
			out[cur] |= 1 << uint(rule)
		}
	}
	// Breadth-first: fill failure links and turn missing edges into DFA transitions.
	fail := make([]int32, len(out))
	queue := make([]int32, 0, len(out))
	for c := range columns {
		if ch := child[c]; ch >= 0 {
			queue = append(queue, ch) // fail[ch] = 0
		} else {
			child[c] = 0
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		out[n] |= out[fail[n]]
		row, frow := int(n)*columns, int(fail[n])*columns
		for c := range columns {
			if ch := child[row+c]; ch >= 0 {
				fail[ch] = child[frow+c]
				queue = append(queue, ch)
			} else {
				child[row+c] = child[frow+c]
			}
		}
	}
	return dfa{child: child, out: out}
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
