package fts

// Highlights returns the byte ranges [start, end) of text where q's Include terms occur, in
// text order, found as Snippet finds them (so a viewer can mark in a snippet exactly the
// words that made it match). Ranges may overlap when one word is a prefix of another's
// occurrence; there are at most a few thousand.
func Highlights(text string, q *Query) [][2]int {
	spans := findSpans(text, q)
	if len(spans) == 0 {
		return nil
	}
	out := make([][2]int, len(spans))
	for i, s := range spans {
		out[i] = [2]int{s.start, s.end}
	}
	return out
}
