package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

func testSecondHandle(t *testing.T, b Backend) {
	s, loc := open(t, b)
	ctx := context.Background()
	s2 := b.Open(t, loc)
	defer s2.Close()
	create(t, s, "a", "/w", t0)
	if _, err := s2.Get(ctx, "a"); err != nil {
		t.Fatalf("second handle does not see a new session: %v", err)
	}
	for i := 1; i <= 5; i++ {
		appendJSON(t, s, "a", storage.Meta{Messages: i}, `{"x":1}`)
		m, err := s2.Get(ctx, "a")
		if err != nil || m.Messages != i || m.LastSeq != uint64(i) {
			t.Fatalf("second handle after append %d: %+v, %v", i, m, err)
		}
		l, _ := s2.List(ctx, storage.ListQuery{})
		if len(l) != 1 || l[0].Messages != i {
			t.Fatalf("second handle's list after append %d: %+v", i, l)
		}
		if got := readAll(t, s2, "a", 1); len(got) != i {
			t.Fatalf("second handle reads %d records, want %d", len(got), i)
		}
	}
	// Appends through the second handle continue the sequence.
	appendJSON(t, s2, "a", storage.Meta{Messages: 6}, `{"from":2}`)
	if got := readAll(t, s, "a", 6); len(got) != 1 || got[0] != `{"seq":6,"from":2}` {
		t.Fatalf("first handle reads %v", got)
	}
	if err := s2.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("first handle after the other's delete: %v", err)
	}
	if err := s.View(ctx, "a", func(storage.Reader) error { return nil }); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("view after the other's delete: %v", err)
	}
}

func testConcurrentAppends(t *testing.T, b Backend) {
	s, loc := open(t, b)
	s2 := b.Open(t, loc)
	defer s2.Close()
	create(t, s, "a", "/w", t0)
	const writers, batches = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		st := s
		if w%2 == 1 {
			st = s2
		}
		wg.Add(1)
		go func(w int, st storage.Store) {
			defer wg.Done()
			for i := 0; i < batches; i++ {
				err := st.Update(context.Background(), "a", func(wr storage.Writer) error {
					_, err := wr.Append([]storage.Record{
						{Data: []byte(fmt.Sprintf(`{"w":%d,"i":%d,"k":0}`, w, i))},
						{Data: []byte(fmt.Sprintf(`{"w":%d,"i":%d,"k":1}`, w, i))},
					}, storage.Meta{Messages: int(wr.LastSeq()) + 2})
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}(w, st)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := readAll(t, s, "a", 1)
	if len(got) != writers*batches*2 {
		t.Fatalf("%d records, want %d", len(got), writers*batches*2)
	}
	next := map[int]int{}
	for i := 0; i < len(got); i += 2 {
		var w, n, k, w2, n2, k2 int
		var seq, seq2 int
		if _, err := fmt.Sscanf(got[i], `{"seq":%d,"w":%d,"i":%d,"k":%d}`, &seq, &w, &n, &k); err != nil {
			t.Fatalf("record %q: %v", got[i], err)
		}
		if _, err := fmt.Sscanf(got[i+1], `{"seq":%d,"w":%d,"i":%d,"k":%d}`, &seq2, &w2, &n2, &k2); err != nil {
			t.Fatalf("record %q: %v", got[i+1], err)
		}
		if seq != i+1 || seq2 != i+2 || k != 0 || k2 != 1 || w != w2 || n != n2 {
			t.Fatalf("batch split or out of order at %d: %s / %s", i, got[i], got[i+1])
		}
		if n != next[w] {
			t.Fatalf("writer %d: batch %d where %d was due", w, n, next[w])
		}
		next[w]++
	}
	m, _ := s2.Get(context.Background(), "a")
	if m.LastSeq != uint64(len(got)) || m.Messages != len(got) {
		t.Fatalf("meta after concurrent appends: %+v", m)
	}
}

// testCreateRace: two handles creating one id at once: exactly one succeeds.
func testCreateRace(t *testing.T, b Backend) {
	s, loc := open(t, b)
	s2 := b.Open(t, loc)
	defer s2.Close()
	for round := 0; round < 5; round++ {
		id := fmt.Sprintf("r%d", round)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			st := s
			if i%2 == 1 {
				st = s2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = st.Create(context.Background(), storage.Header{ID: id, WorkingDir: fmt.Sprintf("/w%d", i)}, storage.Meta{})
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, storage.ErrExists):
				t.Fatalf("create: %v", err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d creates succeeded", round, ok)
		}
	}
}

func testDelete(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	create(t, s, "a", "/w", t0)
	create(t, s, "b", "/w", t0)
	appendJSON(t, s, "a", storage.Meta{}, `{"x":1}`)
	var nonce string
	_ = s.View(ctx, "a", func(r storage.Reader) error { nonce = r.Header().Nonce; return nil })
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := s.Delete(ctx, "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if l, _ := s.List(ctx, storage.ListQuery{}); len(l) != 1 || l[0].ID != "b" {
		t.Fatalf("list after delete: %+v", l)
	}
	if ids, _ := s.IDs(ctx); strings.Join(ids, ",") != "b" {
		t.Fatalf("IDs after delete: %v", ids)
	}
	// The id can be used again; the new session is empty and has a new nonce.
	create(t, s, "a", "/w2", t0)
	err := s.View(ctx, "a", func(r storage.Reader) error {
		if r.LastSeq() != 0 || r.Header().Nonce == nonce || r.Header().WorkingDir != "/w2" {
			return fmt.Errorf("recreated session: last %d header %+v", r.LastSeq(), r.Header())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
