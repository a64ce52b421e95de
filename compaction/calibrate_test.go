package compaction

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// withUsage gives the last assistant message of path a reported usage of used tokens.
func withUsage(path []Entry, used int) []Entry {
	for i := len(path) - 1; i >= 0; i-- {
		if role := msgRole(path[i]); role == "assistant" {
			m := map[string]any{}
			mustUnmarshal(path[i].Message, &m)
			m["usage"] = map[string]any{"input_tokens": used, "output_tokens": 0}
			path[i].Message = mustJSON(m)
			break
		}
	}
	return path
}

func TestCalibratedWeights(t *testing.T) {
	path := ids(syntheticSession(5))
	w := CalibratedWeights(path, 2.5)
	sum, est := 0, 0
	for i, e := range path {
		sum += w[i]
		est += EstimateEntry(e)
	}
	if want := int(float64(est)*2.5 + 0.5); sum != want {
		t.Errorf("weights sum to %d, want %d", sum, want)
	}
	for i, e := range path {
		if e.Kind == KindOther && w[i] != 0 {
			t.Errorf("entry %d has no tokens but weight %d", i, w[i])
		}
	}
	if got := CalibrationFactor(nil, 0); got != 1 {
		t.Errorf("CalibrationFactor of nothing = %v", got)
	}
}

// The bug of issue 11: a session whose calibrated context (reported usage) says compact, but
// whose character estimate is below keep_recent_tokens, got nothing_to_compact. Measured in
// the same calibrated tokens, the cut always finds something to fold.
func TestFindCutWeightedMatchesCalibration(t *testing.T) {
	path := ids(syntheticSession(40)) // about 13k tokens by characters
	est := 0
	for _, e := range path {
		est += EstimateEntry(e)
	}
	path = withUsage(path, 57619)
	if _, ok := FindCut(path, DefaultKeepRecentTokens, -1); ok {
		t.Fatalf("by characters (%d) the whole session is within keep: the premise of the test is wrong", est)
	}
	factor := CalibrationFactor(path, 0)
	if ctx := ContextTokens(path); !ShouldCompact(ctx, 65536) {
		t.Fatalf("context %d should compact in a 64k window", ctx)
	}
	w := CalibratedWeights(path, factor)
	cut, ok := FindCutWeighted(path, w, DefaultKeepRecentTokens, -1)
	if !ok {
		t.Fatalf("weighted cut found nothing to compact (factor %.2f)", factor)
	}
	kept := 0
	for i := cut.FirstKept; i < len(path); i++ {
		kept += w[i]
	}
	// The cut moves forward from where keep was reached to the next valid cut point.
	if kept < DefaultKeepRecentTokens*8/10 || kept > DefaultKeepRecentTokens+3000 {
		t.Errorf("kept %d calibrated tokens, want about %d", kept, DefaultKeepRecentTokens)
	}
	checkCut(t, path, cut, ok)
}

// Whenever should_compact holds for a window of at least 64k tokens, the calibrated cut finds
// something to compact: random sessions and reported usages.
func TestShouldCompactImpliesCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 60 {
		turns := 5 + rng.IntN(120)
		path := ids(syntheticSession(turns))
		est := 0
		for _, e := range path {
			est += EstimateEntry(e)
		}
		used := int(float64(est) * (0.5 + 3*rng.Float64()))
		path = withUsage(path, used)
		window := 65536 + rng.IntN(200000)
		ctx := ContextTokens(path)
		if !ShouldCompact(ctx, window) {
			continue
		}
		w := CalibratedWeights(path, CalibrationFactor(path, 0))
		if _, ok := FindCutWeighted(path, w, DefaultKeepRecentTokens, -1); !ok {
			t.Errorf("trial %d: %d turns, context %d, window %d: should compact but no cut", trial, turns, ctx, window)
		}
	}
}

func TestFindCutWeightedChecksLength(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("weights of the wrong length did not panic")
		}
	}()
	FindCutWeighted(ids(syntheticSession(1)), []int{1}, 10, -1)
}

var _ = fmt.Sprint

func msgRole(e Entry) string {
	if e.Kind != KindMessage {
		return ""
	}
	var m struct {
		Role string `json:"role"`
	}
	mustUnmarshal(e.Message, &m)
	return m.Role
}

func mustUnmarshal(b []byte, v any) {
	if err := json.Unmarshal(b, v); err != nil {
		panic(err)
	}
}
