package compaction

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestFindCut(t *testing.T) {
	args := map[string]any{"path": "a.go"}
	tests := []struct {
		name   string
		path   []Entry
		keep   int
		prev   int
		want   Cut
		wantOK bool
	}{
		{
			name:   "everything fits: nothing to compact",
			path:   []Entry{userE(textOf(10)), asstE(textOf(10))},
			keep:   100,
			prev:   -1,
			want:   Cut{FirstKept: 2, TurnStart: 2},
			wantOK: false,
		},
		{
			name:   "cut on a user message: no split",
			path:   []Entry{userE(textOf(100)), asstE(textOf(100)), userE(textOf(100)), asstE(textOf(100))},
			keep:   200,
			prev:   -1,
			want:   Cut{FirstKept: 2, TurnStart: 2},
			wantOK: true,
		},
		{
			name: "tool result moves the cut forward: split turn",
			path: []Entry{
				userE(textOf(50)), asstE(textOf(50)),
				userE(textOf(10)), asstE("", tcall("c1", "read", args)), resE("c1", textOf(300), false), asstE(textOf(20)), asstE(textOf(20)),
			},
			keep:   100,
			prev:   -1,
			want:   Cut{FirstKept: 5, TurnStart: 2, SplitTurn: true},
			wantOK: true,
		},
		{
			name: "two calls: never between a call and its results",
			path: []Entry{
				userE(textOf(50)), asstE(textOf(50)),
				userE(textOf(10)), asstE("x", tcall("c1", "read", args), tcall("c2", "read", args)),
				resE("c1", textOf(10), false), resE("c2", textOf(200), false), asstE(textOf(30)),
			},
			keep:   220,
			prev:   -1,
			want:   Cut{FirstKept: 6, TurnStart: 2, SplitTurn: true},
			wantOK: true,
		},
		{
			name: "result pending far away: cut kept before the call",
			path: []Entry{
				userE(textOf(50)), asstE(textOf(50)),
				userE(textOf(10)), asstE("x", tcall("c1", "bash", args)), asstE(textOf(200)), resE("c1", textOf(10), false),
			},
			keep:   150,
			prev:   -1,
			want:   Cut{FirstKept: 3, TurnStart: 2, SplitTurn: true},
			wantOK: true,
		},
		{
			name: "no valid point ahead: falls back to the call",
			path: []Entry{
				userE(textOf(50)), asstE(textOf(50)),
				userE(textOf(10)), asstE("x", tcall("c1", "read", args)), resE("c1", textOf(500), false),
			},
			keep:   300,
			prev:   -1,
			want:   Cut{FirstKept: 3, TurnStart: 2, SplitTurn: true},
			wantOK: true,
		},
		{
			name:   "moves back over other entries",
			path:   []Entry{userE(textOf(100)), asstE(textOf(100)), otherE(), otherE(), userE(textOf(100)), asstE(textOf(100))},
			keep:   200,
			prev:   -1,
			want:   Cut{FirstKept: 2, TurnStart: 2},
			wantOK: true,
		},
		{
			name: "split turn with nothing before it: empty history",
			path: []Entry{
				userE(textOf(10)), asstE(textOf(100)), asstE(textOf(100)), asstE(textOf(100)),
			},
			keep:   150,
			prev:   -1,
			want:   Cut{FirstKept: 2, TurnStart: 0, SplitTurn: true},
			wantOK: true,
		},
		{
			name:   "branch summary is a cut point and starts no split",
			path:   []Entry{userE(textOf(100)), asstE(textOf(100)), {Kind: KindBranchSummary, Summary: textOf(100)}, asstE(textOf(100))},
			keep:   200,
			prev:   -1,
			want:   Cut{FirstKept: 2, TurnStart: 2},
			wantOK: true,
		},
		{
			name: "second compaction folds the previously kept span; the old compaction is not counted",
			path: []Entry{
				userE(textOf(100)), asstE(textOf(100)), // summarized last time
				userE(textOf(100)), asstE(textOf(100)), // kept last time (prevFirstKept = 2)
				{Kind: KindCompaction, Summary: textOf(1000)},
				userE(textOf(100)), asstE(textOf(100)),
			},
			keep:   200,
			prev:   2,
			want:   Cut{FirstKept: 5, TurnStart: 5, Start: 2},
			wantOK: true,
		},
		{
			name: "newest entry is a compaction that kept one message: nothing to do",
			path: []Entry{
				userE(textOf(100)), asstE(textOf(100)), userE(textOf(100)), {Kind: KindCompaction, Summary: "s"},
			},
			keep:   10,
			prev:   2,
			want:   Cut{FirstKept: 4, TurnStart: 4, Start: 2},
			wantOK: false,
		},
		{
			// The contract: nothing_to_compact only when nothing is older than keep.
			name: "newest entry is a compaction, a smaller keep folds the older part of what it kept",
			path: []Entry{
				userE(textOf(100)), asstE(textOf(100)), // summarized last time
				userE(textOf(400)), asstE(textOf(400)), userE(textOf(400)), // kept last time
				{Kind: KindCompaction, Summary: "s"},
			},
			keep:   50,
			prev:   2,
			want:   Cut{FirstKept: 4, TurnStart: 4, Start: 2},
			wantOK: true,
		},

		{
			name: "kept part too small since the last compaction",
			path: []Entry{
				userE(textOf(100)), asstE(textOf(100)), userE(textOf(10)), {Kind: KindCompaction, Summary: "s"}, asstE(textOf(10)),
			},
			keep:   200,
			prev:   2,
			want:   Cut{FirstKept: 5, TurnStart: 5, Start: 2},
			wantOK: false,
		},
		{
			name:   "default keep when keepRecentTokens <= 0",
			path:   []Entry{userE(textOf(DefaultKeepRecentTokens)), asstE(textOf(10)), userE(textOf(DefaultKeepRecentTokens)), asstE(textOf(10))},
			keep:   0,
			prev:   -1,
			want:   Cut{FirstKept: 2, TurnStart: 2},
			wantOK: true,
		},
		{
			name:   "empty path",
			path:   nil,
			keep:   10,
			prev:   -1,
			want:   Cut{},
			wantOK: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ids(tt.path)
			got, ok := FindCut(path, tt.keep, tt.prev)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("FindCut = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
			checkCut(t, path, got, ok)
		})
	}
}

func TestCutHistoryAndPrefix(t *testing.T) {
	path := ids([]Entry{
		userE("a"), asstE("b"), {Kind: KindCompaction, Summary: "old"}, otherE(), userE("c"), asstE("d"), asstE("e"),
	})
	c := Cut{Start: 0, TurnStart: 4, FirstKept: 6, SplitTurn: true}
	if got, want := entryIDs(c.History(path)), "e0 e1"; got != want {
		t.Fatalf("History = %q, want %q", got, want)
	}
	if got, want := entryIDs(c.TurnPrefix(path)), "e4 e5"; got != want {
		t.Fatalf("TurnPrefix = %q, want %q", got, want)
	}
	c.SplitTurn, c.TurnStart = false, 6
	if got := c.TurnPrefix(path); got != nil {
		t.Fatalf("TurnPrefix without split = %v, want nil", got)
	}
}

func entryIDs(es []Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.ID)
	}
	return strings.Join(s, " ")
}

// checkCut verifies the invariants every cut must keep.
func checkCut(t *testing.T, path []Entry, c Cut, ok bool) {
	t.Helper()
	n := len(path)
	if !ok {
		return
	}
	if !(0 <= c.Start && c.Start <= c.TurnStart && c.TurnStart <= c.FirstKept && c.FirstKept <= n) {
		t.Fatalf("indexes out of order: %+v (n=%d)", c, n)
	}
	if c.SplitTurn != (c.TurnStart < c.FirstKept) {
		t.Fatalf("SplitTurn %v but TurnStart %d, FirstKept %d", c.SplitTurn, c.TurnStart, c.FirstKept)
	}
	first := c.FirstKept
	for first < n && path[first].Kind == KindOther {
		first++
	}
	if first < n && gjson.GetBytes(path[first].Message, "role").Str == "tool_result" {
		t.Fatalf("kept part starts with a tool result at %d", first)
	}
	callAt := map[string]int{}
	for i, e := range path {
		if e.Kind != KindMessage {
			continue
		}
		ti := scanTools(e.Message)
		for _, id := range ti.resultIDs {
			if ci, found := callAt[id]; found && ci < c.FirstKept && i >= c.FirstKept && ci >= c.Start {
				t.Fatalf("tool result %s at %d kept but its call at %d summarized (cut %+v)", id, i, ci, c)
			}
		}
		for _, id := range ti.callIDs {
			callAt[id] = i
		}
	}
	if len(c.History(path))+len(c.TurnPrefix(path)) == 0 {
		t.Fatalf("ok with nothing to summarize: %+v", c)
	}
}

// TestFindCutNeverOrphans is the property test: on random sessions of turns with tool calls,
// parallel calls, late results, other entries and earlier compactions, no cut separates a tool
// call from its result, and no kept part starts with a tool result.
func TestFindCutNeverOrphans(t *testing.T) {
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 7))
		path := randomPath(rng)
		prev := -1
		for i, e := range path {
			if e.Kind == KindCompaction && i > 0 {
				prev = rng.IntN(i)
			}
		}
		keep := 1 + rng.IntN(3000)
		c, ok := FindCut(path, keep, prev)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { checkCut(t, path, c, ok) })
	}
}

func randomPath(rng *rand.Rand) []Entry {
	var path []Entry
	call := 0
	for range 1 + rng.IntN(30) {
		path = append(path, userE(textOf(rng.IntN(400))))
		for range rng.IntN(5) {
			var calls []block
			for range rng.IntN(4) {
				call++
				calls = append(calls, tcall(fmt.Sprintf("c%d", call), "bash", map[string]any{"command": textOf(rng.IntN(20))}))
			}
			path = append(path, asstE(textOf(rng.IntN(200)), calls...))
			if rng.IntN(5) == 0 {
				path = append(path, asstE(textOf(rng.IntN(100)))) // a result arriving late
			}
			for _, c := range calls {
				if rng.IntN(10) == 0 {
					continue // never answered
				}
				path = append(path, resE(c["id"].(string), textOf(rng.IntN(600)), rng.IntN(4) == 0))
			}
			if rng.IntN(6) == 0 {
				path = append(path, otherE())
			}
		}
		if rng.IntN(10) == 0 {
			path = append(path, Entry{Kind: KindCompaction, Summary: textOf(rng.IntN(500))})
		}
		if rng.IntN(15) == 0 {
			path = append(path, Entry{Kind: KindBranchSummary, Summary: textOf(rng.IntN(100))})
		}
	}
	return ids(path)
}

// TestFindCutGolden records where cuts fall on the corpus-derived fixtures.
func TestFindCutGolden(t *testing.T) {
	var b strings.Builder
	for _, f := range fixtures {
		path := readEntries(t, f.name)
		prevs := []int{-1}
		for i, e := range path {
			if e.Kind == KindCompaction {
				prevs = append(prevs, firstKeptOf(f.name, i))
			}
		}
		for _, keep := range []int{2000, 8000, 20000} {
			for _, prev := range prevs {
				c, ok := FindCut(path, keep, prev)
				t.Run(fmt.Sprintf("%s/keep=%d/prev=%d", f.name, keep, prev), func(t *testing.T) { checkCut(t, path, c, ok) })
				desc := "nothing to compact"
				if ok {
					desc = describeCut(path, c)
				}
				fmt.Fprintf(&b, "%s keep=%d prev=%d: %s\n", f.name, keep, prev, desc)
			}
		}
	}
	compareGolden(t, "cuts.golden", b.String())
}

// firstKeptOf is the previous compaction's first kept index in a fixture (pi v1 records it;
// for Claude Code, which keeps nothing verbatim, it is the boundary itself).
func firstKeptOf(fixture string, compactionIndex int) int {
	if strings.HasPrefix(fixture, "pi-") {
		return 292 // firstKeptEntryIndex 293 counts the header line
	}
	return compactionIndex
}

func describeCut(path []Entry, c Cut) string {
	at := func(i int) string {
		if i >= len(path) {
			return "end"
		}
		e := path[i]
		if e.Kind == KindMessage {
			return e.ID + "/" + gjson.GetBytes(e.Message, "role").Str
		}
		return e.ID + "/" + string(e.Kind)
	}
	kept := 0
	for _, e := range path[min(c.FirstKept, len(path)):] {
		if e.Kind == KindMessage || e.Kind == KindBranchSummary {
			kept += EstimateEntry(e)
		}
	}
	return fmt.Sprintf("start=%s turn_start=%s first_kept=%s split=%v history=%d prefix=%d kept_tokens=%d",
		at(c.Start), at(c.TurnStart), at(c.FirstKept), c.SplitTurn, len(c.History(path)), len(c.TurnPrefix(path)), kept)
}

func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (create it with go test -run %s -update)", err, t.Name())
	}
	if got != string(want) {
		t.Fatalf("%s differs (rewrite with -update after checking):\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestFindCutAgainRightAfter: compacting again right after a compaction with the keep it used
// finds nothing new to fold, whatever that keep was; a smaller one folds the older part of
// what it kept.
func TestFindCutAgainRightAfter(t *testing.T) {
	before := []Entry{userE(textOf(400)), asstE(textOf(400)), userE(textOf(400)), asstE(textOf(400)), userE(textOf(400)), asstE(textOf(400))}
	for _, keep := range []int{150, 250, 350} {
		first, ok := FindCut(before, keep, -1)
		if !ok {
			t.Fatalf("keep %d: nothing to fold the first time", keep)
		}
		after := append(slices.Clone(before), Entry{Kind: KindCompaction, Summary: "s"})
		if again, ok := FindCut(after, keep, first.FirstKept); ok {
			t.Errorf("keep %d: compacting again right after (kept from %d) cuts at %+v", keep, first.FirstKept, again)
		}
		if again, ok := FindCut(after, 1, first.FirstKept); ok != (first.FirstKept < len(before)-1) || ok && again.FirstKept <= first.FirstKept {
			t.Errorf("keep %d then 1: %+v, %v (kept from %d)", keep, again, ok, first.FirstKept)
		}
	}
}
