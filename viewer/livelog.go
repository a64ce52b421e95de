package viewer

import (
	"log/slog"
	"sync"
	"time"
)

// pollReminder is how often a live poll failure that goes on is logged again.
const pollReminder = time.Minute

// pollHealth turns the live streams' poll results into a few log lines for the whole viewer:
// every open stream polls PollInterval apart (4 times a second by default), so during a
// database outage logging each failure would flood the log, and more so with several tabs.
// One Handler has one pollHealth, shared by its streams.
//
// It logs a failure when failures start, again at most every pollReminder while they go on
// (with how many it left out), and "live updates resumed" at the first success after a
// logged failure. Failure lines are at most pollReminder apart even when streams alternate
// between failing and succeeding (one session unreadable, the others fine): a failure
// shortly after a recovery waits for the reminder, so that case logs two lines a minute, not
// eight a second.
type pollHealth struct {
	log *slog.Logger
	now func() time.Time

	mu       sync.Mutex
	failing  bool      // the last poll failed
	reported bool      // a failure was logged and its recovery not yet
	since    time.Time // when the failing began
	logged   time.Time // when a failure was last logged
	missed   int       // failures not logged since then
}

// failed records a poll of session that failed with err.
func (p *pollHealth) failed(session string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if !p.failing {
		p.failing, p.since = true, now
	}
	if !p.logged.IsZero() && now.Sub(p.logged) < pollReminder {
		p.missed++
		return
	}
	msg := "viewer live updates failing: cannot poll the store; retrying"
	if p.reported {
		msg = "viewer live updates still failing"
	}
	p.log.Warn(msg, "session", session, "err", err, "for", now.Sub(p.since).Round(time.Second), "not_logged", p.missed)
	p.reported, p.logged, p.missed = true, now, 0
}

// ok records a poll that succeeded.
func (p *pollHealth) ok() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.failing {
		return
	}
	p.failing = false
	if p.reported {
		p.reported = false
		p.log.Info("viewer live updates resumed", "after", p.now().Sub(p.since).Round(time.Millisecond), "failures_not_logged", p.missed)
		p.missed = 0
	}
}
