package fts

// This file is the English stemmer: the Snowball project's "english" algorithm (Porter2), as
// published at https://snowballstem.org/algorithms/english/stemmer.html (revision of Snowball
// 3.1, which adds R1 exceptions such as past, univers and inter to the original gener, commun
// and arsen). It is written from that description; comments name the description's steps so
// the two can be read side by side.
//
// The word is stemmed in place: every step only shortens it or rewrites letters within its
// length (a suffix that gains a letter, like hop -> hope, first lost two or three), so the
// bytes the caller's buffer already holds are all the room it needs.

// AppendStem appends the Porter2 stem of word to dst and returns the extended buffer, so that
// fix, fixes, fixed and fixing all append fix, and travel, travelled and traveling append
// travel. It allocates nothing beyond growing dst.
//
// word is expected to be a lower-case ASCII English word: letters a-z and apostrophes (which
// Porter2 treats as letters, removing a leading one and a trailing ', 's or 's'). Anything
// else is appended unchanged: a word with a digit, '_', an upper-case or non-ASCII letter
// (identifiers, hashes, other languages) is not English and stemming it would only merge
// unrelated terms. Words of one or two letters are unchanged, as the algorithm says.
//
// A stem is a search key, not a word: migrate and migration both stem to migrat. Porter2 is
// not idempotent (parse stems to pars, pars to par), so an index must stem the text and the
// query words exactly once each, with this same function.
func AppendStem(dst, word []byte) []byte {
	start := len(dst)
	dst = append(dst, word...)
	if !porterStemmable(word) {
		return dst
	}
	return dst[:start+porterStem(dst[start:])]
}

// Stem returns the Porter2 stem of word, under the rules of AppendStem. It allocates only when
// the stem differs from word and then only the returned string (words longer than
// MaxTermBytes, which the tokenizer never yields, also cost a working buffer).
func Stem(word string) string {
	if !porterStemmable(word) {
		return word
	}
	var buf [MaxTermBytes]byte
	var b []byte
	if len(word) <= len(buf) {
		b = buf[:len(word)]
	} else {
		b = make([]byte, len(word))
	}
	copy(b, word)
	n := porterStem(b)
	if n == len(word) && string(b) == word {
		return word
	}
	return string(b[:n])
}

// porterStemmable reports whether word is something Porter2 should touch: at least three
// bytes (shorter words are left alone by the algorithm) of a-z and apostrophes.
func porterStemmable[S string | []byte](word S) bool {
	if len(word) < 3 {
		return false
	}
	for i := 0; i < len(word); i++ {
		if c := word[i]; c-'a' >= 26 && c != '\'' {
			return false
		}
	}
	return true
}

// porterStem stems the word in b (lower-case letters and apostrophes, at least three) in
// place and returns the stem's length.
func porterStem(b []byte) int {
	if n, ok := porterException(b); ok {
		return n
	}
	if b[0] == '\'' {
		copy(b, b[1:])
		b = b[:len(b)-1]
	}
	marked := porterMarkY(b)
	w := porterWord{b: b, n: len(b)}
	w.regions()
	w.step1a()
	w.step1b()
	w.step1c()
	w.step2()
	w.step3()
	w.step4()
	w.step5()
	if marked {
		for i := range w.n {
			if b[i] == 'Y' {
				b[i] = 'y'
			}
		}
	}
	return w.n
}

// porterException handles the whole words the algorithm lists as special forms: it rewrites
// b and returns the stem's length, or reports false for any other word.
func porterException(b []byte) (int, bool) {
	var to string
	switch string(b) {
	case "skis":
		to = "ski"
	case "skies":
		to = "sky"
	case "idly":
		to = "idl"
	case "gently":
		to = "gentl"
	case "ugly":
		to = "ugli"
	case "early":
		to = "earli"
	case "only":
		to = "onli"
	case "singly":
		to = "singl"
	case "sky", "news", "howe", "atlas", "cosmos", "bias", "andes":
		return len(b), true
	default:
		return 0, false
	}
	return copy(b, to), true
}

// porterMarkY turns an initial y, and a y after a vowel, into Y, which the steps treat as a
// consonant (so the y of say or yell is not a vowel); stem turns Y back afterwards. It
// reports whether it marked any.
func porterMarkY(b []byte) bool {
	marked := false
	if b[0] == 'y' {
		b[0] = 'Y'
		marked = true
	}
	for i := 1; i < len(b); i++ {
		if b[i] == 'y' && porterVowel(b[i-1]) {
			b[i] = 'Y'
			marked = true
		}
	}
	return marked
}

// porterVowel reports whether c is one of Porter2's vowels: a e i o u y (a marked Y and an
// apostrophe are not).
func porterVowel(c byte) bool {
	return porterVowels[c]
}

// porterVowels is porterVowel as a table, which the regions and the steps consult for most
// letters of every word.
var porterVowels = [256]bool{'a': true, 'e': true, 'i': true, 'o': true, 'u': true, 'y': true}

// porterHasVowel reports whether b contains a vowel.
func porterHasVowel(b []byte) bool {
	for _, c := range b {
		if porterVowel(c) {
			return true
		}
	}
	return false
}

// porterWord is a word being stemmed: b[:n] is its current form, p1 and p2 the starts of its
// regions R1 and R2 (fixed before the steps start, as the algorithm defines them on the
// whole word).
type porterWord struct {
	b      []byte
	n      int
	p1, p2 int
}

// porterR1Prefixes are the beginnings after which R1 starts regardless of the usual rule, so that
// generate, general, generic and generous keep apart, as do past and paste, organ and
// organize, and so on. They are indexed by their first letter, which no two share.
var porterR1Prefixes = [26]string{
	'a' - 'a': "arsen", 'c' - 'a': "commun", 'e' - 'a': "emerg", 'g' - 'a': "gener",
	'i' - 'a': "inter", 'l' - 'a': "later", 'o' - 'a': "organ", 'p' - 'a': "past",
	'u' - 'a': "univers",
}

// regions sets p1 and p2. R1 is the region after the first non-vowel that follows a vowel
// (or after one of porterR1Prefixes), R2 the same rule applied again within R1; either is
// empty (its start is the word's length) when there is no such non-vowel.
func (w *porterWord) regions() {
	b := w.b[:w.n]
	w.p1 = -1
	if c := b[0] - 'a'; c < 26 {
		if p := porterR1Prefixes[c]; p != "" && len(b) >= len(p) && string(b[:len(p)]) == p {
			w.p1 = len(p)
		}
	}
	if w.p1 < 0 {
		w.p1 = porterAfterVowelConsonant(b, 0)
	}
	w.p2 = porterAfterVowelConsonant(b, w.p1)
}

// porterAfterVowelConsonant returns the position after the first non-vowel that follows a vowel in
// b[from:], or len(b) when there is none.
func porterAfterVowelConsonant(b []byte, from int) int {
	i := from
	for i < len(b) && !porterVowel(b[i]) {
		i++
	}
	for i < len(b) && porterVowel(b[i]) {
		i++
	}
	if i < len(b) {
		return i + 1
	}
	return len(b)
}

// ends reports whether the current word ends with s.
func (w *porterWord) ends(s string) bool {
	if len(s) > w.n {
		return false
	}
	// Compared from the end by hand: most candidates differ in their last letters, and
	// suffixes are too short for a call to memequal to pay.
	b := w.b[w.n-len(s) : w.n]
	for i := len(s) - 1; i >= 0; i-- {
		if b[i] != s[i] {
			return false
		}
	}
	return true
}

// replace replaces the last k bytes of the word with s (never longer than what the word had
// before, see the file comment).
func (w *porterWord) replace(k int, s string) {
	w.n -= k
	w.n += copy(w.b[w.n:], s)
}

// at returns the byte i places before the end of the word (at(1) is the last one), or 0 when
// the word is shorter than that.
func (w *porterWord) at(i int) byte {
	if i > w.n {
		return 0
	}
	return w.b[w.n-i]
}

// porterShortSyllable reports whether b[:n] ends with a short syllable: a non-vowel, a vowel
// and a non-vowel other than w, x or Y; or the whole of it is a vowel and a non-vowel; or it
// ends with past (so pasted and pasting regain their e).
func porterShortSyllable(b []byte, n int) bool {
	if n >= 3 && !porterVowel(b[n-1]) && b[n-1] != 'w' && b[n-1] != 'x' && b[n-1] != 'Y' &&
		porterVowel(b[n-2]) && !porterVowel(b[n-3]) {
		return true
	}
	if n == 2 && porterVowel(b[0]) && !porterVowel(b[1]) {
		return true
	}
	return n >= 4 && string(b[n-4:n]) == "past"
}

// step1a removes the apostrophe endings (the algorithm's Step 0: ', 's and 's') and then
// plural endings: sses -> ss, ied and ies -> i (ie after a single letter: ties -> tie), and
// s when a vowel comes before the letter preceding it (gaps -> gap, but gas, this, us and
// ss keep it).
func (w *porterWord) step1a() {
	switch {
	case w.ends("'s'"):
		w.n -= 3
	case w.ends("'s"):
		w.n -= 2
	case w.ends("'"):
		w.n--
	}
	switch w.at(1) {
	case 's':
		switch {
		case w.ends("sses"):
			w.n -= 2
		case w.ends("ies"):
			w.iesToI()
		case w.ends("ss"), w.ends("us"):
		case w.n >= 2 && porterHasVowel(w.b[:w.n-2]):
			w.n--
		}
	case 'd':
		if w.ends("ied") {
			w.iesToI()
		}
	}
}

// iesToI replaces the ending ies or ied with i, or with ie when it follows a single letter.
func (w *porterWord) iesToI() {
	if w.n > 4 {
		w.replace(3, "i")
	} else {
		w.replace(3, "ie")
	}
}

// step1b handles the verbal endings eed, ed, ing and their -ly forms.
func (w *porterWord) step1b() {
	var k int // the length of the ending ed, edly, ing or ingly, once found
	switch w.at(1) {
	case 'd':
		if w.ends("eed") {
			w.eed(3)
			return
		}
		if w.ends("ed") {
			k = 2
		}
	case 'y':
		switch {
		case w.ends("eedly"):
			w.eed(5)
			return
		case w.ends("edly"):
			k = 4
		case w.ends("ingly"):
			k = 5
		}
	case 'g':
		if w.ends("ing") {
			if w.ingException() {
				return
			}
			k = 3
		}
	}
	if k == 0 || !porterHasVowel(w.b[:w.n-k]) {
		return
	}
	w.n -= k
	switch {
	case w.ends("at"), w.ends("bl"), w.ends("iz"):
		w.replace(0, "e") // luxuriat -> luxuriate
	case w.endsDouble():
		// hopp -> hop, but add, egg and off stay.
		if w.n != 3 || w.b[0] != 'a' && w.b[0] != 'e' && w.b[0] != 'o' {
			w.n--
		}
	case w.n == w.p1 && porterShortSyllable(w.b, w.n):
		w.replace(0, "e") // hop -> hope
	}
}

// eed handles the ending eed or eedly of length k: it becomes ee when in R1, except in
// proceed, exceed and succeed, which are not past participles.
func (w *porterWord) eed(k int) {
	start := w.n - k
	if start < w.p1 {
		return
	}
	switch string(w.b[:start]) {
	case "proc", "exc", "succ":
		return
	}
	w.replace(k, "ee")
}

// ingException handles the -ing words the algorithm leaves out of the general rule, and
// reports whether it did: a non-vowel and y before ing become ie (dying -> die, lying ->
// lie), and inning, outing, canning, herring, earring and evening stay whole.
func (w *porterWord) ingException() bool {
	stem := w.b[:w.n-3]
	switch string(stem) {
	case "inn", "out", "cann", "herr", "earr", "even":
		return true
	}
	if len(stem) == 2 && stem[1] == 'y' && !porterVowel(stem[0]) {
		w.replace(4, "ie")
		return true
	}
	return false
}

// endsDouble reports whether the word ends with one of the doubles bb dd ff gg mm nn pp rr tt.
func (w *porterWord) endsDouble() bool {
	c := w.at(1)
	if c != w.at(2) {
		return false
	}
	switch c {
	case 'b', 'd', 'f', 'g', 'm', 'n', 'p', 'r', 't':
		return true
	}
	return false
}

// step1c turns a final y or Y into i after a non-vowel that is not the first letter (cry ->
// cri, but by and say stay).
func (w *porterWord) step1c() {
	if c := w.at(1); (c == 'y' || c == 'Y') && w.n >= 3 && !porterVowel(w.at(2)) {
		w.b[w.n-1] = 'i'
	}
}

// porterRule is one ending of steps 2 to 4 and what replaces it.
type porterRule struct {
	suffix, to string
}

// porterStep2 are Step 2's endings, grouped by their last letter and longest first within a
// group, so that the first match is the algorithm's longest match.
var porterStep2 = [26][]porterRule{
	'i' - 'a': {
		{"lessli", "less"}, {"biliti", "ble"},
		{"entli", "ent"}, {"ousli", "ous"}, {"fulli", "ful"}, {"aliti", "al"}, {"iviti", "ive"},
		{"enci", "ence"}, {"anci", "ance"}, {"abli", "able"}, {"alli", "al"},
		{"bli", "ble"}, {"ogi", "og"}, {"li", ""},
	},
	'l' - 'a': {{"ational", "ate"}, {"tional", "tion"}},
	'm' - 'a': {{"alism", "al"}},
	'n' - 'a': {{"ization", "ize"}, {"ation", "ate"}},
	'r' - 'a': {{"izer", "ize"}, {"ator", "ate"}},
	's' - 'a': {{"fulness", "ful"}, {"ousness", "ous"}, {"iveness", "ive"}},
	't' - 'a': {{"ogist", "og"}},
}

// porterStep3 are Step 3's endings, arranged like porterStep2; ative's extra condition (R2) is
// in step3.
var porterStep3 = [26][]porterRule{
	'e' - 'a': {{"alize", "al"}, {"icate", "ic"}, {"ative", ""}},
	'i' - 'a': {{"iciti", "ic"}},
	'l' - 'a': {{"ational", "ate"}, {"tional", "tion"}, {"ical", "ic"}, {"ful", ""}},
	's' - 'a': {{"ness", ""}},
}

// porterStep4 are Step 4's endings, arranged like porterStep2 (all are deleted; ion has an
// extra condition, in step4).
var porterStep4 = [26][]string{
	'c' - 'a': {"ic"},
	'e' - 'a': {"ance", "ence", "able", "ible", "ate", "ive", "ize"},
	'i' - 'a': {"iti"},
	'l' - 'a': {"al"},
	'm' - 'a': {"ism"},
	'n' - 'a': {"ion"},
	'r' - 'a': {"er"},
	's' - 'a': {"ous"},
	't' - 'a': {"ement", "ment", "ant", "ent"},
}

// longest returns the first rule of rules (sorted longest first) whose suffix ends the word,
// or false.
func (w *porterWord) longest(rules *[26][]porterRule) (porterRule, bool) {
	if c := w.at(1) - 'a'; c < 26 {
		for _, r := range rules[c] {
			if w.ends(r.suffix) {
				return r, true
			}
		}
	}
	return porterRule{}, false
}

// step2 replaces derivational endings found in R1 (ization -> ize, fulness -> ful...); ogi
// only after l, and li only after a valid li-ending (c d e g h k m n r t).
func (w *porterWord) step2() {
	r, ok := w.longest(&porterStep2)
	if !ok || w.n-len(r.suffix) < w.p1 {
		return
	}
	switch r.suffix {
	case "ogi":
		if w.at(4) != 'l' {
			return
		}
	case "li":
		switch w.at(3) {
		case 'c', 'd', 'e', 'g', 'h', 'k', 'm', 'n', 'r', 't':
		default:
			return
		}
	}
	w.replace(len(r.suffix), r.to)
}

// step3 replaces the endings found in R1 (alize -> al, ical -> ic, ful and ness go); ative
// goes only when in R2.
func (w *porterWord) step3() {
	r, ok := w.longest(&porterStep3)
	if !ok || w.n-len(r.suffix) < w.p1 || r.suffix == "ative" && w.n-len(r.suffix) < w.p2 {
		return
	}
	w.replace(len(r.suffix), r.to)
}

// step4 deletes the endings found in R2 (al, ance, ment...); ion only after s or t.
func (w *porterWord) step4() {
	c := w.at(1) - 'a'
	if c >= 26 {
		return
	}
	for _, s := range porterStep4[c] {
		if !w.ends(s) {
			continue
		}
		start := w.n - len(s)
		if start < w.p2 || s == "ion" && w.at(4) != 's' && w.at(4) != 't' {
			return
		}
		w.n = start
		return
	}
}

// step5 deletes a final e in R2, or in R1 when not after a short syllable, and the second l
// of a final ll in R2.
func (w *porterWord) step5() {
	switch w.at(1) {
	case 'e':
		if start := w.n - 1; start >= w.p2 || start >= w.p1 && !porterShortSyllable(w.b, start) {
			w.n--
		}
	case 'l':
		if w.n-1 >= w.p2 && w.at(2) == 'l' {
			w.n--
		}
	}
}
