package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/sessionmem/sessionmem/mcpserver"
	"github.com/sessionmem/sessionmem/ops"
	"github.com/sessionmem/sessionmem/storage"
)

// readyTimeout bounds one readiness check: a load balancer's probe times out after a
// second or more, and a store that takes longer to answer is not one to send requests to.
const readyTimeout = time.Second

// opsServer is what serve offers an operator (package ops): /healthz, /readyz and /metrics
// on the HTTP transport's listener (wrap), and on the loopback --metrics-addr listener when
// one is set, for every transport.
type opsServer struct {
	metrics *ops.Metrics
	health  http.Handler
	ready   http.Handler
	token   string
	logger  *slog.Logger
	srv     *http.Server // the --metrics-addr listener's; nil without one
}

// startOps builds the handlers for store, ready while the store is usable and the server is
// not shutting down (d), and starts the --metrics-addr listener when cfg has one.
func startOps(cfg serveConfig, store storage.Store, d *drain, e *env, logger *slog.Logger) (*opsServer, error) {
	o := &opsServer{token: cfg.Token, logger: logger, health: ops.Healthz()}
	mo := ops.MetricsOptions{Tools: mcpserver.ToolNames(), Backend: "local"}
	if isURLStore(cfg.Store) {
		mo.Backend = "postgres" // the only backend opened by URL (openStore)
	}
	if il, ok := store.(storage.IndexLagger); ok {
		mo.IndexLag = il.IndexLag
	}
	if ps, ok := store.(ops.PoolStatter); ok {
		mo.Pool = ps.PoolStat
	}
	// A store in a server is ready while the server answers; one in a directory, while the
	// directory takes new files.
	storeReady := ops.DirsWritable(cfg.Store, filepath.Join(cfg.Store, "sessions"))
	if p, ok := store.(storage.Pinger); ok {
		storeReady = p.Ping
	}
	o.metrics = ops.NewMetrics(mo)
	o.ready = ops.Readyz(readyTimeout, logger.With("check", "readyz"), d.readyCheck, ops.ReadyCheck(storeReady))
	if cfg.MetricsAddr == "" {
		return o, nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.MetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", o.metrics.Handler())
	mux.Handle("/healthz", o.health)
	mux.Handle("/readyz", o.ready)
	// Loopback only (checked with the flag), so no token; the Origin check still keeps
	// browsers' cross-site requests out.
	o.srv = &http.Server{Handler: guard(mux, "", logger), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(slogWriter{logger}, "", 0)}
	// Tests and scripts read this line to find the port when ADDR ends in :0.
	fmt.Fprintf(e.stderr, "sessionmem: serving metrics on http://%s/metrics\n", ln.Addr())
	go func() {
		if err := o.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener", "err", err)
		}
	}()
	return o, nil
}

// wrap serves /healthz and /readyz without a token (a load balancer's probes carry none, and
// they reveal nothing), /metrics behind the token (guard), and everything else through next.
func (o *opsServer) wrap(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", o.health)
	mux.Handle("/readyz", o.ready)
	mux.Handle("/metrics", guard(o.metrics.Handler(), o.token, o.logger))
	mux.Handle("/", next)
	return mux
}

// close stops the --metrics-addr listener.
func (o *opsServer) close() {
	if o.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := o.srv.Shutdown(ctx); err != nil {
		o.srv.Close()
	}
}

// readyCheck fails once shutdown has begun: the load balancer stops sending requests while
// the running calls finish.
func (d *drain) readyCheck(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return errors.New("shutting down")
	}
	return nil
}
