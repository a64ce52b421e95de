package compaction

import (
	"github.com/sessionmem/sessionmem/internal/jsonscan"
)

// Counting a message's characters in one pass. Every saved message and every record read to
// build a session's state is estimated, and reading the message with gjson (a lookup per
// block and field, each string unescaped into a new one just to count its runes) cost about
// 25 µs for a 2 KB message. scanMessageChars walks the JSON once with jsonscan's strict
// reader, counting the runes of the strings that count without building them, and gives
// exactly messageChars's figures: it follows what gjson reads from valid JSON (the first of
// repeated keys, the unescaping of \u escapes and surrogate pairs, raw bytes passed through),
// and it gives up (ok false) on anything else, which EstimateMessage then hands to
// messageChars: JSON that is not valid, keys written with escapes, blocks that are not
// objects, fields of unexpected types, deep nesting.

// maxScanDepth bounds the nesting scanMessageChars follows; deeper input goes to messageChars.
const maxScanDepth = 256

// scanMessageChars is messageChars(gjson.Get(msg, "content")) for msg that the scan can read;
// ok is false for anything else.
func scanMessageChars(msg string) (chars, images int, ok bool) {
	r := jsonscan.NewReader(msg, maxScanDepth)
	if !r.Consume('{') {
		return 0, 0, false
	}
	// Keys up to the first "content" (gjson's pick); what follows it does not matter.
	if r.Consume('}') {
		return 0, 0, true
	}
	for {
		key, ok := r.Key()
		if !ok {
			return 0, 0, false
		}
		if key == "content" {
			return scanContent(&r)
		}
		if _, ok := r.Value(); !ok {
			return 0, 0, false
		}
		if r.Consume('}') {
			return 0, 0, true
		}
		if !r.Consume(',') {
			return 0, 0, false
		}
	}
}

// scanContent counts a content value: a string is one text, a list holds blocks, anything
// else counts nothing.
func scanContent(r *jsonscan.Reader) (chars, images int, ok bool) {
	switch r.Next() {
	case '"':
		_, n, ok := r.StrRunes()
		return n, 0, ok
	case '[':
		return scanBlocks(r)
	}
	_, ok = r.Value()
	return 0, 0, ok
}

// scanBlocks counts a list of block objects as messageChars does.
func scanBlocks(r *jsonscan.Reader) (chars, images int, ok bool) {
	if !r.Consume('[') || !r.Enter() {
		return 0, 0, false
	}
	if r.Consume(']') {
		r.Leave()
		return 0, 0, true
	}
	for {
		c, im, ok := scanBlock(r)
		if !ok {
			return 0, 0, false
		}
		chars += c
		images += im
		if r.Consume(']') {
			r.Leave()
			return chars, images, true
		}
		if !r.Consume(',') {
			return 0, 0, false
		}
	}
}

// Fields of a block that count, by bit.
const (
	seenType = 1 << iota
	seenText
	seenThinking
	seenName
	seenArguments
	seenContent
)

// scanBlock counts one block. Each counted field is read at its first occurrence, as gjson's
// Get does, and counted once the type is known.
func scanBlock(r *jsonscan.Reader) (chars, images int, ok bool) {
	var seen int
	var typ string
	var text, thinking, name, argChars, contentChars, contentImages int
	ok = r.Members(func(key string) (ok bool) {
		var bit int
		switch key {
		case "type":
			bit = seenType
		case "text":
			bit = seenText
		case "thinking":
			bit = seenThinking
		case "name":
			bit = seenName
		case "arguments":
			bit = seenArguments
		case "content":
			bit = seenContent
		}
		if seen&bit != 0 {
			bit = 0 // not counted: gjson reads the first of repeated keys
		}
		seen |= bit
		switch bit {
		case 0:
			_, ok = r.Value()
		case seenType:
			var t jsonscan.String
			t, ok = r.Str()
			typ, ok = t.Raw, ok && !t.Esc
		case seenText:
			_, text, ok = r.StrRunes()
		case seenThinking:
			_, thinking, ok = r.StrRunes()
		case seenName:
			_, name, ok = r.StrRunes()
		case seenArguments:
			argChars, ok = r.CompactRunes() // compactJSONLen, as messageChars counts them
		case seenContent:
			contentChars, contentImages, ok = scanContent(r)
		}
		return ok
	})
	if !ok {
		return 0, 0, false
	}
	switch typ {
	case "text":
		return text, 0, true
	case "thinking":
		return thinking, 0, true
	case "tool_call":
		if seen&seenArguments == 0 {
			argChars = 2 // "{}"
		}
		return name + argChars, 0, true
	case "tool_result":
		return contentChars, contentImages, true
	case "image":
		return 0, 1, true
	}
	return 0, 0, true
}
