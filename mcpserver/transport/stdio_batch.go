package transport

import (
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
)

// Batches over stdio (batch.go says what is served and what refused). Each element is routed
// as if it had been read alone, in the order of the array: it waits for the requests it
// conflicts with and runs when its turn comes, so a batch takes effect as its requests sent
// one by one would. Its answers are collected in a batchSink instead of written, and go out
// as one line once the last one is in.

// batch serves a batch, msg, read as one line.
func (c *stdioConn) batch(msg gjson.Result) {
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if version == "" {
		version = batchVersion(msg) // a 2026-07-28 client negotiates nothing
	}
	elems, e, ok := openBatch(msg, version)
	if !ok {
		c.replyError(e)
		return
	}
	b := &batchSink{c: c, open: 1}
	for _, el := range elems {
		if !el.IsObject() {
			b.add(errNotObject.encode())
			continue
		}
		// The line was checked for depth and validity as a whole; text that is not UTF-8
		// is looked for element by element (CheckUTF8 reads one message).
		line, _ := CheckUTF8([]byte(el.Raw))
		if own := c.route(line, gjson.ParseBytes(line), b); own != nil {
			// A tool call free to run; the reader cannot run it and go on reading the batch.
			go func() {
				c.send(own)
				<-c.slots
				c.running.Done()
			}()
		}
	}
	b.release()
}

// batchSink collects the answers to a batch's elements and writes them as one message when
// the last element that may be answered is done. open counts what may still answer: each
// request in flight, and the routing of the elements itself.
type batchSink struct {
	c       *stdioConn
	mu      sync.Mutex
	open    int
	answers [][]byte
}

// hold counts one more element to wait for; nil (no batch) does nothing.
func (b *batchSink) hold() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.open++
	b.mu.Unlock()
}

// add records an answer.
func (b *batchSink) add(answer []byte) {
	b.mu.Lock()
	b.answers = append(b.answers, answer)
	b.mu.Unlock()
}

// release counts an element done (answered or not), and writes the batch's answers once all
// are: nothing when no element was answered (all were notifications or answers), as
// JSON-RPC 2.0 says. nil (no batch) does nothing.
func (b *batchSink) release() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.open--
	done := b.open == 0
	answers := b.answers
	b.mu.Unlock()
	if done && len(answers) > 0 {
		if err := b.c.writeLine(joinBatch(answers)); err != nil {
			b.c.log.Warn("stdio: write", "err", err)
		}
	}
}

// answerError answers a message with an error of ours: to the client, or to its batch b.
func (c *stdioConn) answerError(b *batchSink, e rpcError) {
	if b == nil {
		c.replyError(e)
		return
	}
	b.add(e.encode())
}

// answer writes mcp-go's answer to a message: to the client, or to its batch b.
func (c *stdioConn) answer(b *batchSink, msg mcp.JSONRPCMessage) { c.answerThen(b, msg, nil) }

// answerThen is answer that runs then, when set, once the client has the whole answer but its
// line's end (writeLineThen), or once the answer is in its batch (which goes out later, with
// the batch's last answer).
func (c *stdioConn) answerThen(b *batchSink, msg mcp.JSONRPCMessage, then func()) {
	if b == nil {
		c.writeMessageThen(msg, then)
		return
	}
	enc, err := encodeAnswer(msg)
	if err == nil {
		b.add(enc)
		c.recycle(msg)
	} else {
		c.log.Warn("stdio: encode answer", "err", err)
	}
	if then != nil {
		then()
	}
}
