package main

// The session viewer: `sessionmem ui` serves it alone; `serve --http` serves it at / beside
// the MCP endpoints (withViewer). The viewer package owns the pages, the API and their
// security checks; this file only listens, prints the address and routes.

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/viewer"
)

const uiHelp = `Usage: sessionmem ui [--addr 127.0.0.1:0] [--open]

Serve the session viewer in the browser: browse sessions by project and time, read one
(summaries, durable facts, files read and modified, tool calls and results), search them
all, watch an open session update live, export one as JSONL or delete it.

It listens on loopback and prints the address. With SESSIONMEM_TOKEN set the viewer
requires the token: the printed link carries a one-time login code (valid 15 minutes) that
sets a cookie in the browser that opens it; /?token=<SESSIONMEM_TOKEN> does the same any
time, and other clients send "Authorization: Bearer <token>".

Flags:
  --addr ADDR         address to listen on (default 127.0.0.1:0: a free port)
  --open              open the viewer in the default browser
  --allow-remote      allow a non-loopback --addr (requires SESSIONMEM_TOKEN)
  --store DIR|URL     store directory or PostgreSQL URL (postgres://...) (default
                      $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem, else
                      ~/.local/share/sessionmem)

Examples:
  sessionmem ui --open
  SESSIONMEM_TOKEN=$(openssl rand -hex 16) sessionmem ui --addr 127.0.0.1:8090
`

func uiCommand() command {
	return command{name: "ui", summary: "serve the session viewer in the browser", run: runUI}
}

func runUI(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("ui", uiHelp)
	addr := c.String("addr", "127.0.0.1:0", "")
	open := c.Bool("open", false, "")
	remote := c.Bool("allow-remote", false, "")
	pos, err := c.parse(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	if len(pos) > 0 {
		return c.usageError(e, "unexpected argument %q", pos[0])
	}
	token := e.getenv("SESSIONMEM_TOKEN")
	if err := checkListenAddr(*addr, *remote, token != ""); err != nil {
		return c.usageError(e, "%v", err)
	}
	cs, err := openCLIStore(e, *c.store, openOptions{})
	if err != nil {
		return err
	}
	defer cs.close(e)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	// As serve does: the sessions worked on last are the likeliest to be opened first.
	go func() {
		// A warm-up is an optimisation: whatever goes wrong in it must not end the viewer.
		defer func() {
			if p := recover(); p != nil {
				cs.logger.Error("warm-up failed", "panic", fmt.Sprint(p))
			}
		}()
		if err := cs.svc.Warm(ctx, warmSessions); err != nil && ctx.Err() == nil {
			cs.logger.Debug("warm-up", "err", err)
		}
	}()
	h := viewer.New(cs.svc, viewer.Options{Token: token, AllowRemote: *remote, Logger: cs.logger, Done: ctx.Done()})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(slogWriter{cs.logger}, "", 0)}
	link := viewerBase(ln.Addr().String()) + h.LoginPath()
	// Tests and scripts read this line to find the port when --addr ends in :0.
	fmt.Fprintf(e.stderr, "sessionmem: session viewer at %s (Ctrl-C stops it)\n", link)
	if *open {
		if err := openBrowser(link); err != nil {
			fmt.Fprintf(e.stderr, "sessionmem: could not open a browser (%v); open the link above\n", err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}

// viewerBase is the viewer's origin for a listening address (a wildcard address is opened
// on loopback).
func viewerBase(hostport string) string {
	if h, p, err := net.SplitHostPort(hostport); err == nil && (h == "0.0.0.0" || h == "::") {
		hostport = net.JoinHostPort("127.0.0.1", p)
	}
	return "http://" + hostport
}

func openBrowser(link string) error {
	name, args := "xdg-open", []string{link}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler", link}
	}
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it; the browser outlives the opener
	return nil
}

// withViewer serves the viewer's paths (viewer.Owns) with the viewer, which does its own
// checks (a browser cannot send the bearer header the MCP endpoints require), and everything
// else with next. It prints the viewer's address (with a one-time login link when a token
// is set) on stderr.
func withViewer(ctx context.Context, next http.Handler, svc *memory.Service, cfg serveConfig, logger *slog.Logger, stderr io.Writer, base string) http.Handler {
	ui := viewer.New(svc, viewer.Options{Token: cfg.Token, AllowRemote: cfg.AllowRemote, Logger: logger, Done: ctx.Done()})
	fmt.Fprintf(stderr, "sessionmem: session viewer at %s%s\n", base, ui.LoginPath())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if viewer.Owns(r.URL.Path) {
			ui.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
