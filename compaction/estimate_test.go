package compaction

import "testing"

func TestEstimateMessage(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want int
	}{
		{"string content", `{"role":"user","content":"abcdefgh"}`, 2},
		{"rounds up", `{"role":"user","content":"abcde"}`, 2},
		{"empty", `{"role":"user","content":[]}`, 0},
		{"counts characters not bytes", `{"role":"user","content":"ééééé"}`, 2},
		{"text and thinking", `{"role":"assistant","content":[{"type":"text","text":"abcd"},{"type":"thinking","thinking":"abcd"}]}`, 2},
		{"tool call: name + compact JSON args", `{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"read","arguments":{ "path" : "a b" }}]}`, 5}, // "read" + {"path":"a b"}: 4+14 = 18 chars
		{"tool result recursive with image", `{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":[{"type":"text","text":"abcdabcd"},{"type":"image","media_type":"image/png","data":"xxxx"}]}]}`, 2 + ImageTokens},
		{"tool result string content", `{"role":"tool_result","content":[{"type":"tool_result","tool_call_id":"c1","content":"abcd"}]}`, 1},
		{"user image", `{"role":"user","content":[{"type":"image","media_type":"image/png","data":"xxxxxxxx"}]}`, ImageTokens},
		{"usage not counted", `{"role":"assistant","content":"abcd","usage":{"input_tokens":5000,"output_tokens":7}}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EstimateMessage([]byte(tt.msg)); got != tt.want {
				t.Fatalf("EstimateMessage(%s) = %d, want %d", tt.msg, got, tt.want)
			}
		})
	}
}

func TestEstimateEntry(t *testing.T) {
	tests := []struct {
		name string
		e    Entry
		want int
	}{
		{"message", userE(textOf(10)), 10},
		{"compaction summary", Entry{Kind: KindCompaction, Summary: textOf(7)}, 7},
		{"branch summary", Entry{Kind: KindBranchSummary, Summary: textOf(3) + "x"}, 4},
		{"other", Entry{Kind: KindOther, Summary: "ignored"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EstimateEntry(tt.e); got != tt.want {
				t.Fatalf("EstimateEntry = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestContextTokens(t *testing.T) {
	withUsage := func(in, out int) Entry {
		return Entry{Kind: KindMessage, Message: mustJSON(map[string]any{
			"role": "assistant", "content": "abcd", "usage": map[string]any{"input_tokens": in, "output_tokens": out},
		})}
	}
	tests := []struct {
		name      string
		path      []Entry
		trustFrom int
		want      int
	}{
		{"no usage: estimates", []Entry{userE(textOf(10)), asstE(textOf(5))}, 0, 15},
		{"calibrated from usage plus later estimates", []Entry{userE(textOf(10)), withUsage(900, 100), userE(textOf(7)), otherE()}, 0, 1007},
		{"newest usage wins", []Entry{withUsage(10, 10), userE(textOf(1)), withUsage(500, 5), userE(textOf(2))}, 0, 507},
		{"zero usage ignored", []Entry{userE(textOf(10)), withUsage(0, 0)}, 0, 11},
		{"summary counted", []Entry{{Kind: KindCompaction, Summary: textOf(40)}, userE(textOf(2))}, 0, 42},
		{"usage before trustFrom not trusted", []Entry{{Kind: KindCompaction, Summary: textOf(40)}, withUsage(150000, 100), userE(textOf(2))}, 2, 40 + 1 + 2},
		{"empty", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ContextTokensFrom(tt.path, tt.trustFrom); got != tt.want {
				t.Fatalf("ContextTokensFrom = %d, want %d", got, tt.want)
			}
			if tt.trustFrom == 0 {
				if got := ContextTokens(tt.path); got != tt.want {
					t.Fatalf("ContextTokens = %d, want %d", got, tt.want)
				}
			}
		})
	}
}

func TestShouldCompact(t *testing.T) {
	tests := []struct {
		name           string
		tokens, window int
		want           bool
	}{
		{"unknown window", 1 << 30, 0, false},
		{"200k: at threshold", 200000 - ReserveTokens, 200000, false},
		{"200k: just above", 200000 - ReserveTokens + 1, 200000, true},
		{"small window uses a quarter", 30001, 40000, true},
		{"small window below a quarter", 30000, 40000, false},
		{"negative window", 10, -5, false},
		// A quarter of a window that 4 does not divide: 134 - 33.5 = 100.5 (contract v1).
		{"quarter not whole: above", 101, 134, true},
		{"quarter not whole: below", 100, 134, false},
		{"quarter not whole: 135", 102, 135, true},
		{"quarter not whole: 135 below", 101, 135, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShouldCompact(tt.tokens, tt.window); got != tt.want {
				t.Fatalf("ShouldCompact(%d, %d) = %v, want %v", tt.tokens, tt.window, got, tt.want)
			}
		})
	}
}
