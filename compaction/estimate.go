package compaction

import (
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// EstimateMessage estimates the tokens of one message (chars/4 rounded up over text, thinking,
// tool-call name + JSON arguments, tool-result content; ImageTokens per image).
func EstimateMessage(msg []byte) int {
	chars, images, ok := scanMessageChars(unsafeString(msg)) // one pass (estimate_scan.go)
	if !ok {
		chars, images = messageChars(gjson.Get(unsafeString(msg), "content"))
	}
	return ceilDiv4(chars) + images*ImageTokens
}

// EstimateText estimates the tokens of plain text: characters / 4, rounded up.
func EstimateText(s string) int { return ceilDiv4(utf8.RuneCountInString(s)) }

func ceilDiv4(n int) int { return (n + 3) / 4 }

// messageChars counts the characters a message's content contributes to the estimate, and its
// images. content is a string (one text block) or a block list; tool_result blocks recurse.
// It is the definition scanMessageChars follows, and reads what that one declines (and the
// tests compare the two).
func messageChars(content gjson.Result) (chars, images int) {
	if content.Type == gjson.String {
		return utf8.RuneCountInString(content.Str), 0
	}
	if !content.IsArray() {
		return 0, 0
	}
	content.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "text":
			chars += utf8.RuneCountInString(b.Get("text").Str)
		case "thinking":
			chars += utf8.RuneCountInString(b.Get("thinking").Str)
		case "tool_call":
			chars += utf8.RuneCountInString(b.Get("name").Str)
			if args := b.Get("arguments"); args.Exists() {
				chars += compactJSONLen(args.Raw)
			} else {
				chars += 2 // "{}"
			}
		case "tool_result":
			c, i := messageChars(b.Get("content"))
			chars += c
			images += i
		case "image":
			images++
		}
		return true
	})
	return chars, images
}

// compactJSONLen is the length in characters of raw JSON with insignificant whitespace removed,
// i.e. what JSON.stringify would produce for it; stored arguments may be pretty-printed.
func compactJSONLen(raw string) int {
	n, inStr, esc := 0, false, false
	for _, r := range raw {
		switch {
		case inStr:
			n++
			switch {
			case esc:
				esc = false
			case r == '\\':
				esc = true
			case r == '"':
				inStr = false
			}
		case r == ' ' || r == '\n' || r == '\t' || r == '\r':
		default:
			n++
			if r == '"' {
				inStr = true
			}
		}
	}
	return n
}

// EstimateEntry estimates one entry (messages as above, summaries by their text, others 0).
func EstimateEntry(e Entry) int {
	switch e.Kind {
	case KindMessage:
		return EstimateMessage(e.Message)
	case KindCompaction, KindBranchSummary:
		return EstimateText(e.Summary)
	default:
		return 0
	}
}

// ContextTokens estimates the context a client would send for path (the entries a resume would
// return, summary included). It calibrates with the newest assistant message that reports
// usage: that message's input+output tokens, plus estimates of the entries after it.
//
// Usage reported before a compaction counts history that has since been folded into the
// summary; when path holds messages kept verbatim from before the latest compaction, use
// ContextTokensFrom so their usage is not trusted.
func ContextTokens(path []Entry) int { return ContextTokensFrom(path, 0) }

// ContextTokensFrom is ContextTokens trusting reported usage only on entries at index
// trustFrom or later (e.g. the first entry appended after the latest compaction). Entries before
// trustFrom are estimated.
func ContextTokensFrom(path []Entry, trustFrom int) int {
	total := 0
	for i := len(path) - 1; i >= 0; i-- {
		e := path[i]
		if i >= trustFrom && e.Kind == KindMessage {
			if used, ok := reportedUsage(e.Message); ok {
				return total + used
			}
		}
		total += EstimateEntry(e)
	}
	return total
}

// reportedUsage returns input+output tokens of an assistant message that carries usage.
func reportedUsage(msg []byte) (int, bool) {
	r := gjson.GetMany(unsafeString(msg), "role", "usage.input_tokens", "usage.output_tokens")
	if r[0].Str != "assistant" || (!r[1].Exists() && !r[2].Exists()) {
		return 0, false
	}
	used := int(r[1].Int() + r[2].Int())
	if used <= 0 {
		// Some providers report zeros on aborted turns; an estimate beats a zero.
		return 0, false
	}
	return used, true
}

// ShouldCompact reports whether contextTokens exceeds window minus min(ReserveTokens, a quarter
// of window), the quarter exact (a window of 134 leaves 100.5: 101 tokens exceed it). A window
// <= 0 means unknown: false.
func ShouldCompact(contextTokens, window int) bool {
	return window > 0 && contextTokens > CompactThreshold(window)
}

// CompactThreshold is the most context tokens a window of window tokens (> 0) holds without
// ShouldCompact: window minus min(ReserveTokens, window/4), rounded down, computed in quarter
// tokens so that the quarter is not rounded first.
func CompactThreshold(window int) int {
	return int((4*int64(window) - min(4*int64(ReserveTokens), int64(window))) / 4)
}

// unsafeString reads msg as a string without copying, for gjson lookups whose results do not outlive
// the call (gjson.GetBytes copies every result to be safe; on long paths that copying was most
// of the cost). Callers must not modify msg while a view of it is in use.
func unsafeString(msg []byte) string { return unsafe.String(unsafe.SliceData(msg), len(msg)) }

// CalibrationFactor is how much the reported usage exceeds the character estimate for a
// context: ContextTokensFrom(context, trustFrom) divided by the sum of EstimateEntry over
// context (the entries a client sends: the latest summary, kept and newer entries). It is 1
// when nothing reported usage or the context is empty. A factor below 1 (a provider that
// reports fewer tokens than characters / 4 suggests) is returned as is: one accounting, either
// way.
func CalibrationFactor(context []Entry, trustFrom int) float64 {
	est := 0
	for _, e := range context {
		est += EstimateEntry(e)
	}
	if est == 0 {
		return 1
	}
	return float64(ContextTokensFrom(context, trustFrom)) / float64(est)
}

// CalibratedWeights returns each entry's EstimateEntry scaled by factor (<= 0: 1), rounded so
// that running totals stay within one token of the exact product: the weights to give
// FindCutWeighted so that it counts in the units of context_tokens.
func CalibratedWeights(path []Entry, factor float64) []int {
	if factor <= 0 {
		factor = 1
	}
	w := make([]int, len(path))
	exact, given := 0.0, 0
	for i, e := range path {
		exact += float64(EstimateEntry(e)) * factor
		w[i] = int(exact+0.5) - given
		given += w[i]
	}
	return w
}
