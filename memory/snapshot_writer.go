package memory

import (
	"context"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// When snapshots are written. Building a state from the log costs about 7 ms per MiB of
// records plus about 4 µs per entry, so a session gets a snapshot once its records pass
// snapshotMinBytes, or snapshotMinEntries entries however small; a smaller one is built from
// its log in a few milliseconds, and a snapshot would only cost disk (about 7-20 bytes per
// entry, mostly the ids, against a few hundred for the compressed entry itself). It is
// written once the session has been idle for snapshotIdle, or has grown by snapshotMaxLag
// records since the last one while busy; not for fewer than snapshotMinGrowth new records,
// since a cold start applies those in microseconds. Close writes what is still due. Writing
// costs about a microsecond per entry, in the background, at most once per idle period.
const (
	snapshotMinBytes   = 256 << 10
	snapshotMinEntries = 500
	snapshotMinGrowth  = 16
	snapshotMaxLag     = 2000
	snapshotIdle       = time.Second
	snapshotTick       = 250 * time.Millisecond
	snapshotTimeout    = 30 * time.Second
)

// worthSnapshot reports whether st is large enough to keep a snapshot of.
func worthSnapshot(st *state) bool {
	return st.logBytes >= snapshotMinBytes || len(st.nodes) >= snapshotMinEntries
}

// snapshotter writes the snapshots of sessions this process changed or built, in the
// background.
type snapshotter struct {
	svc   *Service
	store storage.Snapshots

	mu      sync.Mutex
	pending map[string]pendingSnapshot
	running bool // the worker goroutine runs
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

type pendingSnapshot struct {
	st      *state
	changed time.Time // last change seen
	lag     uint64    // records not yet in a snapshot at that change
}

func newSnapshotter(svc *Service, store storage.Snapshots) *snapshotter {
	return &snapshotter{svc: svc, store: store, pending: map[string]pendingSnapshot{}, stop: make(chan struct{})}
}

// snapshotLater notes that st (of session id) changed; the caller holds st.mu.
func (s *Service) snapshotLater(id string, st *state) {
	sn := s.snaps
	if sn == nil || !worthSnapshot(st) {
		return
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.closed {
		return
	}
	sn.pending[id] = pendingSnapshot{st: st, changed: time.Now(), lag: st.lastSeq - st.snapSeq}
	if !sn.running {
		sn.running = true
		sn.wg.Add(1)
		go sn.run()
	}
}

// run writes the snapshots that are due until nothing is pending (a Service that saves
// nothing keeps no goroutine) or close.
func (sn *snapshotter) run() {
	defer sn.wg.Done()
	t := time.NewTicker(snapshotTick)
	defer t.Stop()
	for {
		select {
		case <-sn.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		var due []string
		var sts []*state
		sn.mu.Lock()
		for id, p := range sn.pending {
			if now.Sub(p.changed) >= snapshotIdle || p.lag >= snapshotMaxLag {
				due, sts = append(due, id), append(sts, p.st)
				delete(sn.pending, id)
			}
		}
		if len(sn.pending) == 0 && len(due) == 0 {
			sn.running = false
			sn.mu.Unlock()
			return
		}
		sn.mu.Unlock()
		for i, id := range due {
			sn.write(id, sts[i])
		}
	}
}

// close stops the worker and writes everything still pending.
func (sn *snapshotter) close() {
	sn.mu.Lock()
	if sn.closed {
		sn.mu.Unlock()
		return
	}
	sn.closed = true
	close(sn.stop)
	sn.mu.Unlock()
	sn.wg.Wait()
	sn.mu.Lock()
	pending := sn.pending
	sn.pending = nil
	sn.mu.Unlock()
	for id, p := range pending {
		sn.write(id, p.st)
	}
}

// write stores st's snapshot if it is still this process's state of the session (a failed
// append drops a state that may hold records the store does not) and enough is new. The
// session is idle, so encoding under st.mu delays nobody for long.
func (sn *snapshotter) write(id string, st *state) {
	st.mu.Lock()
	sn.svc.mu.Lock()
	cached := sn.svc.cache[id] == st
	sn.svc.mu.Unlock()
	if !cached || !worthSnapshot(st) || st.lastSeq < st.snapSeq+snapshotMinGrowth {
		st.mu.Unlock()
		return
	}
	data, gen, seq := st.encodeSnapshot(), st.gen, st.lastSeq
	st.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	if err := sn.store.SaveSnapshot(ctx, id, gen, data); err != nil {
		sn.svc.log.Debug("state snapshot not written", "session", id, "err", err)
		return
	}
	st.mu.Lock()
	st.snapSeq = max(st.snapSeq, seq)
	st.mu.Unlock()
}

// adopt takes over a decoded snapshot's state (o is not used afterwards).
func (st *state) adopt(o *state) {
	st.lastSeq, st.nodes, st.ids, st.client = o.lastSeq, o.nodes, o.ids, o.client
	st.leaf, st.leafIdx, st.linear = o.leaf, o.leafIdx, o.linear
	st.messages, st.compactions = o.messages, o.compactions
	st.preview, st.name, st.model, st.provider = o.preview, o.name, o.model, o.provider
	st.checkpoint, st.updated, st.pinnedCost, st.logBytes = o.checkpoint, o.updated, o.pinnedCost, o.logBytes
}
