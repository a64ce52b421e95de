package fts

// stopWords are English function words: words that say how a question is asked rather than
// what it is about (the, did, when, what, we). A query word among them does not make an entry
// a match by itself (contract v3); a query made only of them still searches them. Forms are
// lower-case and unstemmed, as a query writes them.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range []string{
		// articles, determiners, quantifiers
		"a", "an", "the", "this", "that", "these", "those", "some", "any", "each", "every",
		"all", "both", "either", "neither", "such", "other", "another", "much", "many",
		"more", "most", "few", "own", "same", "no", "not", "nor", "only", "very",
		// pronouns
		"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves", "you",
		"your", "yours", "yourself", "yourselves", "he", "him", "his", "himself", "she",
		"her", "hers", "herself", "it", "its", "itself", "they", "them", "their", "theirs",
		"themselves", "one", "ones", "someone", "something", "anything", "everything",
		// question words
		"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "whether",
		// auxiliaries and modals
		"am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had",
		"having", "do", "does", "did", "doing", "done", "can", "could", "shall", "should",
		"will", "would", "may", "might", "must", "ought", "get", "got",
		// contractions' parts (the tokenizer splits at the apostrophe)
		"s", "t", "d", "ll", "m", "re", "ve", "don", "didn", "doesn", "isn", "aren", "wasn",
		"weren", "won", "wouldn", "couldn", "shouldn", "hasn", "haven", "hadn", "can't",
		// prepositions and conjunctions
		"of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "onto", "about",
		"above", "below", "over", "under", "again", "against", "between", "through",
		"during", "before", "after", "up", "down", "out", "off", "upon", "within",
		"without", "along", "across", "behind", "beyond", "toward", "towards", "via",
		"and", "or", "but", "if", "then", "else", "than", "so", "because", "as", "until",
		"while", "although", "though", "unless", "since", "also", "too", "just",
		// adverbs that only frame a question
		"there", "here", "now", "ever", "once", "still", "yet", "already", "again", "even",
		"ago", "else", "instead", "really", "actually", "please", "like",
	} {
		m[w] = true
	}
	return m
}()

// IsStopWord reports whether word (lower-case, as written) is a function word.
func IsStopWord(word string) bool { return stopWords[word] }
