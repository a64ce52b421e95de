package compaction

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkEstimateMessage measures the estimate over the messages of the pi fixture (bytes/s
// of message JSON).
func BenchmarkEstimateMessage(b *testing.B) {
	path := readEntries(b, fixtures[0].name)
	var msgs [][]byte
	size := 0
	for _, e := range path {
		if e.Kind == KindMessage {
			msgs = append(msgs, e.Message)
			size += len(e.Message)
		}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range msgs {
			EstimateMessage(m)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/msg")
}

// path10k is a 10,000-entry session: turns of user prompt, assistant tool calls (some
// parallel) and results of realistic sizes.
func path10k() []Entry {
	rng := rand.New(rand.NewPCG(1, 2))
	var path []Entry
	call := 0
	for len(path) < 10000 {
		path = append(path, userE(textOf(20+rng.IntN(200))))
		for range 1 + rng.IntN(8) {
			var calls []block
			for range 1 + rng.IntN(2) {
				call++
				calls = append(calls, tcall(fmt.Sprintf("call_%d", call), "bash", map[string]any{"command": "go test ./pkg/" + textOf(2)}))
			}
			path = append(path, asstE(textOf(rng.IntN(150)), calls...))
			for _, c := range calls {
				path = append(path, resE(c["id"].(string), textOf(rng.IntN(800)), rng.IntN(8) == 0))
			}
		}
	}
	return ids(path[:10000])
}

func BenchmarkFindCut10k(b *testing.B) {
	path := path10k()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := FindCut(path, DefaultKeepRecentTokens, -1); !ok {
			b.Fatal("no cut")
		}
	}
}

func BenchmarkExtractive(b *testing.B) {
	b.Run("fixture", func(b *testing.B) { benchExtractive(b, readEntries(b, fixtures[0].name)) })
	b.Run("corpus-pi-before-compaction", func(b *testing.B) { benchExtractive(b, loadCorpus(b, "pi-before-compaction.jsonl")) })
}

func benchExtractive(b *testing.B, path []Entry) {
	size := 0
	for _, e := range path {
		size += len(e.Message) + len(e.Summary)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Extractive{}).Summarize(b.Context(), Request{History: path}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildPrompt(b *testing.B) {
	path := readEntries(b, fixtures[0].name)
	b.ReportAllocs()
	for b.Loop() {
		BuildPrompt(Request{History: path, MaxInputTokens: 20000})
	}
}

// BenchmarkUpdateLedger measures building the ledger of a whole session (the cost a compaction
// adds on top of its summarizer), and fitting it to its budget.
func BenchmarkUpdateLedger(b *testing.B) {
	for _, name := range []string{"pi-before-compaction.jsonl", "cc-8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"} {
		b.Run(name, func(b *testing.B) {
			path := loadCorpus(b, name)
			size := 0
			for _, e := range path {
				size += len(e.Message) + len(e.Summary)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				l := UpdateLedger(nil, path, "")
				l.Fit(LedgerMaxTokens)
			}
		})
	}
}
