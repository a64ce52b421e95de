package jsonscan

import "bytes"

// Deeper reports whether the JSON text b nests objects and arrays more than limit levels deep
// (a top-level object or array is level 1; brackets inside strings do not count). It never
// recurses, so it can guard the recursive readers (gjson's validator, encoding/json's
// decoder) against text nested too deep for them, and it reads any input: on text that is not
// JSON its answer means nothing, but it returns.
//
// A text with no more opening brackets than limit cannot nest deeper, which two counts tell
// (vectorized by package bytes): the byte-by-byte walk runs only on texts that have more.
func Deeper(b []byte, limit int) bool {
	if bytes.Count(b, []byte{'{'})+bytes.Count(b, []byte{'['}) <= limit {
		return false
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			if depth++; depth > limit {
				return true
			}
		case '}', ']':
			depth--
		case '"':
			i = stringEnd(b, i+1)
		}
	}
	return false
}

// stringEnd returns the index of the quote that closes the string whose text starts at i (or
// len(b) when none does): the first quote not escaped by an odd run of backslashes.
func stringEnd(b []byte, i int) int {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		q := i + j
		k := q
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q
		}
		i = q + 1
	}
}
