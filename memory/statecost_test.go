package memory

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// heapOf returns the heap each of n states built by build keeps (measured over n, so that
// what other goroutines allocate meanwhile is a small part).
func heapOf(n int, build func() *state) (int, *state) {
	var m0, m1 runtime.MemStats
	sts := make([]*state, n)
	// Twice: sync.Pools give their contents back over two collections, and what the
	// second one frees must not count against the states.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for i := range sts {
		sts[i] = build()
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(sts)
	return (int(m1.HeapAlloc) - int(m0.HeapAlloc)) / n, sts[0]
}

// TestStateCost: the estimate the cache is bounded by is within a factor of 1.3 of the heap
// a state of 2,000 messages really keeps, with client message ids and without.
func TestStateCost(t *testing.T) {
	for _, ids := range []bool{true, false} {
		t.Run(fmt.Sprintf("client ids %v", ids), func(t *testing.T) {
			s := newTestService(t, Options{})
			var id string
			for b := range 40 {
				var msgs []Message
				for i := range 50 {
					m := user("", fmt.Sprintf("message %d of batch %d", i, b))
					if ids {
						m.ID = fmt.Sprintf("msg_%032d", b*50+i)
					}
					msgs = append(msgs, m)
				}
				id = mustSave(t, s, SaveRequest{SessionID: id, WorkingDir: "/w", Messages: msgs}).SessionID
			}
			recs := recordsOf(t, s, id)
			var h storage.Header
			s.store.View(t.Context(), id, func(r storage.Reader) error { h = r.Header(); return nil })
			// The store's background work (sealing, the search index catching up with the
			// saves) allocates, and holds the service until it ends: on a loaded machine it
			// ran during the measurement. Nothing below needs the store.
			if err := s.store.Close(); err != nil {
				t.Fatal(err)
			}
			build := func() *state {
				st := newState(h)
				if err := st.applyAll(recs); err != nil {
					t.Fatal(err)
				}
				return st
			}
			// The most of three measurements: what the runtime frees meanwhile (objects
			// whose finalizers ran, such as the closed store's) can only make one smaller.
			heap, st := heapOf(20, build)
			for range 2 {
				if h2, _ := heapOf(20, build); h2 > heap {
					heap = h2
				}
			}
			cost := st.cost()
			// The service's own cache holds this session's state: were the service
			// collected during the measurement, that state's heap would be subtracted.
			runtime.KeepAlive(recs)
			runtime.KeepAlive(s)
			t.Logf("%d entries: heap %d bytes (%d per entry), estimate %d", len(st.nodes), heap, heap/len(st.nodes), cost)
			if r := float64(cost) / float64(heap); r < 1/1.3 || r > 1.3 {
				t.Errorf("estimate %d for %d bytes of heap", cost, heap)
			}
		})
	}
}

// TestStateCacheBounded: the cache keeps at most cacheBudget bytes of states, evicting the least
// recently used, and always the state in use.
func TestStateCacheBounded(t *testing.T) {
	s := newTestService(t, Options{NoSnapshots: true})
	var ids []string
	for range 6 {
		var msgs []Message
		for i := range 200 {
			msgs = append(msgs, user(fmt.Sprintf("m%d", i), "text"))
		}
		ids = append(ids, mustSave(t, s, SaveRequest{WorkingDir: "/w", Messages: msgs}).SessionID)
	}
	per := s.cached(t, ids[0]).cost()
	check := func(budget int, want []string) {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		var got []string
		sum := 0
		for _, e := range s.lru {
			got = append(got, e.id)
			sum += e.bytes
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || sum != s.cacheUsed || len(s.cache) != len(s.lru) || sum > budget && len(got) > 1 {
			t.Fatalf("cache %v (%d bytes, counted %d; %d in the map), want %v within %d", got, sum, s.cacheUsed, len(s.cache), want, budget)
		}
	}
	// Room for all six.
	for _, id := range ids {
		s.cached(t, id)
	}
	check(cacheBudget, ids)
	// Room for two and a half: the least recently used go.
	defer func(b int) { cacheBudget = b }(cacheBudget)
	cacheBudget = 5 * per / 2
	s.cached(t, ids[1])
	check(cacheBudget, []string{ids[5], ids[1]})
	// Room for less than one: the state in use stays.
	cacheBudget = per / 2
	s.cached(t, ids[3])
	check(cacheBudget, []string{ids[3]})
	s.forget(ids[3])
	check(cacheBudget, nil)
}
