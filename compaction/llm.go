package compaction

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Defaults of the llm summarizer.
const (
	DefaultLLMMaxInputTokens = 100000
	// DefaultLLMTimeout bounds one request when LLMConfig.HTTPClient is nil; summarizing a
	// long conversation can take minutes, but a hung endpoint must not hang a compaction.
	DefaultLLMTimeout = 5 * time.Minute
)

// llm is the OpenAI-compatible chat-completions summarizer.
type llm struct {
	cfg    LLMConfig
	client *http.Client
}

// NewLLM returns the llm summarizer, or ErrNotConfigured if cfg has no URL or model.
func NewLLM(cfg LLMConfig) (Summarizer, error) {
	if strings.TrimSpace(cfg.URL) == "" || strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("llm summarizer needs an endpoint URL and a model name: %w", ErrNotConfigured)
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("llm summarizer URL %q must start with http:// or https://: %w", cfg.URL, ErrNotConfigured)
	}
	if cfg.MaxInputTokens <= 0 {
		cfg.MaxInputTokens = DefaultLLMMaxInputTokens
	}
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = SummaryMaxTokens
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultLLMTimeout}
	}
	return &llm{cfg: cfg, client: client}, nil
}

// Name implements Summarizer.
func (*llm) Name() string { return "llm" }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model     string        `json:"model"`
	Messages  []chatMessage `json:"messages"`
	MaxTokens int           `json:"max_tokens"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// Summarize implements Summarizer: one chat-completions call with the BuildPrompt messages.
func (l *llm) Summarize(ctx context.Context, req Request) (string, error) {
	if req.MaxInputTokens <= 0 || req.MaxInputTokens > l.cfg.MaxInputTokens {
		req.MaxInputTokens = l.cfg.MaxInputTokens
	}
	p := BuildPrompt(req)
	body, err := json.Marshal(chatRequest{
		Model:     l.cfg.Model,
		Messages:  []chatMessage{{Role: "system", Content: p.System}, {Role: "user", Content: p.User}},
		MaxTokens: min(p.MaxTokens, l.cfg.MaxOutputTokens),
	})
	if err != nil {
		return "", fmt.Errorf("llm request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, l.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("llm request to %s: %w", l.cfg.URL, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if l.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+l.cfg.APIKey)
	}
	resp, err := l.client.Do(hreq)
	if err != nil {
		return "", fmt.Errorf("llm request to %s: %w", l.cfg.URL, err)
	}
	defer resp.Body.Close()
	// A summary is at most a few tens of KB; the cap keeps a misbehaving endpoint from
	// exhausting memory.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return "", fmt.Errorf("llm response from %s: %w", l.cfg.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("llm endpoint %s answered HTTP %d: %s: %w", l.cfg.URL, resp.StatusCode, snippet(raw), ErrModelResponse)
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return "", fmt.Errorf("llm endpoint %s sent a body that is not a chat completion (%v): %s: %w", l.cfg.URL, err, snippet(raw), ErrModelResponse)
	}
	if len(cr.Choices) == 0 {
		return "", fmt.Errorf("llm endpoint %s returned no choices: %s: %w", l.cfg.URL, snippet(raw), ErrModelResponse)
	}
	out := strings.TrimSpace(cr.Choices[0].Message.Content)
	if out == "" {
		return "", fmt.Errorf("llm endpoint %s returned an empty summary (finish_reason %q): %w", l.cfg.URL, cr.Choices[0].FinishReason, ErrModelResponse)
	}
	return out, nil
}

// snippet shortens a response body for an error message.
func snippet(b []byte) string {
	s := clip(string(b), 300)
	if s == "" {
		s = "(empty body)"
	}
	return s
}
