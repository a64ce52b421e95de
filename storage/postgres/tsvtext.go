package postgres

import (
	"errors"
	"fmt"
)

// Reading a tsvector's text output in Go: the documents' lengths (docslen.go) and the
// lexemes a search scores (search_score.go).

// tsvBuf is walkTSVector's memory, reused from call to call.
type tsvBuf struct {
	lex []byte
	pos []int32
}

// walkTSVector calls fn with each lexeme of a tsvector's text output ('a':1,3A 'b':2) and
// its positions, weights dropped (both valid during the call only). Lexemes are quoted,
// with ' and \ doubled.
func walkTSVector(s []byte, buf *tsvBuf, fn func(lex []byte, pos []int32)) error {
	pos := buf.pos[:0]
	defer func() { buf.pos = pos[:0] }()
	bad := func(what string, i int) error { return fmt.Errorf("tsvector text %.40q: %s at %d", s, what, i) }
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		if s[i] != '\'' {
			return bad("expected a quote", i)
		}
		i++
		start, escaped, closed := i, false, false
		for i < len(s) {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					escaped = true
					i += 2
					continue
				}
				closed = true
				break
			}
			if s[i] == '\\' {
				escaped = true
				i++
			}
			i++
		}
		if !closed {
			return bad("unterminated lexeme", start)
		}
		lex := s[start:i]
		i++
		if escaped {
			b := buf.lex[:0]
			for j := 0; j < len(lex); j++ {
				if lex[j] == '\\' || lex[j] == '\'' {
					j++
				}
				if j < len(lex) {
					b = append(b, lex[j])
				}
			}
			buf.lex, lex = b, b
		}
		pos = pos[:0]
		if i < len(s) && s[i] == ':' {
			for i++; ; i++ {
				j := i
				for j < len(s) && '0' <= s[j] && s[j] <= '9' {
					j++
				}
				p, err := parseInt(s[i:j])
				if err != nil || j == i {
					return bad("bad position", i)
				}
				pos = append(pos, int32(p))
				i = j
				if i < len(s) && 'A' <= s[i] && s[i] <= 'D' {
					i++
				}
				if i >= len(s) || s[i] != ',' {
					break
				}
			}
		}
		fn(lex, pos)
	}
	return nil
}

// parseInt reads a decimal integer (the text of a bigint column).
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 19 {
		return 0, errors.New("not an integer")
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, errors.New("not an integer")
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("not an integer")
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// tsvectorLength is the number of terms of the text a tsvector was built from, as far as its
// text output's positions tell: the largest position. It is exact unless the text had more
// than fts.PGMaxPosition terms, or its last term repeats a word that already had
// fts.PGMaxPositions positions.
func tsvectorLength(vec []byte, buf *tsvBuf) (int, error) {
	n := int32(0)
	err := walkTSVector(vec, buf, func(_ []byte, pos []int32) {
		if k := len(pos); k > 0 {
			n = max(n, pos[k-1])
		}
	})
	return int(n), err
}
