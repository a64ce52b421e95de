package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestNewLLMConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  LLMConfig
		ok   bool
	}{
		{"complete", LLMConfig{URL: "http://127.0.0.1:1/v1/chat/completions", Model: "m"}, true},
		{"no URL", LLMConfig{Model: "m"}, false},
		{"no model", LLMConfig{URL: "https://x"}, false},
		{"not http", LLMConfig{URL: "ftp://x", Model: "m"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewLLM(tt.cfg)
			if tt.ok {
				if err != nil || s.Name() != "llm" {
					t.Fatalf("NewLLM = %v, %v", s, err)
				}
				return
			}
			if !errors.Is(err, ErrNotConfigured) {
				t.Fatalf("NewLLM error = %v, want ErrNotConfigured", err)
			}
		})
	}
}

// chatServer answers like a chat-completions endpoint and keeps the last request.
type chatServer struct {
	status int
	body   string
	delay  time.Duration
	got    chatRequest
	auth   string
}

func (c *chatServer) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &c.got); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		c.auth = r.Header.Get("Authorization")
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %s with content type %q", r.Method, r.Header.Get("Content-Type"))
		}
		if c.delay > 0 {
			select {
			case <-time.After(c.delay):
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(c.status)
		io.WriteString(w, c.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestLLMSummarize(t *testing.T) {
	history := ids([]Entry{userE("add retries"), asstE("done")})
	tests := []struct {
		name    string
		srv     chatServer
		req     Request
		want    string
		wantErr string
		maxOut  int
	}{
		{
			name:   "summary",
			srv:    chatServer{status: 200, body: `{"choices":[{"message":{"role":"assistant","content":"  ## Goal\n- retries  "},"finish_reason":"stop"}]}`},
			req:    Request{History: history},
			want:   "## Goal\n- retries",
			maxOut: 2000,
		},
		{
			name:   "turn prefix uses the smaller output cap",
			srv:    chatServer{status: 200, body: `{"choices":[{"message":{"content":"## Original Request"}}]}`},
			req:    Request{TurnPrefix: history},
			want:   "## Original Request",
			maxOut: 2000,
		},
		{
			name:    "HTTP error status",
			srv:     chatServer{status: 429, body: `{"error":{"message":"rate limited"}}`},
			req:     Request{History: history},
			wantErr: "answered HTTP 429: {\"error\":{\"message\":\"rate limited\"}}",
		},
		{
			name:    "no choices",
			srv:     chatServer{status: 200, body: `{"choices":[]}`},
			req:     Request{History: history},
			wantErr: "returned no choices",
		},
		{
			name:    "empty content",
			srv:     chatServer{status: 200, body: `{"choices":[{"message":{"content":""},"finish_reason":"length"}]}`},
			req:     Request{History: history},
			wantErr: `returned an empty summary (finish_reason "length")`,
		},
		{
			name:    "not JSON",
			srv:     chatServer{status: 200, body: `<html>gateway</html>`},
			req:     Request{History: history},
			wantErr: "not a chat completion",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.srv.start(t)
			s, err := NewLLM(LLMConfig{URL: srv.URL, Model: "small-model", APIKey: "sk-test", MaxOutputTokens: 2000})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Summarize(t.Context(), tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrModelResponse) {
					t.Fatalf("Summarize error = %v, want %q wrapping ErrModelResponse", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Summarize = %q, %v; want %q", got, err, tt.want)
			}
			c := tt.srv
			if c.auth != "Bearer sk-test" {
				t.Errorf("Authorization = %q", c.auth)
			}
			p := BuildPrompt(tt.req)
			if c.got.Model != "small-model" || len(c.got.Messages) != 2 ||
				c.got.Messages[0] != (chatMessage{"system", p.System}) || c.got.Messages[1] != (chatMessage{"user", p.User}) {
				t.Errorf("request = %+v", c.got)
			}
			if want := min(tt.maxOut, p.MaxTokens); c.got.MaxTokens != want {
				t.Errorf("max_tokens = %d, want %d", c.got.MaxTokens, want)
			}
		})
	}
}

func TestLLMTrimsInput(t *testing.T) {
	srv := (&chatServer{status: 200, body: `{"choices":[{"message":{"content":"ok"}}]}`})
	ts := srv.start(t)
	var history []Entry
	for range 200 {
		history = append(history, userE(textOf(500)))
	}
	s, err := NewLLM(LLMConfig{URL: ts.URL, Model: "m", MaxInputTokens: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Summarize(t.Context(), Request{History: ids(history)}); err != nil {
		t.Fatal(err)
	}
	sent := EstimateText(srv.got.Messages[0].Content) + EstimateText(srv.got.Messages[1].Content)
	if sent > 10000 || !strings.Contains(srv.got.Messages[1].Content, "earlier messages were left out") {
		t.Fatalf("sent %d tokens (limit 10000), note present: %v", sent, strings.Contains(srv.got.Messages[1].Content, "left out"))
	}
	if srv.auth != "" {
		t.Errorf("Authorization sent without a key: %q", srv.auth)
	}
}

func TestLLMHonoursContext(t *testing.T) {
	srv := (&chatServer{status: 200, body: `{"choices":[{"message":{"content":"late"}}]}`, delay: 10 * time.Second})
	ts := srv.start(t)
	s, err := NewLLM(LLMConfig{URL: ts.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Summarize(ctx, Request{History: ids([]Entry{userE("x")})})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Summarize error = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancellation took %v", d)
	}
}
