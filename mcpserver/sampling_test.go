package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/memory"
)

// fakeModel answers sampling requests like a client's model would.
type fakeModel struct {
	calls  atomic.Int32
	mu     sync.Mutex
	system string
	user   string
	answer func(ctx context.Context) (string, error)
	image  bool // answer with an image instead of text
}

func (m *fakeModel) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	m.calls.Add(1)
	m.mu.Lock()
	m.system = req.SystemPrompt
	if len(req.Messages) > 0 {
		// On the input_required path the content arrives as generic JSON.
		content, _ := mcp.ParseSamplingContent(req.Messages[0].Content)
		if tc, ok := mcp.AsTextContent(content); ok {
			m.user = tc.Text
		}
	}
	m.mu.Unlock()
	text := "## Goal\nsampled summary"
	if m.answer != nil {
		var err error
		if text, err = m.answer(ctx); err != nil {
			return nil, err
		}
	}
	var content any = mcp.NewTextContent(text)
	if m.image {
		content = mcp.NewImageContent("iVBORw0KGgo=", "image/png")
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: content},
		Model:           "fake-model",
		StopReason:      "endTurn",
	}, nil
}

func TestSamplingSummarizer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		legacy     bool
		summarizer string
	}{
		{"2026-07-28 input_required, explicit", false, "sampling"},
		{"2026-07-28 input_required, auto", false, "auto"},
		{"2025-11-25 server-initiated, explicit", true, "sampling"},
		{"2025-11-25 server-initiated, auto", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &fakeModel{}
			f := newFixture(t, fixtureOpts{sampler: model, legacy: tc.legacy})
			id := f.newSession(dir, "long", 30, strings.Repeat("detail ", 100))
			args := obj{"session_id": id, "keep_recent_tokens": 1000}
			if tc.summarizer != "" {
				args["summarizer"] = tc.summarizer
			}
			var c memory.CompactResult
			f.ok("session_compact", args, &c)
			if got, want := c.Status, memory.StatusCompacted; got != want {
				t.Fatalf("status = %q, want %q (%+v)", got, want, c)
			}
			if got, want := c.Summarizer, "sampling"; got != want {
				t.Errorf("summarizer = %q, want %q", got, want)
			}
			if !strings.Contains(c.Summary, "sampled summary") {
				t.Errorf("summary = %q, want the model's text", c.Summary)
			}
			if model.calls.Load() == 0 {
				t.Fatal("the client's model was never asked")
			}
			model.mu.Lock()
			defer model.mu.Unlock()
			if model.system == "" || !strings.Contains(model.user, "detail") {
				t.Errorf("sampling request lacks the prompt: system %q, user %.100q", model.system, model.user)
			}
		})
	}
}

func TestSamplingFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		legacy bool
		answer func(ctx context.Context) (string, error)
		image  bool
		want   []string
	}{
		{"model error", true, func(context.Context) (string, error) { return "", errors.New("user declined") }, false, []string{"sampling summarizer failed", "user declined", "agent"}},
		{"timeout", true, func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }, false, []string{"did not answer in time"}},
		{"empty answer", true, func(context.Context) (string, error) { return "  ", nil }, false, []string{"the sampling summarizer failed: the client's model answered with blank text;"}},
		{"empty answer, 2026-07-28", false, func(context.Context) (string, error) { return "  ", nil }, false, []string{"the sampling summarizer failed: the client's model answered with blank text;"}},
		{"image answer", true, nil, true, []string{"the sampling summarizer failed: the client's model answered with image content, not text;"}},
		{"image answer, 2026-07-28", false, nil, true, []string{"the sampling summarizer failed: the client's model answered with image content, not text;"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &fakeModel{answer: tc.answer, image: tc.image}
			f := newFixture(t, fixtureOpts{sampler: model, legacy: tc.legacy, server: Options{SamplingTimeout: 200 * time.Millisecond}})
			id := f.newSession(dir, "long", 30, strings.Repeat("detail ", 100))
			got := f.fails("session_compact", obj{"session_id": id, "summarizer": "sampling", "keep_recent_tokens": 1000}, tc.want...)
			// Each layer's name once: not "failed: sampling summarizer: mcp sampling: …".
			for _, w := range []string{"sampling summarizer:", "mcp sampling:", "mcp.TextContent", "mcp.ImageContent"} {
				if strings.Contains(got, w) {
					t.Errorf("error %q holds %q", got, w)
				}
			}
			var r memory.ResumeResult
			f.ok("session_resume", obj{"session_id": id}, &r)
			if r.Summary != "" {
				t.Errorf("a failed compaction stored a summary: %q", r.Summary)
			}
		})
	}
}

// TestSamplingRoundsCarryState drives the 2026-07-28 flow by hand for a compaction that needs
// two summaries (a split turn): answers of an earlier round must survive in the request state.
func TestSamplingRoundsCarryState(t *testing.T) {
	reqA := compaction.Request{History: []compaction.Entry{{ID: "1", Kind: compaction.KindMessage, Message: []byte(`{"role":"user","content":[{"type":"text","text":"a"}]}`)}}}
	reqB := compaction.Request{TurnPrefix: []compaction.Entry{{ID: "2", Kind: compaction.KindMessage, Message: []byte(`{"role":"user","content":[{"type":"text","text":"b"}]}`)}}}
	keyA, keyB := promptKey(compaction.BuildPrompt(reqA)), promptKey(compaction.BuildPrompt(reqB))
	if keyA == keyB {
		t.Fatal("different prompts share a key")
	}
	answer := func(text string) mcp.InputResponse {
		return mcp.NewSamplingInputResponse(mcp.CreateMessageResult{
			SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(text)}})
	}

	// Round 1: both summaries are needed.
	s := &sampling{can: true, modern: true}
	for _, r := range []compaction.Request{reqA, reqB} {
		if _, err := s.summarize(t.Context(), r); !errors.Is(err, errNeedsInput) {
			t.Fatalf("round 1: err = %v, want errNeedsInput", err)
		}
	}
	ask := s.inputRequest()
	if ask == nil || len(ask.InputRequests) != 2 {
		t.Fatalf("round 1: want 2 input requests, got %+v", ask)
	}
	// Round 2: the client answered only A (say B was cancelled); A goes into the state.
	s = &sampling{can: true, modern: true, answers: decodeState(ask.RequestState),
		responses: mcp.InputResponses{keyA: answer("summary A")}}
	if got, err := s.summarize(t.Context(), reqA); err != nil || got != "summary A" {
		t.Fatalf("round 2 A = %q, %v", got, err)
	}
	if _, err := s.summarize(t.Context(), reqB); !errors.Is(err, errNeedsInput) {
		t.Fatalf("round 2 B: err = %v, want errNeedsInput", err)
	}
	ask = s.inputRequest()
	if ask == nil || len(ask.InputRequests) != 1 || ask.RequestState == "" {
		t.Fatalf("round 2: want 1 input request and state, got %+v", ask)
	}
	// Round 3: B answered; A comes from the state.
	s = &sampling{can: true, modern: true, answers: decodeState(ask.RequestState),
		responses: mcp.InputResponses{keyB: answer("summary B")}}
	for r, want := range map[*compaction.Request]string{&reqA: "summary A", &reqB: "summary B"} {
		if got, err := s.summarize(t.Context(), *r); err != nil || got != want {
			t.Errorf("round 3: got %q, %v; want %q", got, err, want)
		}
	}
	if s.inputRequest() != nil {
		t.Error("round 3 still asks for input")
	}
}

func TestSamplingStateDecoding(t *testing.T) {
	for _, st := range []string{"", "!!", "e30", encodeState(nil)} {
		if got := decodeState(st); len(got) != 0 {
			t.Errorf("decodeState(%q) = %v, want none", st, got)
		}
	}
	in := map[string]string{"summary-1": "text ✓"}
	if got := decodeState(encodeState(in)); got["summary-1"] != "text ✓" {
		t.Errorf("round trip = %v", got)
	}
}

func TestCompactProgress(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var got atomic.Int32
	f.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			got.Add(1)
		}
	})
	id := f.newSession(dir, "long", 30, strings.Repeat("detail ", 100))
	req := mcp.CallToolRequest{}
	req.Params.Name = "session_compact"
	req.Params.Arguments = obj{"session_id": id, "summarizer": "extractive", "keep_recent_tokens": 1000}
	req.Params.Meta = &mcp.Meta{ProgressToken: "p1"}
	res, err := f.c.CallTool(t.Context(), req)
	if err != nil || res.IsError {
		t.Fatalf("compact: %v %s", err, text(res))
	}
	deadline := time.Now().Add(time.Second)
	for got.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got.Load() == 0 {
		t.Error("no progress notification arrived")
	}
}

func TestClientCanSample(t *testing.T) {
	modern := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true,
		ClientCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}})
	if can, isModern := clientCanSample(modern); !can || !isModern {
		t.Errorf("modern with sampling: can=%v modern=%v", can, isModern)
	}
	noCaps := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true})
	if can, _ := clientCanSample(noCaps); can {
		t.Error("modern without capabilities can sample")
	}
	if can, _ := clientCanSample(t.Context()); can {
		t.Error("no session can sample")
	}
}

// TestSamplingUnusableAnswer: a 2026-07-28 client's answer that is there but gives no text
// fails the summarizer with what was wrong. Before, an answer that was not a sampling result
// at all ("str") counted as none, so the server asked the same question every round until
// the client gave up; answers without content read "answered with non-text content".
func TestSamplingUnusableAnswer(t *testing.T) {
	req := compaction.Request{History: []compaction.Entry{{ID: "1", Kind: compaction.KindMessage, Message: []byte(`{"role":"user","content":[{"type":"text","text":"a"}]}`)}}}
	key := promptKey(compaction.BuildPrompt(req))
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"not an object", `"str"`, "the client's answer to the sampling request is not a sampling result"},
		{"no content", `{"role":"assistant","model":"m"}`, "the client's answer holds no content"},
		{"an error object", `{"error":{"code":-1,"message":"declined"}}`, "the client's answer holds no content"},
		{"content a bare string", `{"role":"assistant","content":"plain","model":"m"}`, "the client's model answered with content that is not text"},
		{"blank text", `{"role":"assistant","content":{"type":"text","text":" \n"},"model":"m"}`, "the client's model answered with blank text"},
		{"audio", `{"role":"assistant","content":{"type":"audio","data":"AAAA","mimeType":"audio/wav"},"model":"m"}`, "the client's model answered with audio content, not text"},
		{"text", `{"role":"assistant","content":[{"type":"text","text":"the summary"}],"model":"m"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs mcp.InputResponses
			if err := json.Unmarshal([]byte(`{"`+key+`":`+tc.raw+`}`), &rs); err != nil {
				t.Fatalf("responses: %v", err)
			}
			s := &sampling{can: true, modern: true, responses: rs}
			got, err := s.summarize(t.Context(), req)
			switch {
			case tc.want == "" && (err != nil || got != "the summary"):
				t.Fatalf("got %q, %v; want the summary", got, err)
			case tc.want == "":
			case err == nil || errors.Is(err, errNeedsInput) || err.Error() != tc.want:
				t.Fatalf("err = %v, want %q", err, tc.want)
			case s.inputRequest() != nil:
				t.Error("the client is asked again")
			}
		})
	}
}
