package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"
)

// Ordered stdio. mcp-go's stdio server runs requests concurrently (tool calls on a worker
// pool, everything else on its own goroutine), so a client that writes several requests
// without waiting (a `printf … | sessionmem serve` pipeline) sees them take effect in any
// order, and a tool call may run before initialize. ServeStdio serves stdio itself instead,
// with a sequencer in front of MCPServer.HandleMessage:
//
//   - Requests take effect in the order they were sent wherever the order can matter: a
//     request waits for every earlier request it conflicts with. Requests on one session
//     (tools/call with session_id, resources/read of session://ID…) conflict when one of
//     them writes; requests on the whole store (session_list, session_search, session_resume
//     by working_dir, session_save creating a session, unknown tools) conflict with every
//     request on any session when one of them writes. So reads run in parallel, calls on
//     different sessions run in parallel, and a list sees every save sent before it.
//   - Before initialize only initialize and ping are served (requests of the stateless
//     2026-07-28 protocol, which carry their version, need no initialize); anything else is
//     answered with an error at once. Requests after initialize wait for its answer.
//   - Reading never waits for a request: responses to the server's own requests (sampling
//     results) are passed on as soon as they arrive, so a compaction waiting for the client's
//     model cannot block the connection or deadlock it. Notifications pass at once too
//     (notifications/cancelled withdraws a request still waiting for its turn).
//   - At the end of input every request read is still answered before ServeStdio returns.
//
// The sequencer reads each message's method, id and session id with gjson, then hands the
// message to MCPServer.HandleMessage on the goroutine that waited for its turn, with a
// session of our own (stdio_session.go), and writes the answer itself (encodeMessage).
// Messages that are no request (JSON that is not an object, an id MCP does not allow, a
// method or jsonrpc of another type) are answered with Invalid Request (refuse.go); a batch
// is routed element by element (stdio_batch.go); what is not JSON is served unordered, and
// answered as mcp-go's stdio server answers it.

// StdioOptions configure ServeStdio. The zero value is usable.
type StdioOptions struct {
	// Logger receives transport errors; nil logs nothing.
	Logger *slog.Logger
	// MaxPending bounds requests read but not yet answered (default 1000); beyond it a
	// request is answered at once with a "busy" error instead of queueing.
	MaxPending int
	// MaxMessageBytes bounds one message (default 128 MiB: a 32 MiB session_save batch,
	// escaped).
	MaxMessageBytes int
	// Orders returns how a tool's calls are ordered; a tool it does not know (or a nil
	// Orders) is ordered as a write on the whole store.
	Orders func(tool string) (Order, bool)
	// Recycle, when set, is given a tool answer's RawStructuredContent once it is written:
	// nothing reads it after that, and the buffer of a resume page (megabytes) can serve the
	// next page.
	Recycle func(raw []byte)
}

// Defaults of StdioOptions, and how many tool calls run at once (calls on different sessions;
// mcp-go's stdio server had a worker pool of that size).
const (
	DefaultMaxPending      = 1000
	DefaultMaxMessageBytes = 128 << 20
	StdioWorkers           = 16
)

// JSON-RPC error codes ServeStdio answers with itself.
const (
	codeInvalidRequest = -32600
	codeServerBusy     = -32000
)

// ServeStdio serves s over in and out (newline-delimited JSON-RPC) until in ends, then
// returns once every request read has been answered; or until ctx is cancelled, then at
// once. Only one stdio server may run per process (its session has mcp-go's stdio session
// id, "stdio").
func ServeStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, o StdioOptions) error {
	c := newStdioConn(s, out, o)
	if err := s.RegisterSession(ctx, c.sess); err != nil {
		return fmt.Errorf("register stdio session: %w", err)
	}
	defer s.UnregisterSession(ctx, c.sess.SessionID())
	// Requests run under a context of their own: it ends only after everything read has been
	// answered (or ctx ended), which releases any handler still waiting on it.
	rctx, stop := context.WithCancel(s.WithContext(context.WithoutCancel(ctx), c.sess))
	defer stop()
	c.ctx = rctx
	go c.sess.pumpNotifications(rctx)
	c.running.Add(StdioWorkers)
	for range StdioWorkers {
		go c.worker()
	}
	read := make(chan error, 1)
	c.readErr = read
	c.lead <- struct{}{}
	go c.follower(bufio.NewReaderSize(in, 64<<10))

	var err error
	select {
	case err = <-read:
		// Answer everything read before cancelling the requests' context.
		all := make(chan struct{})
		go func() { c.wg.Wait(); close(all) }()
		select {
		case <-all:
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
	stop()
	c.running.Wait()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// newStdioConn is a connection of s that writes to out, with o's defaults filled in. Its
// session is made but not registered, and nothing runs yet: ServeStdio (or a benchmark)
// registers it and starts the workers and the reader.
func newStdioConn(s *server.MCPServer, out io.Writer, o StdioOptions) *stdioConn {
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &stdioConn{opts: o, out: out, byID: map[string]*pending{}, log: o.Logger, srv: s,
		work: make(chan *pending, o.MaxPending+StdioWorkers), slots: make(chan struct{}, StdioWorkers), lead: make(chan struct{}, 1)}
	c.sess = newStdioSession(c)
	return c
}

// pending is a request read from the client and not yet answered.
type pending struct {
	key   string // the id, normalized as mcp-go echoes it
	scope string // the session a request is about; "" for the whole store
	line  []byte
	done  chan struct{}
	args  []Field    // a tools/call's arguments, when taken out of line (taken)
	batch *batchSink // the batch the request came in, which gets its answer; nil: none
	write bool
	free  bool // stateless (lists of tools, prompts…): waits only for initialize
	init  bool
	tool  bool // a tools/call: runs on a worker
	taken bool // a tools/call's arguments were taken out of line (takeArguments)
	// Set under stdioConn.mu.
	forwarded bool
	cancelled bool
}

// conflicts reports whether b, read after a, must wait for a.
func conflicts(a, b *pending) bool {
	if b.free {
		return a.init
	}
	if a.free {
		return false
	}
	same := a.scope == "" || b.scope == "" || a.scope == b.scope
	return same && (a.write || b.write)
}

type stdioConn struct {
	opts StdioOptions
	log  *slog.Logger
	srv  *server.MCPServer
	sess *stdioSession
	ctx  context.Context // the requests' context: server, session
	out  io.Writer
	// work feeds tool calls whose turn has come to StdioWorkers long-lived goroutines: they
	// bound how many run at once, and a goroutine per call would grow a new stack each time
	// (tens of µs a save). MaxPending bounds what is queued, so sending never blocks.
	work  chan *pending
	slots chan struct{} // a tool call runs holding one: at most StdioWorkers at once

	// Reading: whoever holds lead reads the next line (followers). A follower that read a
	// tool call free to run passes lead on, then runs the call itself: the call starts on
	// the goroutine that read it, with no wake-up of another thread in between (on a busy
	// two-core machine such a wake-up costs from tens of µs to milliseconds), and reading
	// still never waits for a call.
	lead    chan struct{}
	idle    atomic.Int32 // followers waiting for lead
	readErr chan<- error // where reading reports its end

	mu       sync.Mutex
	inflight []*pending // in arrival order
	byID     map[string]*pending
	initSeen bool
	version  string // the protocol version initialize negotiates ("" before it)
	creates  int
	wg       sync.WaitGroup // requests read and not yet answered
	running  sync.WaitGroup // goroutines serving a message

	outm sync.Mutex // serializes writes to the client
}

// readLine reads one line of at most MaxMessageBytes; a longer one is answered with an error
// and skipped.
func (c *stdioConn) readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > c.opts.MaxMessageBytes {
			line = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			c.reply(nil, codeInvalidRequest, fmt.Sprintf("message longer than %d bytes; nothing of it was processed", c.opts.MaxMessageBytes))
			return nil, err
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// handle routes one message: serves it at once, answers it itself, or queues it behind the
// requests it must follow. A tool call that may run at once is returned for the caller to
// run (it holds a slot, and counts in running).
func (c *stdioConn) handle(line []byte) *pending {
	line = bytes.TrimRight(line, "\r\n")
	if e, refused := refuseDeep(line); refused { // before any reader that recurses
		c.replyError(e)
		return nil
	}
	line, _ = CheckUTF8(line)
	if !gjson.ValidBytes(line) {
		c.unordered(line, nil)
		return nil
	}
	msg := gjson.ParseBytes(line)
	switch {
	case msg.IsArray():
		c.batch(msg)
		return nil
	case !msg.IsObject():
		c.replyError(errNotObject)
		return nil
	}
	return c.route(line, msg, nil)
}

// route routes one message, msg parsed from line, as handle says; b is the batch it is an
// element of (nil: none), which gets its answer instead of the client.
func (c *stdioConn) route(line []byte, msg gjson.Result, b *batchSink) *pending {
	env := parseEnvelope(msg)
	method, id := env.method, env.id
	if env.answer() {
		if !c.sess.deliver(msg) { // an answer to the server's own request (sampling)
			c.unordered(line, b)
		}
		return nil
	}
	if e, bad := idError(id); bad {
		c.answerError(b, e)
		return nil
	}
	// From here on the id is absent (a notification), a string or an integer.
	switch {
	case method.Type != gjson.String || env.jsonrpc.Str != "2.0":
		// mcp-go would answer "parse error" to a method or jsonrpc of another type, and
		// nothing to a notification without a method.
		c.answerError(b, rpcError{rawID(id), codeInvalidRequest, wantRequest})
		return nil
	case env.dup != "" && (env.dup == "id" || id.Exists()):
		// JSON leaves a repeated key's meaning open, and mcp-go (the last one counts) would
		// serve another request than the one ordered here (the first): refused, nothing runs.
		rid := rawID(id)
		if env.dup == "id" {
			rid = nil // which id is meant is what cannot be told: null, as JSON-RPC says
		}
		c.answerError(b, rpcError{rid, codeInvalidRequest, fmt.Sprintf("invalid request: the key %q appears more than once; send each key once", env.dup)})
		return nil
	case env.dup != "":
		c.log.Warn("stdio: notification ignored: a key appears more than once", "key", env.dup)
		return nil
	case !id.Exists():
		if method.Str == string(mcp.MethodNotificationCancelled) {
			c.cancel(env.requestID)
		}
		c.notify(line, b) // served at once, in the order read
		return nil
	}
	if b != nil {
		if e, refused := refuseInBatch(method, id); refused {
			c.answerError(b, e)
			return nil
		}
	}
	if method.Str == string(mcp.MethodSubscriptionsListen) {
		c.unordered(line, nil) // long-lived by design: never waited for
		return nil
	}
	key, ok := normalizeID(id.Raw)
	if !ok {
		c.unordered(line, b)
		return nil
	}
	p := &pending{key: key, line: line, done: make(chan struct{}), tool: method.Str == string(mcp.MethodToolsCall), batch: b}
	c.classify(p, method.Str, &env)
	if p.tool {
		c.takeArguments(p, &env)
	}
	modern := env.meta.IsObject() && mcp.IsModernProtocol(env.meta.Get(gjsonEscape(mcp.MetaKeyProtocolVersion)).String())

	ping := method.Str == string(mcp.MethodPing)
	deps, ok := c.register(p, id.Raw, ping, modern)
	if !ok {
		return nil
	}
	if b != nil {
		b.hold() // released once p is answered (send)
	}
	return c.dispatch(p, deps, ping)
}

// register adds p to the requests in flight and returns the channels of those it must wait
// for; a request that cannot be taken (its id is in use, it comes before initialize, too many
// wait) is answered with an error instead, and ok is false.
func (c *stdioConn) register(p *pending, rawID string, ping, modern bool) (deps []chan struct{}, ok bool) {
	c.mu.Lock()
	switch {
	case c.byID[p.key] != nil:
		c.mu.Unlock()
		c.answerError(p.batch, rpcError{json.RawMessage(rawID), codeInvalidRequest,
			fmt.Sprintf("request id %s is already used by a request that has not been answered; use a new id", rawID)})
		return nil, false
	case !c.initSeen && !p.init && !ping && !modern:
		c.mu.Unlock()
		c.answerError(p.batch, rpcError{json.RawMessage(rawID), codeInvalidRequest,
			"server not initialized: send initialize first; only initialize and ping are served before it"})
		return nil, false
	case len(c.byID) >= c.opts.MaxPending:
		c.mu.Unlock()
		c.answerError(p.batch, rpcError{json.RawMessage(rawID), codeServerBusy,
			fmt.Sprintf("server busy: %d requests are waiting for an answer; retry later", len(c.byID))})
		return nil, false
	}
	if p.init {
		c.initSeen = true
		// What mcp-go's initialize will answer, known now: a batch read after it may come
		// before that answer is made.
		c.version = mcp.NegotiateLegacyVersion(gjson.GetBytes(p.line, "params.protocolVersion").String())
	}
	for _, a := range c.inflight {
		if conflicts(a, p) {
			deps = append(deps, a.done)
		}
	}
	c.inflight = append(c.inflight, p)
	c.byID[p.key] = p
	c.wg.Add(1)
	c.mu.Unlock()
	return deps, true
}

// dispatch serves p once the requests in deps are answered: a ping at once, a tool call free to
// run is returned for the caller to run, anything else waits on a goroutine of its own.
func (c *stdioConn) dispatch(p *pending, deps []chan struct{}, ping bool) *pending {
	switch {
	case ping:
		c.send(p) // nothing to wait for, and nothing waits for it
	case p.tool && len(deps) == 0:
		select {
		case c.slots <- struct{}{}:
			c.running.Add(1)
			return p
		default:
			c.work <- p // as many calls run as may: a worker takes it when a slot frees
		}
	default:
		c.running.Add(1)
		go func() {
			defer c.running.Done()
			for _, d := range deps {
				select {
				case <-d:
				case <-c.ctx.Done():
					return
				}
			}
			if p.tool {
				c.work <- p
				return
			}
			c.send(p)
		}()
	}
	return nil
}

// classify sets what a request is about (its scope) and whether it writes: for a tool call,
// as the tool declared it (StdioOptions.Orders).
func (c *stdioConn) classify(p *pending, method string, env *envelope) {
	switch method {
	case string(mcp.MethodInitialize):
		p.init, p.write = true, true
	case string(mcp.MethodToolsCall):
		sid := env.sessionID()
		name := env.name.String()
		if sid.Exists() && (sid.Type != gjson.String || sid.Str == "") {
			p.write = true // refused by the tool; order it with everything to be safe
			return
		}
		var o Order
		known := false
		if c.opts.Orders != nil {
			o, known = c.opts.Orders(name)
		}
		if !known {
			p.write = true // unknown: in order with everything
			return
		}
		p.write = o.Write
		switch {
		case o.Scope == ScopeSession && sid.Exists():
			p.scope = "s:" + sid.Str
		case o.Creates:
			c.mu.Lock()
			c.creates++
			p.scope = "new:" + strconv.Itoa(c.creates) // a new session: only the whole-store requests care
			c.mu.Unlock()
		}
	case string(mcp.MethodResourcesRead):
		if id, ok := strings.CutPrefix(env.uri.String(), "session://"); ok {
			id, _, _ = strings.Cut(id, "/")
			p.scope = "s:" + id
		}
	case string(mcp.MethodPing), string(mcp.MethodToolsList), string(mcp.MethodPromptsList), string(mcp.MethodPromptsGet),
		string(mcp.MethodResourcesList), string(mcp.MethodResourcesTemplatesList), string(mcp.MethodServerDiscover),
		string(mcp.MethodCompletionComplete), string(mcp.MethodSetLogLevel):
		p.free = true
	default:
		p.write = true // unknown: in order with everything
	}
}

// cancel withdraws a request that has not been passed on yet; one already running is
// cancelled by mcp-go, which gets the notification too.
func (c *stdioConn) cancel(id gjson.Result) {
	key, ok := normalizeID(id.Raw)
	if !ok {
		return
	}
	c.mu.Lock()
	if p := c.byID[key]; p != nil && !p.forwarded {
		p.cancelled = true
	}
	c.mu.Unlock()
}

// finish releases the requests waiting for key's.
func (c *stdioConn) finish(key string) {
	c.mu.Lock()
	p := c.byID[key]
	if p == nil {
		c.mu.Unlock()
		return
	}
	delete(c.byID, key)
	for i, x := range c.inflight {
		if x == p {
			c.inflight = append(c.inflight[:i], c.inflight[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	close(p.done)
	c.wg.Done()
}

// reply answers a request with a JSON-RPC error of ours (id nil: null).
func (c *stdioConn) reply(id json.RawMessage, code int, message string) {
	c.replyError(rpcError{id, code, message})
}

func (c *stdioConn) replyError(e rpcError) {
	if err := c.writeLine(e.encode()); err != nil {
		c.log.Warn("stdio: write", "err", err)
	}
}

// normalizeID renders a JSON-RPC id the way mcp-go echoes it (decoded into an any and
// encoded again), so a request and its answer get the same key. The ids clients send (small
// integers, plain ASCII strings) come back as they were written, and are taken as they are
// without the round trip through encoding/json (two reflective passes and their allocations
// on every request).
func normalizeID(raw string) (string, bool) {
	if verbatimID(raw) {
		return raw, true
	}
	if raw == "" {
		return "", false
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil || v == nil {
		return "", false
	}
	switch v.(type) {
	case string, float64:
	default:
		return "", false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// verbatimID reports whether raw is an id that encoding/json writes again exactly as it is:
// an integer of at most 15 digits (a float64 holds it exactly, and encoding/json writes it
// with no fraction or exponent), or a string of printable ASCII with nothing it would escape
// (no backslash escapes, quotes, <, > or &).
func verbatimID(raw string) bool {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		return plainJSON(raw[1 : len(raw)-1])
	}
	digits := strings.TrimPrefix(raw, "-")
	if digits == "" || len(digits) > 15 || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// gjsonEscape escapes a key for a gjson path.
func gjsonEscape(k string) string {
	var b strings.Builder
	for _, r := range k {
		if strings.ContainsRune(".*?|#@\\", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
