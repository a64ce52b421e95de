package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// testListingAgrees: after every kind of write (create, a batch, a single record, a barrier
// that starts a new chunk, an update with metadata only, a large batch, another handle's
// write, a delete), Get and List on this handle and on a second one show what a read returns.
func testListingAgrees(t *testing.T, b Backend) {
	s, loc := open(t, b)
	s2 := b.Open(t, loc)
	defer s2.Close()
	ctx := context.Background()
	messages := 0
	agree := func(step, id string) {
		t.Helper()
		var last uint64
		err := s.View(ctx, id, func(r storage.Reader) error {
			last = r.LastSeq()
			n := uint64(0)
			for _, err := range r.Records(1) {
				if err != nil {
					return err
				}
				n++
			}
			if n != last {
				return fmt.Errorf("read %d records, last_seq %d", n, last)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: read: %v", step, err)
		}
		for h, st := range []storage.Store{s, s2} {
			m, err := st.Get(ctx, id)
			if err != nil || m.LastSeq != last || m.Messages != messages {
				t.Fatalf("%s: handle %d gets last_seq %d, messages %d (%v); read %d, wrote %d", step, h, m.LastSeq, m.Messages, err, last, messages)
			}
			l, err := st.List(ctx, storage.ListQuery{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, lm := range l {
				if lm.ID == id {
					found = true
					if lm.LastSeq != last || lm.Messages != messages {
						t.Fatalf("%s: handle %d lists last_seq %d, messages %d; read %d, wrote %d", step, h, lm.LastSeq, lm.Messages, last, messages)
					}
				}
			}
			if !found {
				t.Fatalf("%s: handle %d does not list %s", step, h, id)
			}
		}
	}
	write := func(st storage.Store, recs ...storage.Record) {
		t.Helper()
		err := st.Update(ctx, "a", func(w storage.Writer) error {
			messages += len(recs)
			_, err := w.Append(recs, storage.Meta{Messages: messages})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rec := func(i int) storage.Record {
		return storage.Record{Kind: "message", Data: []byte(fmt.Sprintf(`{"i":%d,"text":%q}`, i, strings.Repeat("x", 300)))}
	}
	create(t, s, "a", "/w", t0)
	agree("create", "a")
	write(s, rec(1), rec(2), rec(3))
	agree("batch", "a")
	write(s, rec(4))
	agree("one record", "a")
	barrier := rec(5)
	barrier.Barrier = true
	write(s, barrier, rec(6))
	agree("barrier", "a")
	write(s)
	agree("metadata only", "a")
	var big []storage.Record
	for i := range 300 {
		big = append(big, rec(100+i))
	}
	write(s, big...)
	agree("large batch", "a")
	write(s2, rec(7))
	agree("other handle", "a")
	for i := range 20 {
		write(s, rec(1000+i))
		agree(fmt.Sprintf("single append %d", i), "a")
	}
	if err := s2.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for h, st := range []storage.Store{s, s2} {
		if _, err := st.Get(ctx, "a"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("handle %d gets a deleted session: %v", h, err)
		}
		if l, _ := st.List(ctx, storage.ListQuery{}); len(l) != 0 {
			t.Fatalf("handle %d lists a deleted session: %+v", h, l)
		}
	}
}
