package compaction

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestJoinSplitTurn(t *testing.T) {
	tests := []struct{ name, history, prefix, want string }{
		{"both", "H", "P", "H\n\n---\n\n**Turn Context (split turn)**\n\nP"},
		{"no history", "  ", "P", "No prior history.\n\n---\n\n**Turn Context (split turn)**\n\nP"},
		{"no prefix", "H", "", "H"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JoinSplitTurn(tt.history, tt.prefix); got != tt.want {
				t.Fatalf("JoinSplitTurn = %q, want %q", got, tt.want)
			}
		})
	}
}

var _ Summarizer = SummarizerFunc{}

// recorder is a fake summarizer: it answers "history" or "prefix" by the request's shape and
// records the requests it saw.
type recorder struct {
	mu   sync.Mutex
	reqs []Request
	wait *sync.WaitGroup // when set, every call waits for all expected calls to be in flight
	fail string          // "history" or "prefix": that call fails
}

func (r *recorder) summarizer() Summarizer {
	return SummarizerFunc{N: "fake", F: func(ctx context.Context, req Request) (string, error) {
		r.mu.Lock()
		r.reqs = append(r.reqs, req)
		r.mu.Unlock()
		kind := "history"
		if turnPrefixOnly(req) {
			kind = "prefix"
		}
		if r.wait != nil {
			r.wait.Done()
			done := make(chan struct{})
			go func() { r.wait.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				return "", errors.New("calls did not run in parallel")
			}
		}
		if kind == r.fail {
			return "", errors.New("model down")
		}
		if kind == "history" && r.fail == "prefix" {
			<-ctx.Done() // the failing sibling must cancel this call
			return "", ctx.Err()
		}
		return kind + " summary", nil
	}}
}

func TestRun(t *testing.T) {
	history := ids([]Entry{userE("a"), asstE("b")})
	prefix := ids([]Entry{userE("c"), asstE("d")})
	tests := []struct {
		name      string
		req       Request
		parallel  bool
		fail      string
		want      string
		wantErr   string
		wantCalls int
	}{
		{"no split: one call", Request{History: history}, false, "", "history summary", "", 1},
		{"split: two parallel calls joined", Request{History: history, TurnPrefix: prefix, PreviousSummary: "P"}, true, "", "history summary\n\n---\n\n**Turn Context (split turn)**\n\nprefix summary", "", 2},
		{"split without new history carries the previous summary", Request{TurnPrefix: prefix, PreviousSummary: "old"}, false, "", "old\n\n---\n\n**Turn Context (split turn)**\n\nprefix summary", "", 1},
		{"split without any history", Request{TurnPrefix: prefix}, false, "", "No prior history.\n\n---\n\n**Turn Context (split turn)**\n\nprefix summary", "", 1},
		{"prefix failure cancels the history call", Request{History: history, TurnPrefix: prefix}, false, "prefix", "", "fake summarizer, turn prefix: model down", 2},
		{"history failure", Request{History: history, TurnPrefix: prefix}, false, "history", "", "fake summarizer, history: model down", 2},
		{"single call failure", Request{History: history}, false, "history", "", "fake summarizer: model down", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{fail: tt.fail}
			if tt.parallel {
				r.wait = &sync.WaitGroup{}
				r.wait.Add(2)
			}
			got, err := Run(t.Context(), r.summarizer(), tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Run error = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("Run = %q, %v; want %q", got, err, tt.want)
			}
			if len(r.reqs) != tt.wantCalls {
				t.Fatalf("calls = %d, want %d", len(r.reqs), tt.wantCalls)
			}
			for _, req := range r.reqs {
				if turnPrefixOnly(req) && req.PreviousSummary != "" {
					t.Errorf("turn-prefix call got the previous summary")
				}
				if !turnPrefixOnly(req) && len(req.TurnPrefix) > 0 && len(tt.req.TurnPrefix) > 0 && len(tt.req.History) > 0 {
					t.Errorf("history call of a split turn got the prefix")
				}
			}
		})
	}
	if _, err := Run(t.Context(), nil, Request{}); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("Run(nil) error = %v, want ErrNotConfigured", err)
	}
}

func TestRunExtractiveSplitTurn(t *testing.T) {
	path := session("s")
	got, err := Run(t.Context(), Extractive{}, Request{History: path[:9], TurnPrefix: path[9:]})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Goal", "**Turn Context (split turn)**", "## Original Request\nPrefer table tests."} {
		if !strings.Contains(got, want) {
			t.Errorf("split-turn summary lacks %q:\n%s", want, got)
		}
	}
}
