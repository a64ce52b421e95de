package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sessionmem/sessionmem/compaction"
)

// samplingMaxTokens caps a sampled summary: 0.8 × compaction.ReserveTokens, the same budget the
// llm summarizer gets.
const samplingMaxTokens = compaction.ReserveTokens * 8 / 10

// errNeedsInput aborts a compaction whose summary must first be sampled by a 2026-07-28
// client: the handler answers input_required and the client retries the call.
var errNeedsInput = errors.New("summary must be sampled by the client first")

// sampling is one session_compact call's view of MCP sampling, for both protocol eras:
//
//   - Legacy clients (2025-11-25 and older) get a server-initiated sampling/createMessage
//     through RequestSampling, bounded by Options.SamplingTimeout.
//   - 2026-07-28 clients cannot receive server-initiated requests: the summarizer records what
//     it needs and fails; the handler then answers input_required, and the client retries the
//     whole call with the answers. The retry re-runs the compaction from scratch, so answers
//     are keyed by a hash of the prompt: an unchanged session asks for the same prompt and
//     finds its answer, a changed one asks again. Answers of earlier rounds (a split turn
//     needs two summaries) travel in the request state, which the client echoes back.
type sampling struct {
	can       bool
	modern    bool
	timeout   time.Duration
	responses mcp.InputResponses

	mu      sync.Mutex
	answers map[string]string
	pending map[string]mcp.CreateMessageParams
}

func newSampling(ctx context.Context, req mcp.CallToolRequest, o *Options) *sampling {
	can, modern := clientCanSample(ctx)
	s := &sampling{can: can, modern: modern, timeout: o.SamplingTimeout,
		responses: req.Params.InputResponses, answers: decodeState(req.Params.RequestState)}
	return s
}

// clientCanSample reports whether the calling client declared sampling, and whether it speaks
// the 2026-07-28 protocol. mcp-go does not check the capability for us.
func clientCanSample(ctx context.Context) (can, modern bool) {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Sampling != nil, true
	}
	if server.InProcessSamplingHandlerFromContext(ctx) != nil {
		return true, false
	}
	sess := server.ClientSessionFromContext(ctx)
	if _, ok := sess.(server.SessionWithSampling); !ok {
		return false, false // e.g. legacy SSE, which has no way to send the request
	}
	if ci, ok := sess.(server.SessionWithClientInfo); ok {
		return ci.GetClientCapabilities().Sampling != nil, false
	}
	return false, false
}

// summarizer returns the "sampling" summarizer, or nil when the client cannot sample.
func (s *sampling) summarizer() compaction.Summarizer {
	if !s.can {
		return nil
	}
	return compaction.SummarizerFunc{N: "sampling", F: s.summarize}
}

func (s *sampling) summarize(ctx context.Context, req compaction.Request) (string, error) {
	p := compaction.BuildPrompt(req)
	params := mcp.CreateMessageParams{
		Messages:     []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(p.User)}},
		SystemPrompt: p.System,
		MaxTokens:    min(samplingMaxTokens, p.MaxTokens), // the summary's share of its size budget
		// A summary is worth a capable model; it is not latency critical.
		ModelPreferences: &mcp.ModelPreferences{IntelligencePriority: 0.8, SpeedPriority: 0.2, CostPriority: 0.3},
	}
	if s.modern {
		key := promptKey(p)
		if text, ok, err := s.answer(key); err != nil || ok {
			return text, err
		}
		s.mu.Lock()
		if s.pending == nil {
			s.pending = map[string]mcp.CreateMessageParams{}
		}
		s.pending[key] = params
		s.mu.Unlock()
		return "", errNeedsInput
	}
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return "", errors.New("no MCP server in context")
	}
	sctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	//nolint:staticcheck // Deprecated in 2026-07-28, still the only way to reach legacy clients.
	res, err := srv.RequestSampling(sctx, mcp.CreateMessageRequest{
		Request:             mcp.Request{Method: string(mcp.MethodSamplingCreateMessage)},
		CreateMessageParams: params,
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("the client did not answer within %v: %w", s.timeout, err)
		}
		return "", err
	}
	return samplingText(res)
}

// answer finds the sampled text for key in earlier rounds' state or this round's responses.
// ok is false when neither holds an answer (the client is to be asked); an answer without
// text (blank, or an image) is an error: asking again would only repeat the round until the
// client gives up on the call.
func (s *sampling) answer(key string) (text string, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if text, ok := s.answers[key]; ok {
		return text, true, nil
	}
	res := server.SamplingResponse(s.responses, key)
	if res == nil {
		if _, sent := s.responses[key]; sent {
			// Present but not a sampling result: asking again would get the same.
			return "", false, errors.New("the client's answer to the sampling request is not a sampling result")
		}
		return "", false, nil
	}
	if text, err = samplingText(res); err != nil {
		return "", false, err
	}
	if s.answers == nil {
		s.answers = map[string]string{}
	}
	s.answers[key] = text
	return text, true, nil
}

// inputRequest returns the input_required result asking for what the summarizer still needs,
// or nil when it needs nothing.
func (s *sampling) inputRequest() *mcp.CallToolResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	b := server.NewInputRequestBuilder(encodeState(s.answers))
	for key, params := range s.pending {
		b.Sample(key, params)
	}
	return b.ToolResult()
}

func promptKey(p compaction.Prompt) string {
	h := sha256.Sum256([]byte(p.System + "\x00" + p.User))
	return "summary-" + hex.EncodeToString(h[:8])
}

type samplingState struct {
	V       int               `json:"v"`
	Answers map[string]string `json:"answers"`
}

func encodeState(answers map[string]string) string {
	if len(answers) == 0 {
		return ""
	}
	b, _ := json.Marshal(samplingState{V: 1, Answers: answers})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeState reads answers carried from earlier rounds; anything unreadable counts as none
// (the worst case is asking the client again).
func decodeState(state string) map[string]string {
	if state == "" {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil {
		return nil
	}
	var st samplingState
	if json.Unmarshal(b, &st) != nil || st.V != 1 {
		return nil
	}
	return st.Answers
}

// samplingText extracts the text of a sampling result, whichever form its content took
// (typed on the legacy path, generic JSON when it came back in inputResponses).
func samplingText(res *mcp.CreateMessageResult) (string, error) {
	if res == nil {
		return "", errors.New("the client's answer was empty")
	}
	content, err := mcp.ParseSamplingContent(res.Content)
	if err != nil {
		return "", fmt.Errorf("the client's answer is not MCP content: %w", err)
	}
	if content == nil {
		return "", errors.New("the client's answer holds no content")
	}
	var parts []string
	other := "" // the kind of the first content that is not text
	add := func(c any) {
		switch v := c.(type) {
		case mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		default:
			if other == "" {
				other = contentKind(v)
			}
		}
	}
	if list, ok := content.([]mcp.Content); ok {
		for _, c := range list {
			add(c)
		}
	} else {
		add(content)
	}
	text := strings.TrimSpace(strings.Join(parts, "\n"))
	switch {
	case text != "":
		return text, nil
	case len(parts) > 0:
		return "", errors.New("the client's model answered with blank text")
	case other != "":
		return "", fmt.Errorf("the client's model answered with %s content, not text", other)
	}
	return "", errors.New("the client's model answered with content that is not text")
}

// contentKind names a sampling answer's content that is not text, for an error message.
func contentKind(c any) string {
	switch c.(type) {
	case mcp.ImageContent, *mcp.ImageContent:
		return "image"
	case mcp.AudioContent, *mcp.AudioContent:
		return "audio"
	case mcp.ResourceLink, *mcp.ResourceLink, mcp.EmbeddedResource, *mcp.EmbeddedResource:
		return "resource"
	}
	return ""
}
