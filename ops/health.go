package ops

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// Healthz answers 200 "ok" to every request: the process is up and serves HTTP. It checks
// nothing else, so an orchestrator restarts the process only when it stopped answering.
func Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		noStore(w)
		io.WriteString(w, "ok\n")
	})
}

// ReadyCheck reports whether the server can do its work now; ctx bounds it.
type ReadyCheck func(ctx context.Context) error

// Readyz answers 200 "ready" when every check passes within timeout, and 503 "not ready"
// otherwise: a load balancer sends requests only to a ready server. The body never says why
// (it is served without a token); the reason is logged when readiness changes. Requests that
// arrive while a check runs share its result, so a slow store is not checked by a pile of
// probes at once.
func Readyz(timeout time.Duration, logger *slog.Logger, checks ...ReadyCheck) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &readiness{checks: checks, timeout: timeout, log: logger}
}

type readiness struct {
	checks  []ReadyCheck
	timeout time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	running *readyRun // the check under way, nil when none
	state   int       // 0 unknown, 1 ready, 2 not ready: what was last logged
}

type readyRun struct {
	done chan struct{}
	err  error
}

var errReadyTimeout = errors.New("readiness check timed out")

func (r *readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	noStore(w)
	if err := r.check(req.Context()); err != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "not ready\n")
		return
	}
	io.WriteString(w, "ready\n")
}

// check runs the checks (or joins the run under way) and waits at most timeout for it.
func (r *readiness) check(ctx context.Context) error {
	r.mu.Lock()
	run := r.running
	if run == nil {
		run = &readyRun{done: make(chan struct{})}
		r.running = run
		// In its own goroutine with its own deadline: a check stuck in a system call (a
		// hung network file system) must not hold the probe past its timeout.
		go r.do(run)
	}
	r.mu.Unlock()
	t := time.NewTimer(r.timeout)
	defer t.Stop()
	select {
	case <-run.done:
		return run.err
	case <-t.C:
		r.note(errReadyTimeout)
		return errReadyTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *readiness) do(run *readyRun) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	var err error
	for _, c := range r.checks {
		if err = c(ctx); err != nil {
			break
		}
	}
	run.err = err
	r.mu.Lock()
	r.running = nil
	r.mu.Unlock()
	close(run.done)
	r.note(err)
}

// note logs a change of readiness, with the reason when it is lost.
func (r *readiness) note(err error) {
	state := 1
	if err != nil {
		state = 2
	}
	r.mu.Lock()
	changed := r.state != state
	r.state = state
	r.mu.Unlock()
	switch {
	case !changed:
	case err != nil:
		r.log.Warn("not ready", "err", err)
	default:
		r.log.Info("ready")
	}
}

func noStore(w http.ResponseWriter) { w.Header().Set("Cache-Control", "no-store") }

// DirsWritable returns a check that creates and removes a file in each directory (the local
// store's own directory and its sessions directory): a full or read-only file system, a
// missing directory or lost permissions fail it. The file is hidden (.readyz-…) and removed
// at once; a store ignores files it does not know.
func DirsWritable(dirs ...string) ReadyCheck {
	return func(context.Context) error {
		for _, dir := range dirs {
			f, err := os.CreateTemp(dir, ".readyz-*")
			if err != nil {
				return err
			}
			_, werr := f.Write([]byte{'\n'})
			cerr := f.Close()
			rerr := os.Remove(f.Name())
			if err := errors.Join(werr, cerr, rerr); err != nil {
				return err
			}
		}
		return nil
	}
}
