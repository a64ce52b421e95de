package fts

// AppendStem is a stand-in until the Porter2 stemmer lands: it appends word unchanged.
func AppendStem(dst, word []byte) []byte { return append(dst, word...) }

// Stem returns the stem of word (stand-in).
func Stem(word string) string { return string(AppendStem(nil, []byte(word))) }
