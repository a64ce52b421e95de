package fts

import "math"

// Ranking parameters shared by every index (contract v3: BM25-like, with context from the
// neighbouring messages). Both stores use them, so their rankings differ only in detail
// (how each counts documents, and the phrases PostgreSQL finds past PGMaxPosition).
const (
	// K1 and B are BM25's term-frequency saturation and length normalisation, the values
	// most systems default to.
	K1 = 1.2
	B  = 0.75
	// ContextWeight is how much of the scores of the messages right before and after an
	// entry in its session is added to the entry's own: an answer given in a reply to the
	// question's topic ranks with that topic. See ContextScore.
	ContextWeight = 0.3
)

// IDF is BM25's inverse document frequency of a term found in df of n documents (always
// positive: ln(1 + (n - df + 0.5) / (df + 0.5))).
func IDF(n, df int) float64 {
	if df > n {
		n = df
	}
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// TermScore is one term's BM25 contribution: idf times the saturated frequency tf in a
// document of length dl (in terms), the average being avgdl.
func TermScore(idf float64, tf int, dl, avgdl float64) float64 {
	if tf <= 0 {
		return 0
	}
	if avgdl <= 0 {
		avgdl = 1
	}
	f := float64(tf)
	return idf * f * (K1 + 1) / (f + K1*(1-B+B*dl/avgdl))
}

// ContextScore is an entry's ranking score from its own BM25 score and those of the
// messages right before and after it in its session (0 when there is none or it does not
// match).
func ContextScore(own, prev, next float64) float64 {
	return own + ContextWeight*(prev+next)
}
