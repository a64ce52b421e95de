package viewer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
)

// logRecorder is a slog.Handler keeping "LEVEL message" lines.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Level.String()+" "+r.Message)
	return nil
}

func (l *logRecorder) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// TestPollHealth: an outage of three minutes seen by three streams polling four times a
// second logs its start, a reminder a minute, and its end; streams alternating between
// failing and succeeding log at most a failure and a recovery a minute.
func TestPollHealth(t *testing.T) {
	rec := &logRecorder{}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &pollHealth{log: slog.New(rec), now: func() time.Time { return clock }}
	down := errors.New("the database is unreachable")
	for range 4 * 180 {
		for s := range 3 {
			p.failed(fmt.Sprint("s", s), down)
		}
		clock = clock.Add(250 * time.Millisecond)
	}
	for range 3 {
		p.ok()
	}
	want := "WARN viewer live updates failing: cannot poll the store; retrying|WARN viewer live updates still failing|" +
		"WARN viewer live updates still failing|INFO viewer live updates resumed"
	if got := strings.Join(rec.take(), "|"); got != want {
		t.Errorf("outage logged:\n%s\nwant\n%s", got, want)
	}

	// One session's stream fails, another's succeeds, for two minutes.
	for range 4 * 120 {
		p.failed("bad", down)
		p.ok()
		clock = clock.Add(250 * time.Millisecond)
	}
	if got := rec.take(); len(got) > 6 {
		t.Errorf("alternating failures logged %d lines: %q", len(got), got)
	}
}

// flakyStore is a store whose Get fails, as a database that cannot be reached does, while
// down is set.
type flakyStore struct {
	storage.Store
	down atomic.Bool
}

func (s *flakyStore) Get(ctx context.Context, id string) (storage.Meta, error) {
	if s.down.Load() {
		return storage.Meta{}, fmt.Errorf("the database is unreachable: %w", storage.ErrUnavailable)
	}
	return s.Store.Get(ctx, id)
}

// TestLiveOutageLog: three open streams through a store outage of half a second (150
// failed polls) log it once and its end once, and deliver what was saved meanwhile.
func TestLiveOutageLog(t *testing.T) {
	inner, err := openStore(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &flakyStore{Store: inner}
	svc := memory.New(store, memory.Options{})
	t.Cleanup(func() {
		svc.Close()
		inner.Close()
	})
	r := save(t, svc, memory.SaveRequest{Messages: []memory.Message{text("0", "start")}})
	rec := &logRecorder{}
	srv, _ := serve(t, svc, Options{PollInterval: 10 * time.Millisecond, Logger: slog.New(rec)})
	var streams []<-chan sseEvent
	for range 3 {
		ev := openEvents(t, srv.URL+"/api/sessions/"+r.SessionID+"/events?after="+r.LeafID)
		nextEvent(t, ev, 5*time.Second) // session
		streams = append(streams, ev)
	}
	store.down.Store(true)
	time.Sleep(500 * time.Millisecond)
	save(t, svc, memory.SaveRequest{SessionID: r.SessionID, Messages: []memory.Message{text("1", "during")}})
	store.down.Store(false)
	for _, ev := range streams {
		if e := nextEvent(t, ev, 5*time.Second); e.name != "entries" || !strings.Contains(e.data, "during") {
			t.Fatalf("after the outage: %+v", e)
		}
	}
	want := "WARN viewer live updates failing: cannot poll the store; retrying|INFO viewer live updates resumed"
	if got := strings.Join(rec.take(), "|"); got != want {
		t.Errorf("outage logged:\n%s\nwant\n%s", got, want)
	}
}
