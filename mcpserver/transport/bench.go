package transport

import (
	"context"
	"io"

	"github.com/mark3labs/mcp-go/server"
)

// BenchConn is a stdio connection its caller drives one line at a time, with no reader and
// no workers: what benchmarks of the server's own share of a call use (mcpserver's
// BenchmarkSavePath). It is not for serving.
type BenchConn struct{ c *stdioConn }

// BenchCall is a tools/call that Route let run at once.
type BenchCall struct{ p *pending }

// Arguments are the call's arguments as ServeStdio took them out of the message.
func (call BenchCall) Arguments() []Field { return call.p.args }

// NewBenchConn returns an initialized connection of s that writes to out; close unregisters it.
func NewBenchConn(s *server.MCPServer, out io.Writer, o StdioOptions) (b *BenchConn, close func(), err error) {
	c := newStdioConn(s, out, o)
	c.sess.Initialize()
	c.initSeen = true
	if err := s.RegisterSession(context.Background(), c.sess); err != nil {
		return nil, nil, err
	}
	c.ctx = s.WithContext(context.Background(), c.sess)
	return &BenchConn{c}, func() { s.UnregisterSession(context.Background(), c.sess.SessionID()) }, nil
}

// Route reads line as ServeStdio's reader does; ok is false unless it is a tools/call free to
// run at once, which the caller then passes to Serve or Release.
func (b *BenchConn) Route(line []byte) (call BenchCall, ok bool) {
	p := b.c.handle(line)
	return BenchCall{p}, p != nil
}

// Serve runs a routed call and writes its answer.
func (b *BenchConn) Serve(call BenchCall) {
	b.c.send(call.p)
	<-b.c.slots
	b.c.running.Done()
}

// Release ends a routed call without running it.
func (b *BenchConn) Release(call BenchCall) {
	<-b.c.slots
	b.c.running.Done()
	b.c.finish(call.p.key)
}

// WithArguments returns ctx carrying fields as ServeStdio hands a call's arguments to its
// tool (Arguments reads them).
func WithArguments(ctx context.Context, fields []Field) context.Context {
	return withSentArguments(ctx, fields)
}
