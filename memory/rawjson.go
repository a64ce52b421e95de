package memory

import "bytes"

// objectMember returns the raw value of the top-level member key of obj, a JSON object as the
// store holds it (valid JSON, written by this package), without decoding anything. A resume
// page takes each stored message out of its record this way: gjson's lookup scans the message
// byte by byte to find where it ends, a fifth of a full resume's CPU; here strings, most of a
// message, are skipped with bytes.IndexByte. It reports false for anything it does not
// understand (the caller then decodes the record the general way).
func objectMember(obj []byte, key string) ([]byte, bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return nil, false
		}
		end := stringEnd(obj, i)
		if end < 0 {
			return nil, false
		}
		// Keys written by this package have nothing to escape, so a key holding a backslash
		// is never the one sought.
		match := string(obj[i+1:end-1]) == key
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		i = skipSpace(obj, i+1)
		vend := valueEnd(obj, i)
		if vend < 0 {
			return nil, false
		}
		if match {
			return obj[i:vend], true
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return nil, false
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string that starts at b[i] (a quote), or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		// The quote ends the string unless an odd number of backslashes escapes it.
		bs := 0
		for k := j - 1; k > i && b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return j + 1
		}
		j++
	}
	return -1
}

// valueEnd returns the index just past the JSON value that starts at b[i], or -1. It assumes
// valid JSON: it finds the end, it does not check what lies before it.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = stringEnd(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	// A number, true, false or null.
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
