package relevance_test

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/relevance"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"How did we fix the failing test?", []string{"fix", "failing", "test"}},
		{"parse_config(x) in lib/foo.ex", []string{"parse", "config", "x", "lib", "foo", "ex"}},
		{"Why didn't it WORK?", []string{"work"}},
		{"bandit 1.10.2 Ünïcode", []string{"bandit", "1", "10", "2", "ünïcode"}},
		{"what did we do", nil},
		{"", nil},
	}
	for _, tc := range tests {
		if got := relevance.Words(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Words(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// msg makes a fixture message with one text block.
func msg(id, text string, at time.Time) relevance.Message {
	b, _ := json.Marshal(map[string]any{"id": id, "role": "user",
		"content": []map[string]string{{"type": "text", "text": text}}})
	return relevance.Message{ID: id, Role: "user", Time: at, JSON: b}
}

func TestBM25(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sessions := []relevance.Session{
		{ID: "s1", WorkingDir: "/p1", Messages: []relevance.Message{
			msg("a", "bandit bandit bandit", t0),
			msg("b", "bandit", t0.Add(time.Second)),
			msg("c", "nothing relevant here at all", t0.Add(2*time.Second)),
			msg("d", "opentelemetry bandit", t0.Add(3*time.Second)),
		}},
		{ID: "s2", WorkingDir: "/p2", Messages: []relevance.Message{
			msg("e", "bandit", t0.Add(4*time.Second)),
		}},
	}
	bm := relevance.NewBM25(sessions)
	tests := []struct {
		name, query, dir string
		limit            int
		want             []string
	}{
		// a (tf 3 of 3 words) beats b and e (tf 1 of 1), which tie exactly: e is newer; d
		// (1 of 2 words) is last, but first when its rare second word is asked for too.
		{"term frequency and recency ties", "which bandit?", "", 10, []string{"a", "e", "b", "d"}},
		{"working dir filters", "bandit", "/p1", 10, []string{"a", "b", "d"}},
		{"rarer word ranks first, words OR-ed", "bandit opentelemetry", "/p1", 10, []string{"d", "a", "b"}},
		{"limit", "bandit", "", 2, []string{"a", "e"}},
		{"stop words only", "what did we do", "", 10, nil},
		{"unknown word", "zebra", "", 10, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := bm.Search(tc.query, tc.dir, tc.limit); !slices.Equal(got, tc.want) {
				t.Errorf("Search(%q, %q) = %q, want %q", tc.query, tc.dir, got, tc.want)
			}
		})
	}
}

// TestBM25Score checks the scores against the formula worked by hand on a two-document
// corpus: N = 2, avgdl = 2, idf(alpha) = ln(1 + 1.5/1.5) = ln 2, idf(beta) = ln(1 + 0.5/2.5).
func TestBM25Score(t *testing.T) {
	t0 := time.Unix(0, 0)
	bm := relevance.NewBM25([]relevance.Session{{ID: "s", Messages: []relevance.Message{
		msg("x", "alpha alpha beta", t0), // 3 words
		msg("y", "beta", t0),             // 1 word
	}}})
	tf := func(f, dl float64) float64 { return f * 2.2 / (f + 1.2*(0.25+0.75*dl/2)) }
	want := []relevance.Hit{
		{ID: "x", Score: math.Log(2)*tf(2, 3) + math.Log(1.2)*tf(1, 3)}, // ≈ 0.98694
		{ID: "y", Score: math.Log(1.2) * tf(1, 1)},                      // ≈ 0.22920
	}
	got := bm.Hits("alpha beta alpha", "", 10)
	if len(got) != 2 {
		t.Fatalf("hits %v", got)
	}
	for i := range want {
		if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-12 {
			t.Errorf("hit %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if math.Abs(want[0].Score-0.98694) > 1e-5 {
		t.Errorf("hand-worked score %v", want[0].Score)
	}
}

func TestRecord(t *testing.T) {
	m := msg("m-1", "hello", time.Date(2026, 2, 11, 21, 41, 44, 800_000_000, time.UTC))
	var rec struct {
		Type, ID, TS string
		Message      json.RawMessage
	}
	if err := json.Unmarshal(m.Record(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Type != "message" || rec.ID != "m-1" || rec.TS != "2026-02-11T21:41:44.8Z" || string(rec.Message) != string(m.JSON) {
		t.Errorf("record %s", m.Record())
	}
	if m.Text() != "hello" {
		t.Errorf("Text() = %q", m.Text())
	}
}
