package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"
)

// stdioSession is the one client of a stdio connection as mcp-go sees it. ServeStdio hands
// each message straight to MCPServer.HandleMessage with this session in the context, instead
// of piping it into mcp-go's StdioServer: that server decodes every line several times before
// serving it (as a sampling, elicitation and roots answer, then as a request) and moves each
// request across three goroutines, which on a small machine cost more than the handler.
// What the StdioServer's session did for a server, this one does too: it carries the client's
// info, capabilities, protocol version and log level, delivers notifications, and sends
// sampling requests to the client and routes the answers back (ServeStdio passes every
// answer from the client to deliver). Elicitation and roots are not offered: no tool uses them.
type stdioSession struct {
	c             *stdioConn
	notifications chan mcp.JSONRPCNotification
	initialized   atomic.Bool
	logLevel      atomic.Value // mcp.LoggingLevel
	clientInfo    atomic.Value // mcp.Implementation
	clientCaps    atomic.Value // mcp.ClientCapabilities
	version       atomic.Value // string

	lastID  atomic.Int64
	mu      sync.Mutex
	waiting map[int64]chan samplingAnswer
}

type samplingAnswer struct {
	result *mcp.CreateMessageResult
	err    error
}

var (
	_ server.SessionWithLogging         = (*stdioSession)(nil)
	_ server.SessionWithClientInfo      = (*stdioSession)(nil)
	_ server.SessionWithSampling        = (*stdioSession)(nil)
	_ server.SessionWithProtocolVersion = (*stdioSession)(nil)
)

func newStdioSession(c *stdioConn) *stdioSession {
	return &stdioSession{c: c, notifications: make(chan mcp.JSONRPCNotification, 100), waiting: map[int64]chan samplingAnswer{}}
}

// SessionID is the id mcp-go's own stdio session has; one stdio connection per process.
func (s *stdioSession) SessionID() string { return "stdio" }

// NotificationChannel is drained by pumpNotifications.
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }

// Initialize marks the session ready for notifications (notifications/initialized).
func (s *stdioSession) Initialize() {
	s.logLevel.Store(mcp.LoggingLevelError)
	s.initialized.Store(true)
}

// Initialized reports whether Initialize was called.
func (s *stdioSession) Initialized() bool { return s.initialized.Load() }

// SetLogLevel records the client's logging/setLevel.
func (s *stdioSession) SetLogLevel(level mcp.LoggingLevel) { s.logLevel.Store(level) }

// GetLogLevel returns the client's log level (error until it sets one).
func (s *stdioSession) GetLogLevel() mcp.LoggingLevel {
	if l, ok := s.logLevel.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelError
}

// GetClientInfo returns what the client said about itself.
func (s *stdioSession) GetClientInfo() mcp.Implementation {
	v, _ := s.clientInfo.Load().(mcp.Implementation)
	return v
}

// SetClientInfo records what the client said about itself.
func (s *stdioSession) SetClientInfo(v mcp.Implementation) { s.clientInfo.Store(v) }

// GetClientCapabilities returns the client's declared capabilities.
func (s *stdioSession) GetClientCapabilities() mcp.ClientCapabilities {
	v, _ := s.clientCaps.Load().(mcp.ClientCapabilities)
	return v
}

// SetClientCapabilities records the client's declared capabilities.
func (s *stdioSession) SetClientCapabilities(v mcp.ClientCapabilities) { s.clientCaps.Store(v) }

// ProtocolVersion returns the negotiated protocol version ("" before initialize).
func (s *stdioSession) ProtocolVersion() string {
	v, _ := s.version.Load().(string)
	return v
}

// SetProtocolVersion records the negotiated protocol version.
func (s *stdioSession) SetProtocolVersion(v string) { s.version.Store(v) }

// RequestSampling sends sampling/createMessage to the client and waits for its answer (or
// ctx). The request is written like mcp-go's stdio server writes it.
func (s *stdioSession) RequestSampling(ctx context.Context, request mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	id := s.lastID.Add(1)
	ch := make(chan samplingAnswer, 1)
	s.mu.Lock()
	s.waiting[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, id)
		s.mu.Unlock()
	}()
	b, err := json.Marshal(struct {
		JSONRPC string                  `json:"jsonrpc"`
		ID      int64                   `json:"id"`
		Method  string                  `json:"method"`
		Params  mcp.CreateMessageParams `json:"params"`
	}{mcp.JSONRPC_VERSION, id, string(mcp.MethodSamplingCreateMessage), request.CreateMessageParams})
	if err != nil {
		return nil, fmt.Errorf("failed to marshal sampling request: %w", err)
	}
	if err := s.c.writeLine(b); err != nil {
		return nil, fmt.Errorf("failed to write sampling request: %w", err)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case a := <-ch:
		return a.result, a.err
	}
}

// deliver passes msg, an answer from the client, to the sampling request waiting for it, and
// reports whether one was.
func (s *stdioSession) deliver(msg gjson.Result) bool {
	id := msg.Get("id")
	if id.Type != gjson.Number {
		return false
	}
	n, err := json.Number(id.Raw).Int64()
	if err != nil {
		return false
	}
	s.mu.Lock()
	ch := s.waiting[n]
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	var a samplingAnswer
	if e := msg.Get("error"); e.Exists() {
		a.err = fmt.Errorf("sampling request failed: %s", e.Get("message").String())
	} else {
		var res mcp.CreateMessageResult
		if err := json.Unmarshal([]byte(msg.Get("result").Raw), &res); err != nil {
			a.err = fmt.Errorf("failed to unmarshal sampling response: %w", err)
		} else if content, err := mcp.ParseSamplingContent(res.Content); err != nil {
			a.err = fmt.Errorf("failed to parse sampling response content: %w", err)
		} else {
			res.Content = content
			a.result = &res
		}
	}
	select {
	case ch <- a:
	default:
	}
	return true
}

// pumpNotifications writes the notifications handlers send until ctx ends.
func (s *stdioSession) pumpNotifications(ctx context.Context) {
	for {
		select {
		case n := <-s.notifications:
			s.c.writeMessage(n)
		case <-ctx.Done():
			return
		}
	}
}
