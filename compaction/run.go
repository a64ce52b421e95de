package compaction

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// NoPriorHistory is the history half of a split-turn summary when nothing precedes the turn.
const NoPriorHistory = "No prior history."

// JoinSplitTurn joins a history summary and a turn-prefix summary the way the stored summary
// shows them: the history, a horizontal rule, a bold "Turn Context (split turn)" heading, the
// prefix. An empty history becomes NoPriorHistory; an empty prefix leaves the history alone.
func JoinSplitTurn(history, turnPrefix string) string {
	history, turnPrefix = strings.TrimSpace(history), strings.TrimSpace(turnPrefix)
	if history == "" {
		history = NoPriorHistory
	}
	if turnPrefix == "" {
		return history
	}
	return history + "\n\n---\n\n**Turn Context (split turn)**\n\n" + turnPrefix
}

// Run produces the summary text for req with s. Without a turn prefix it is one call. For a
// split turn it makes two calls in parallel — history (with the previous summary) and turn
// prefix alone — and joins them with JoinSplitTurn; when there is no new history the previous
// summary is carried over unchanged without a call. The first error cancels the other call.
func Run(ctx context.Context, s Summarizer, req Request) (string, error) {
	if s == nil {
		return "", fmt.Errorf("run compaction: %w", ErrNotConfigured)
	}
	if len(req.TurnPrefix) == 0 {
		out, err := s.Summarize(ctx, req)
		if err != nil {
			return "", fmt.Errorf("%s summarizer: %w", s.Name(), err)
		}
		return out, nil
	}
	if len(req.History) == 0 {
		// The previous summary is carried over as it is; the prefix gets what it leaves.
		if req.MaxSummaryTokens > 0 {
			req.MaxSummaryTokens = max(req.MaxSummaryTokens-EstimateText(req.PreviousSummary)-joinTokens, req.MaxSummaryTokens/3, 1)
		}
		prefix, err := summarizePrefix(ctx, s, req)
		if err != nil {
			return "", err
		}
		return JoinSplitTurn(req.PreviousSummary, prefix), nil
	}

	// The two halves share the size budget: two thirds for the history, a third for the prefix.
	prefixReq := req
	if req.MaxSummaryTokens > 0 {
		prefixReq.MaxSummaryTokens = max(req.MaxSummaryTokens/3, 1)
		req.MaxSummaryTokens = max(req.MaxSummaryTokens-prefixReq.MaxSummaryTokens-joinTokens, 1)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		firstErr        error // the failure that cancelled the other call, not its echo
		history, prefix string
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		h := req
		h.TurnPrefix = nil
		out, err := s.Summarize(ctx, h)
		if err != nil {
			fail(fmt.Errorf("%s summarizer, history: %w", s.Name(), err))
			return
		}
		history = out
	}()
	go func() {
		defer wg.Done()
		out, err := summarizePrefix(ctx, s, prefixReq)
		if err != nil {
			fail(err)
			return
		}
		prefix = out
	}()
	wg.Wait()
	if firstErr != nil {
		return "", firstErr
	}
	return JoinSplitTurn(history, prefix), nil
}

// summarizePrefix summarizes the turn prefix alone: a request without history is how
// summarizers recognise the split-turn layout.
func summarizePrefix(ctx context.Context, s Summarizer, req Request) (string, error) {
	out, err := s.Summarize(ctx, Request{
		TurnPrefix:       req.TurnPrefix,
		Instructions:     req.Instructions,
		MaxInputTokens:   req.MaxInputTokens,
		Ledger:           req.Ledger,
		MaxSummaryTokens: req.MaxSummaryTokens,
	})
	if err != nil {
		return "", fmt.Errorf("%s summarizer, turn prefix: %w", s.Name(), err)
	}
	return out, nil
}

// turnPrefixOnly reports whether req asks for the split-turn layout.
func turnPrefixOnly(req Request) bool { return len(req.History) == 0 && len(req.TurnPrefix) > 0 }
