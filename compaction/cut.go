package compaction

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/message"
)

// toolInfo is what FindCut needs to know about one message.
type toolInfo struct {
	role      string
	callIDs   []string // ids of tool_call blocks
	resultIDs []string // the ids of the calls its tool_result blocks answer
}

func scanTools(msg []byte) toolInfo {
	var ti toolInfo
	ti.role = gjson.Get(unsafeString(msg), "role").Str
	content := gjson.Get(unsafeString(msg), "content")
	if !content.IsArray() {
		return ti
	}
	content.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "tool_call":
			if id := b.Get("id").Str; id != "" {
				ti.callIDs = append(ti.callIDs, id)
			}
		case "tool_result":
			ti.resultIDs = append(ti.resultIDs, b.Get(message.FieldToolCallID).Str)
		}
		return true
	})
	return ti
}

// FindCut picks the cut for path, keeping about keepRecentTokens (<= 0: default) of the newest
// context. ok is false when there is nothing older than the kept part to summarize.
// prevFirstKept is the index of the previous compaction's first kept entry in path, or -1.
//
// The walk goes back from the newest entry adding up EstimateEntry of messages and branch
// summaries until keepRecentTokens is reached, then moves forward to the nearest valid cut
// point (a user or assistant message or a branch summary that separates no tool call from its
// result; backward if none is ahead), then back over KindOther entries. A cut that lands inside
// a turn (not on a user message) is a split turn. Compaction entries are never cut points and
// are not counted. Right after a compaction, a smaller keepRecentTokens than it kept still
// folds in the older part of what it kept; the same keep finds nothing new to fold.
func FindCut(path []Entry, keepRecentTokens int, prevFirstKept int) (cut Cut, ok bool) {
	return FindCutWeighted(path, nil, keepRecentTokens, prevFirstKept)
}

// FindCutWeighted is FindCut measuring the kept part in weights[i] tokens per entry instead of
// EstimateEntry (weights nil: EstimateEntry; otherwise len(weights) == len(path)). Pass the
// weights of CalibratedWeights so that keepRecentTokens is counted in the same calibrated
// tokens as context_tokens and should_compact: measured by characters alone, a session whose
// reported usage is well above its character estimate could be told to compact and then find
// nothing old enough to fold.
func FindCutWeighted(path []Entry, weights []int, keepRecentTokens int, prevFirstKept int) (cut Cut, ok bool) {
	n := len(path)
	weight := func(i int) int { return EstimateEntry(path[i]) }
	if weights != nil {
		if len(weights) != n {
			panic(fmt.Sprintf("compaction: FindCutWeighted with %d weights for %d entries", len(weights), n))
		}
		weight = func(i int) int { return weights[i] }
	}
	if keepRecentTokens <= 0 {
		keepRecentTokens = DefaultKeepRecentTokens
	}
	start := max(prevFirstKept, 0)
	nothing := Cut{FirstKept: n, TurnStart: n, Start: min(start, n)}
	if start >= n {
		return nothing, false
	}

	infos, unsafe := pairedTools(path, start)
	valid := func(i int) bool {
		if unsafe[i] > 0 {
			return false
		}
		switch path[i].Kind {
		case KindBranchSummary:
			return true
		case KindMessage:
			ti := infos[i]
			return (ti.role == "user" || ti.role == "assistant") && len(ti.resultIDs) == 0
		}
		return false
	}

	// Walk back until the kept part holds keepRecentTokens.
	at, acc := -1, 0
	for i := n - 1; i >= start; i-- {
		if k := path[i].Kind; k == KindMessage || k == KindBranchSummary {
			acc += weight(i)
		}
		if acc >= keepRecentTokens {
			at = i
			break
		}
	}
	if at < 0 {
		return nothing, false
	}
	first := -1
	for i := at; i < n; i++ {
		if valid(i) {
			first = i
			break
		}
	}
	if first < 0 {
		for i := at - 1; i >= start; i-- {
			if valid(i) {
				first = i
				break
			}
		}
	}
	if first < 0 {
		return nothing, false
	}
	cutMsg := first // the message the cut is decided by, before moving over KindOther entries
	for first > start && path[first-1].Kind == KindOther {
		first--
	}

	cut = Cut{FirstKept: first, TurnStart: first, Start: start}
	if !(path[cutMsg].Kind == KindMessage && infos[cutMsg].role == "user") &&
		path[cutMsg].Kind != KindBranchSummary {
		for i := first - 1; i >= start; i-- {
			if isTurnStart(path[i], infos[i]) {
				cut.TurnStart, cut.SplitTurn = i, true
				break
			}
		}
	}
	if !hasContent(path[start:first]) {
		return nothing, false
	}
	return cut, true
}

// pairedTools scans the tool calls and results of path from start, and returns each entry's
// and, for each position i, unsafe[i] > 0 when a cut at i would put a tool call before i and
// its result at i or later.
func pairedTools(path []Entry, start int) (infos []toolInfo, unsafe []int) {
	n := len(path)
	infos = make([]toolInfo, n)
	for i := start; i < n; i++ {
		if path[i].Kind == KindMessage {
			infos[i] = scanTools(path[i].Message)
		}
	}
	callAt := make(map[string]int)
	unsafe = make([]int, n+1)
	for i := start; i < n; i++ {
		for _, id := range infos[i].resultIDs {
			if c, found := callAt[id]; found && c < i {
				unsafe[c+1]++
				unsafe[i+1]--
			}
		}
		for _, id := range infos[i].callIDs {
			callAt[id] = i
		}
	}
	for i := 1; i <= n; i++ {
		unsafe[i] += unsafe[i-1]
	}
	return infos, unsafe
}

func isTurnStart(e Entry, ti toolInfo) bool {
	return e.Kind == KindBranchSummary || (e.Kind == KindMessage && ti.role == "user" && len(ti.resultIDs) == 0)
}

// hasContent reports whether entries hold anything a summarizer would see.
func hasContent(entries []Entry) bool {
	for _, e := range entries {
		if e.Kind == KindMessage || e.Kind == KindBranchSummary {
			return true
		}
	}
	return false
}

// History returns the entries to fold into the summary: [Start, TurnStart) without compaction
// and KindOther entries.
func (c Cut) History(path []Entry) []Entry { return summarizable(path, c.Start, c.TurnStart) }

// TurnPrefix returns the early part of a split turn, [TurnStart, FirstKept), or nil when the
// turn is not split.
func (c Cut) TurnPrefix(path []Entry) []Entry {
	if !c.SplitTurn {
		return nil
	}
	return summarizable(path, c.TurnStart, c.FirstKept)
}

func summarizable(path []Entry, from, to int) []Entry {
	from, to = max(from, 0), min(to, len(path))
	var out []Entry
	for i := from; i < to; i++ {
		if k := path[i].Kind; k == KindMessage || k == KindBranchSummary {
			out = append(out, path[i])
		}
	}
	return out
}
