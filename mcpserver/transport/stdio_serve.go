package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"
)

// Serving what the sequencer (stdio.go) let through: reading in turns, running calls, writing
// answers.

// maxIdleFollowers is how many followers wait for lead at most; more exit.
const maxIdleFollowers = 2

// follower reads a line when it holds lead, routes it, passes lead on and runs the call it
// kept for itself, until reading ends or the requests' context does.
func (c *stdioConn) follower(r *bufio.Reader) {
	for {
		c.idle.Add(1)
		select {
		case <-c.lead:
			c.idle.Add(-1)
		case <-c.ctx.Done():
			c.idle.Add(-1)
			return
		}
		line, err := c.readLine(r)
		var own *pending
		if len(bytes.TrimSpace(line)) > 0 {
			own = c.handle(line)
		}
		if err != nil {
			c.readErr <- err // nobody reads again
		} else {
			if c.idle.Load() == 0 {
				go c.follower(r)
			}
			c.lead <- struct{}{}
		}
		if own != nil {
			c.send(own)
			<-c.slots
			c.running.Done()
		}
		if err != nil || c.idle.Load() >= maxIdleFollowers {
			return
		}
	}
}

// worker serves tool calls until the requests' context ends.
func (c *stdioConn) worker() {
	defer c.running.Done()
	for {
		select {
		case p := <-c.work:
			c.slots <- struct{}{}
			c.send(p)
			<-c.slots
		case <-c.ctx.Done():
			return
		}
	}
}

// send serves a request once its turn has come, unless it was cancelled, writes its answer
// and releases the requests that waited for it.
func (c *stdioConn) send(p *pending) {
	c.mu.Lock()
	if p.cancelled {
		c.mu.Unlock()
		p.batch.release()
		c.finish(p.key) // the spec: no answer to a cancelled request
		return
	}
	p.forwarded = true
	c.mu.Unlock()
	ctx, after := withAfterAnswer(c.ctx)
	if p.taken {
		ctx = withSentArguments(ctx, p.args)
	}
	if resp := c.serve(ctx, p.line); resp != nil {
		c.answerThen(p.batch, resp, after.run)
	}
	after.run()       // no answer (a notification's), or already run
	p.batch.release() // before finish: ServeStdio may return once every request is finished
	c.finish(p.key)
}

// takeArguments moves a tools/call's arguments out of the message mcp-go decodes into the
// context the tool reads them from (Arguments), as the fields parseEnvelope read. mcp-go would
// decode them into a map[string]any (allocations for every string of a save's messages, and
// several scans of the line) that no tool uses: each reads its arguments from the JSON as
// sent.
func (c *stdioConn) takeArguments(p *pending, env *envelope) {
	args := env.args
	end := args.Index + len(args.Raw)
	if !args.IsObject() || args.Index <= 0 || end > len(p.line) || string(p.line[args.Index:end]) != args.Raw {
		return // left where it is: mcp-go decodes it, and the tool finds it in RawArguments
	}
	line := make([]byte, 0, len(p.line)-len(args.Raw)+2)
	line = append(line, p.line[:args.Index]...)
	line = append(line, "{}"...)
	line = append(line, p.line[end:]...)
	p.line, p.args, p.taken = line, env.argFields, true
}

// serve runs one message through mcp-go (handleMessage).
func (c *stdioConn) serve(ctx context.Context, line []byte) mcp.JSONRPCMessage {
	return handleMessage(ctx, c.srv, line, c.log)
}

// handleMessage runs one message through s. A panic is answered the way mcp-go's stdio
// server answers it: an internal error to the request's id (none to a notification).
func handleMessage(ctx context.Context, s *server.MCPServer, line []byte, log *slog.Logger) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("panic serving a message", "panic", fmt.Sprint(r))
			var id any
			if raw := gjson.GetBytes(line, "id"); raw.Exists() && json.Unmarshal([]byte(raw.Raw), &id) == nil && id != nil {
				resp = mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
					Error: mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r), nil)}
			}
		}
	}()
	return s.HandleMessage(ctx, line)
}

// notify serves a notification on the read loop (they are quick, and their order counts);
// b, when set, is the batch it came in.
func (c *stdioConn) notify(line []byte, b *batchSink) {
	if resp := c.serve(c.ctx, line); resp != nil {
		c.answer(b, resp)
	}
}

// unordered serves a message outside the ordering, as mcp-go's stdio server would: not JSON
// gets a parse error; a request (it has an id) runs on its own goroutine; anything else (an
// answer nobody waits for) is served at once. b, when set, is the batch it came in.
func (c *stdioConn) unordered(line []byte, b *batchSink) {
	if !json.Valid(line) {
		c.answer(b, mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(nil),
			Error: mcp.NewJSONRPCErrorDetails(mcp.PARSE_ERROR, "Parse error", nil)})
		return
	}
	var base struct {
		ID any `json:"id,omitempty"`
	}
	if json.Unmarshal(line, &base) == nil && base.ID != nil {
		c.running.Add(1)
		b.hold()
		go func() {
			defer c.running.Done()
			if resp := c.serve(c.ctx, line); resp != nil {
				c.answer(b, resp)
			}
			b.release()
		}()
		return
	}
	c.notify(line, b)
}

// writeMessage writes one message to the client: answers, notifications, the server's own
// requests.
func (c *stdioConn) writeMessage(msg any) { c.writeMessageThen(msg, nil) }

// writeMessageThen writes msg as writeMessage does, running then (if set) before the line's
// end (writeLineThen).
func (c *stdioConn) writeMessageThen(msg any, then func()) {
	parts, err := EncodeMessage(msg)
	if err != nil {
		c.log.Warn("stdio: encode answer", "err", err)
		if then != nil {
			then()
		}
		return
	}
	if err := c.writeLineThen(then, parts...); err != nil {
		c.log.Warn("stdio: write", "err", err)
	}
	c.recycle(msg)
}

// recycle gives a tool answer's RawStructuredContent, written, to StdioOptions.Recycle.
func (c *stdioConn) recycle(msg any) {
	if c.opts.Recycle != nil {
		if r, ok := msg.(mcp.JSONRPCResponse); ok {
			if res, ok := r.Result.(*mcp.CallToolResult); ok && res != nil && len(res.RawStructuredContent) > 0 {
				raw := res.RawStructuredContent
				res.RawStructuredContent = nil
				c.opts.Recycle(raw)
			}
		}
	}
}

// writeLine writes the parts of one message and a newline, with no other message between
// them. The last part is the caller's to give away: the newline is appended to it.
func (c *stdioConn) writeLine(parts ...[]byte) error { return c.writeLineThen(nil, parts...) }

// writeLineThen is writeLine that runs then, when set, once the parts are written and before
// the newline: the client has the whole message but cannot have acted on it (it reads
// lines), so whatever then starts is in place before the client's next request, and the
// newline, a byte, is all that then's work competes with (AfterAnswer).
func (c *stdioConn) writeLineThen(then func(), parts ...[]byte) error {
	if then == nil {
		parts[len(parts)-1] = append(parts[len(parts)-1], '\n')
	}
	c.outm.Lock()
	defer c.outm.Unlock()
	for _, p := range parts {
		if _, err := c.out.Write(p); err != nil {
			if then != nil {
				then()
			}
			return err
		}
	}
	if then == nil {
		return nil
	}
	then()
	_, err := c.out.Write([]byte{'\n'})
	return err
}
