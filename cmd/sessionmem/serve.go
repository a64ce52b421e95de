package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/internal/buildinfo"
	"github.com/sessionmem/sessionmem/mcpserver"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/redact"
)

// Shutdown budget: running tool calls get drainTimeout to finish after SIGINT/SIGTERM.
const (
	drainTimeout = 10 * time.Second
)

func serveCommand() command {
	return command{
		name:    "serve",
		summary: "run the MCP server (stdio, or streamable HTTP + SSE with --http)",
		run:     runServe,
	}
}

func runServe(ctx context.Context, e *env, args []string) error {
	cfg, err := loadConfig(args, e.getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.stdout, serveHelp)
		return nil
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "sessionmem serve: %v\n", err)
		return errUsage
	}

	red, err := redact.New(cfg.RedactPatterns)
	if err != nil {
		return fmt.Errorf("%s: %w", envRedact, err)
	}
	logger, closeLog, err := serveLogger(cfg, e, red)
	if err != nil {
		return err
	}
	defer closeLog()
	adaptMemoryLimit(ctx, e.getenv, serveMemoryFloor)
	if path := e.getenv("SESSIONMEM_CPUPROFILE"); path != "" {
		// For measuring the server under a real client (docs/BENCHMARKS.md); written when
		// the server stops.
		stop, err := startCPUProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	if path := e.getenv("SESSIONMEM_MEMPROFILE"); path != "" {
		// A heap profile rewritten every 10 s while the server runs (a soak kills it).
		go writeHeapProfiles(ctx, path, 10*time.Second)
	}

	opts := memory.Options{Logger: logger, FileMapping: cfg.FileMapping, Redact: red.String}
	if cfg.LLM.URL != "" {
		if opts.LLM, err = compaction.NewLLM(cfg.LLM); err != nil {
			return fmt.Errorf("llm summarizer: %w", err)
		}
	}

	store, err := openServeStore(ctx, cfg.Store, logger)
	if err != nil {
		return err
	}
	defer func() {
		// Close seals the tails this process wrote; errors here must still reach the user.
		if cerr := store.Close(); cerr != nil {
			logger.Error("close store", "err", cerr)
		}
	}()

	svc := memory.New(store, opts)
	// Before the store closes (deferred calls run last first): the state snapshots still due
	// are written, so the next start reads a snapshot instead of whole logs.
	defer svc.Close()
	d := &drain{}
	opsSrv, err := startOps(cfg, store, d, e, logger)
	if err != nil {
		return err
	}
	defer opsSrv.close()
	mcpSrv := mcpserver.New(svc, mcpserver.Options{
		Version:         buildVersion(),
		Logger:          logger,
		SamplingTimeout: cfg.SamplingTimeout,
		Gate:            d.gate,
		Observer:        opsSrv.metrics,
	})
	var ln net.Listener
	if cfg.HTTPAddr != "" {
		// Before the background work starts: a server that cannot listen stops here, with
		// that one error.
		if ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
		}
	}
	// The background work ends before the store closes (deferred calls run last first), so a
	// server that returns, for whatever reason, never logs that work failing on a closed store.
	bctx, stopBackground := context.WithCancel(ctx)
	defer stopBackground()
	// Last, just before serving: the warm-up's decoding and allocation competed with building
	// the metrics and the tools for the two cores of a small machine, and put 5 ms on every
	// start's answer to initialize (docs/BENCHMARKS.md).
	startBackground(bctx, svc, cfg, red, logger)
	logger.Info("sessionmem serving", "store", storeLabel(cfg.Store), "transport", transportName(cfg), "version", buildVersion())
	if ln == nil {
		return serveStdio(ctx, mcpSrv, d, e, logger)
	}
	return serveHTTP(ctx, ln, mcpSrv, svc, d, opsSrv, cfg, e, logger)
}

// serveLogger makes the server's logger: to stderr or cfg.LogFile, every record redacted.
// closeLog closes the log file, if any.
func serveLogger(cfg serveConfig, e *env, red *redact.Redactor) (logger *slog.Logger, closeLog func(), err error) {
	logOut, closeLog := e.stderr, func() {}
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("open log file: %w", err)
		}
		closeLog = func() { f.Close() }
		// The whole line too, as on stderr (redactingWriter): a rule can match across an
		// attribute's key and value, which the handler below redacts one at a time.
		logOut = &redactWriter{w: f, r: red}
	}
	// Every log record, at every level and from every package, is redacted before it is
	// written: a secret in a request must not reach the log file either.
	return slog.New(redact.NewHandler(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}), red)), closeLog, nil
}

// startBackground starts what a server does beside answering calls, none of which may delay
// the client's initialize: the warm-up, the redaction of what older rules stored, retention.
func startBackground(ctx context.Context, svc *memory.Service, cfg serveConfig, red *redact.Redactor, logger *slog.Logger) {
	// The first resume after a start is usually of the session worked on last: build its
	// state in the background so that call reads a page, not the whole log.
	go func() {
		// A warm-up is an optimisation: whatever goes wrong in it must not end the server.
		defer func() {
			if p := recover(); p != nil {
				logger.Error("warm-up failed", "panic", fmt.Sprint(p))
			}
		}()
		if err := svc.Warm(ctx, warmSessions); err != nil && ctx.Err() == nil {
			logger.Debug("warm-up", "err", err)
		}
	}()
	// What an older version (or older rules) stored is redacted again once per rule set
	// (see redact_marker.go).
	go redactOnUpgrade(ctx, svc, cfg.Store, red, logger)
	if cfg.Retention.Enabled() {
		go retain(ctx, svc, cfg.Retention, logger)
	}
}

// writeHeapProfiles writes a heap profile to path every interval until ctx ends, each
// replacing the last whole (written beside it, then renamed).
func writeHeapProfiles(ctx context.Context, path string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f, err := os.Create(path + ".tmp")
		if err != nil {
			continue
		}
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil && cerr == nil {
			os.Rename(path+".tmp", path)
		}
	}
}

// startCPUProfile writes a CPU profile to path until the returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("SESSIONMEM_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("SESSIONMEM_CPUPROFILE: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// warmSessions is how many of the most recently updated sessions a server start prepares.
const warmSessions = 2

// retentionEvery is how often a long-running server applies its retention policy.
const retentionEvery = time.Hour

// retain applies the retention policy now and then hourly until ctx ends.
func retain(ctx context.Context, svc *memory.Service, p memory.RetentionPolicy, logger *slog.Logger) {
	t := time.NewTicker(retentionEvery)
	defer t.Stop()
	for {
		res, err := svc.ApplyRetention(ctx, p)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			logger.Warn("retention failed", "err", err)
		case len(res.Deleted) > 0 || len(res.InUse) > 0:
			logger.Info("retention", "deleted", len(res.Deleted), "kept_in_use", len(res.InUse), "kept", res.Kept)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func transportName(cfg serveConfig) string {
	if cfg.HTTPAddr == "" {
		return "stdio"
	}
	return "http"
}

func buildVersion() string { return buildinfo.Version() }

// serveStdio runs MCP on stdin/stdout until the client closes stdin (every request read is
// answered first) or a signal arrives. mcpserver.ServeStdio keeps a pipelined client's
// requests in order (see there).
func serveStdio(ctx context.Context, s *mcpserver.Server, d *drain, e *env, logger *slog.Logger) error {
	// The transport's context is ours, not the signal's: on a signal we first let running
	// calls finish, then stop reading.
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	in, restore := pollableStdin(e.stdin)
	defer restore()
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.ServeStdio(lctx, s, in, e.stdout, mcpserver.StdioOptions{Logger: logger})
	}()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("stdio: %w", err)
		}
		return nil
	case <-ctx.Done():
		logger.Info("shutting down", "reason", context.Cause(ctx))
		d.wait(drainTimeout, logger)
		stop()
		<-done
		return nil
	}
}

// serveHTTP serves streamable HTTP at /mcp, legacy SSE at /sse + /message, the session
// viewer at / (cli_ui.go) and the operator's endpoints (ops.go) on one port, ln's.
func serveHTTP(ctx context.Context, ln net.Listener, s *mcpserver.Server, svc *memory.Service, d *drain, opsSrv *opsServer, cfg serveConfig, e *env, logger *slog.Logger) error {
	base := "http://" + ln.Addr().String()
	mcpHTTP := mcpserver.NewHTTP(s, logger)
	srv := &http.Server{
		Handler:           opsSrv.wrap(withViewer(ctx, guard(mcpHTTP, cfg.Token, logger), svc, cfg, logger, e.stderr, base)),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(slogWriter{logger}, "", 0),
	}
	// Tests and scripts read this line to find the port when ADDR ends in :0.
	fmt.Fprintf(e.stderr, "sessionmem: serving MCP on %s/mcp (legacy SSE: %s/sse)\n", base, base)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "reason", context.Cause(ctx))
	d.wait(drainTimeout, logger)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Long-lived GET/SSE streams would hold Shutdown until its deadline: end them first.
	mcpHTTP.CloseSessions(sctx)
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}

// guard applies the HTTP security checks before MCP sees a request: a browser Origin must be
// a localhost origin (DNS-rebinding and cross-site requests), and with a token configured every
// request needs "Authorization: Bearer <token>".
func guard(next http.Handler, token string, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !localOrigin(origin) {
			logger.Warn("refused request from foreign origin", "origin", origin, "path", r.URL.Path)
			http.Error(w, "Forbidden: Origin "+origin+" is not allowed", http.StatusForbidden)
			return
		}
		if token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="sessionmem"`)
				http.Error(w, "Unauthorized: send Authorization: Bearer <SESSIONMEM_TOKEN>", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func localOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return isLoopback(u.Hostname())
}

// drain tracks running tool calls so shutdown can let them finish, and refuses new ones once
// shutdown has begun.
type drain struct {
	mu       sync.Mutex
	stopping bool
	wg       sync.WaitGroup
}

// writeTools change the store; once started they run to completion even if the client goes
// away, so an interrupted connection never leaves a caller guessing about a half-done call.
var writeTools = map[string]bool{"session_save": true, "session_fork": true, "session_delete": true}

// gate is mcpserver.Options.Gate: it refuses calls once shutdown has begun and counts the
// running ones.
func (d *drain) gate(ctx context.Context, tool string) (context.Context, func(), error) {
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		return nil, nil, errors.New(tool + ": the server is shutting down; retry with a new server")
	}
	d.wg.Add(1)
	d.mu.Unlock()
	if writeTools[tool] {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		return ctx, func() { cancel(); d.wg.Done() }, nil
	}
	return ctx, d.wg.Done, nil
}

func (d *drain) wait(timeout time.Duration, logger *slog.Logger) {
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		logger.Warn("tool calls still running at shutdown", "waited", timeout)
	}
}

// slogWriter adapts the standard logger of net/http servers to slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn(strings.TrimSpace(string(p)))
	return len(p), nil
}
