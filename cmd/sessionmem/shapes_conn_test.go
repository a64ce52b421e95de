package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// mcpConn is `sessionmem serve` run in this process over pipes: raw JSON-RPC lines in, answers
// out, as a client that waits for each answer sends them.
type mcpConn struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan string
	done   chan error
	stderr *syncBuffer
	next   int
}

// serveInProcess starts serve on store (a directory or a PostgreSQL URL) and initializes it.
func serveInProcess(t *testing.T, store string) *mcpConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &mcpConn{t: t, in: inW, lines: make(chan string, 10000), done: make(chan error, 1), stderr: &syncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		c.done <- run(ctx, []string{"serve", "--store", store}, inR, outW, c.stderr)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 256<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() { c.close(); cancel() })
	c.request("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"shapes","version":"1"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *mcpConn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write to the server: %v\n%s", err, c.stderr.String())
	}
}

// request sends a request with params (raw JSON) and returns its answer.
func (c *mcpConn) request(method, params string) gjson.Result {
	c.t.Helper()
	c.next++
	id := fmt.Sprintf(`"r%d"`, c.next)
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	timeout := time.After(5 * time.Minute)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the server ended before answering %s\n%s", method, c.stderr.String())
			}
			a := gjson.Parse(l)
			if a.Get("id").Raw == id {
				return a
			}
			if a.Get("id").Type == gjson.Null && a.Get("error").Exists() {
				c.t.Fatalf("%s: the server could not read the request: %.300s", method, l)
			}
		case <-timeout:
			c.t.Fatalf("no answer to %s in 5 minutes", method)
		}
	}
}

// tool calls a tool with arguments (raw JSON) and returns its result; a JSON-RPC error fails
// the test, a tool error is the caller's to check (result.isError).
func (c *mcpConn) tool(name, args string) gjson.Result {
	c.t.Helper()
	a := c.request("tools/call", `{"name":"`+name+`","arguments":`+args+`}`)
	if !a.Get("result").Exists() {
		c.t.Fatalf("%s: %.500s", name, a.Raw)
	}
	return a.Get("result")
}

// ok calls a tool that must succeed and returns its structured content.
func (c *mcpConn) ok(name, args string) gjson.Result {
	c.t.Helper()
	r := c.tool(name, args)
	if r.Get("isError").Bool() {
		c.t.Fatalf("%s(%.200s): %.1000s", name, args, r.Get("content.0.text").String())
	}
	return r.Get("structuredContent")
}

// close ends the input and waits for the server to return.
func (c *mcpConn) close() {
	if c.in == nil {
		return
	}
	c.in.Close()
	c.in = nil
	for range c.lines {
	}
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Errorf("serve: %v\n%s", err, c.stderr.String())
		}
	case <-time.After(2 * time.Minute):
		c.t.Errorf("serve did not return after its input ended")
	}
	if s := c.stderr.String(); strings.Contains(s, "panic") {
		c.t.Errorf("the server logged a panic:\n%s", s)
	}
}
