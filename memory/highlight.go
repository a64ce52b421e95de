package memory

import "github.com/sessionmem/sessionmem/storage/fts"

// Highlights returns the byte ranges [start, end) of text (a match's snippet, say) where the
// words of a session_search query occur, as the search itself finds them, in text order; nil
// when the query does not parse or nothing occurs.
func Highlights(query, text string) [][2]int {
	if query == "" {
		return nil
	}
	q, err := fts.Parse(query)
	if err != nil {
		return nil
	}
	return fts.Highlights(text, q)
}
