// Package storetest is the contract suite every storage backend must pass unchanged (the way
// litestream tests every replica client): a behaviour that differs between backends is a bug.
//
// A backend's test calls Run with a Backend that makes fresh, empty stores and opens
// independent handles on them (a second handle stands for a second server process). After
// every subtest the suite checks that each session's listing agrees with what a read returns.
//
// The optional interfaces are checked for stores that implement them: storage.Searcher
// (the stores must be opened with Docs as their DocsFunc), storage.Rewriter and
// storage.Settings.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// Backend lets the suite create stores.
type Backend struct {
	// New returns the location of a new, empty store (a directory, a database URL...).
	New func(t *testing.T) string
	// Open opens an independent handle on the store at loc, as a separate process would.
	// The suite closes what it opens.
	Open func(t *testing.T, loc string) storage.Store
	// Skip names subtests the backend is known to fail, with the reason (an open issue);
	// search subtests are named "Search/Name". Every entry is a defect to fix, not a licence.
	Skip map[string]string
}

// Run runs the whole contract suite against b.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"CreateGet", testCreateGet},
		{"CreateExists", testCreateExists},
		{"InvalidIDs", testInvalidIDs},
		{"NotFound", testNotFound},
		{"AppendRead", testAppendRead},
		{"RecordsFrom", testRecordsFrom},
		{"AppendRejects", testAppendRejects},
		{"ExactBytes", testExactBytes},
		{"MetaOnAppend", testMetaOnAppend},
		{"List", testList},
		{"ListPaging", testListPaging},
		{"Delete", testDelete},
		{"SecondHandle", testSecondHandle},
		{"ListingAgrees", testListingAgrees},
		{"ConcurrentAppends", testConcurrentAppends},
		{"LargeRecord", testLargeRecord},
		{"Verify", testVerify},
		{"Closed", testClosed},
		{"Normalize", testNormalize},
		{"Keys", testKeys},
		{"UpdateError", testUpdateError},
		{"TimesExact", testTimesExact},
		{"ListFolding", testListFolding},
		{"CreateRace", testCreateRace},
		{"RecordsTwice", testRecordsTwice},
		// Optional interfaces: skipped for stores without them.
		{"Search", testSearch},
		{"Rewrite", testRewrite},
		{"Settings", testSettings},
		{"Operate", testOperate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := b.Skip[tc.name]; ok {
				t.Skip("known defect: " + why)
			}
			tc.fn(t, b)
		})
	}
}

// open makes a new store and opens a handle on it, checking on cleanup that listings agree
// with reads (bbolt's habit of re-checking invariants after every test).
func open(t *testing.T, b Backend) (storage.Store, string) {
	t.Helper()
	loc := b.New(t)
	s := b.Open(t, loc)
	t.Cleanup(func() {
		checkAgree(t, b, loc)
		s.Close()
	})
	return s, loc
}

// checkAgree opens a fresh handle and checks every listed session's LastSeq against a read.
func checkAgree(t *testing.T, b Backend, loc string) {
	t.Helper()
	if t.Failed() {
		return
	}
	s := b.Open(t, loc)
	defer s.Close()
	ctx := context.Background()
	metas, err := s.List(ctx, storage.ListQuery{})
	if err != nil {
		t.Errorf("invariant: list: %v", err)
		return
	}
	for _, m := range metas {
		err := s.View(ctx, m.ID, func(r storage.Reader) error {
			if r.LastSeq() != m.LastSeq {
				return fmt.Errorf("listed last_seq %d, read %d", m.LastSeq, r.LastSeq())
			}
			n := uint64(0)
			for rec, err := range r.Records(1) {
				if err != nil {
					return err
				}
				n++
				if rec.Seq != n {
					return fmt.Errorf("record %d has seq %d", n, rec.Seq)
				}
			}
			if n != r.LastSeq() {
				return fmt.Errorf("read %d records, last_seq %d", n, r.LastSeq())
			}
			return nil
		})
		if err != nil {
			t.Errorf("invariant: session %s: %v", m.ID, err)
		}
	}
}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func create(t *testing.T, s storage.Store, id, wd string, created time.Time) {
	t.Helper()
	h := storage.Header{ID: id, Created: created, WorkingDir: wd}
	if err := s.Create(context.Background(), h, storage.Meta{Name: "n-" + id}); err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
}

// appendJSON appends one batch of JSON objects and returns the stored records' seqs.
func appendJSON(t *testing.T, s storage.Store, id string, m storage.Meta, objs ...string) []storage.Record {
	t.Helper()
	var out []storage.Record
	err := s.Update(context.Background(), id, func(w storage.Writer) error {
		recs := make([]storage.Record, len(objs))
		for i, o := range objs {
			recs[i] = storage.Record{Data: []byte(o)}
		}
		var err error
		out, err = w.Append(recs, m)
		return err
	})
	if err != nil {
		t.Fatalf("append to %s: %v", id, err)
	}
	return out
}

// readAll returns the stored Data of every record from seq from, copied.
func readAll(t *testing.T, s storage.Store, id string, from uint64) []string {
	t.Helper()
	var out []string
	err := s.View(context.Background(), id, func(r storage.Reader) error {
		for rec, err := range r.Records(from) {
			if err != nil {
				return err
			}
			out = append(out, string(rec.Data))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return out
}

func testCreateGet(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	create(t, s, "a", "/w/a", t0)
	m, err := s.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "a" || m.WorkingDir != "/w/a" || m.Name != "n-a" || !m.Created.Equal(t0) || !m.Updated.Equal(t0) || m.LastSeq != 0 {
		t.Fatalf("meta after create = %+v", m)
	}
	err = s.View(ctx, "a", func(r storage.Reader) error {
		h := r.Header()
		if h.ID != "a" || h.WorkingDir != "/w/a" || !h.Created.Equal(t0) || h.Nonce == "" || h.Version < 1 {
			return fmt.Errorf("header = %+v", h)
		}
		if r.ID() != "a" || r.LastSeq() != 0 {
			return fmt.Errorf("id %q last %d", r.ID(), r.LastSeq())
		}
		for range r.Records(1) {
			return errors.New("a new session has records")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A zero Created is set by the store.
	if err := s.Create(ctx, storage.Header{ID: "b", WorkingDir: "/w"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Get(ctx, "b"); m.Created.IsZero() || m.Updated.IsZero() {
		t.Fatalf("zero times after create: %+v", m)
	}
}

func testCreateExists(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	err := s.Create(context.Background(), storage.Header{ID: "a", WorkingDir: "/other"}, storage.Meta{})
	if !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	if m, _ := s.Get(context.Background(), "a"); m.WorkingDir != "/w" {
		t.Fatalf("failed create changed the session: %+v", m)
	}
}

func testInvalidIDs(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	for _, id := range []string{"", ".", "..", "a/b", "a b", strings.Repeat("x", 129), "é"} {
		calls := map[string]error{
			"create": s.Create(ctx, storage.Header{ID: id, WorkingDir: "/w"}, storage.Meta{}),
			"view":   s.View(ctx, id, func(storage.Reader) error { return nil }),
			"update": s.Update(ctx, id, func(storage.Writer) error { return nil }),
			"delete": s.Delete(ctx, id),
		}
		_, calls["get"] = s.Get(ctx, id)
		_, calls["verify"] = s.Verify(ctx, id, false)
		for name, err := range calls {
			if !errors.Is(err, storage.ErrInvalidID) {
				t.Errorf("%s(%q) = %v, want ErrInvalidID", name, id, err)
			}
		}
	}
}

func testNotFound(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	calls := map[string]error{
		"view":   s.View(ctx, "nope", func(storage.Reader) error { return nil }),
		"update": s.Update(ctx, "nope", func(storage.Writer) error { return nil }),
		"delete": s.Delete(ctx, "nope"),
	}
	_, calls["get"] = s.Get(ctx, "nope")
	_, calls["verify"] = s.Verify(ctx, "nope", false)
	for name, err := range calls {
		if !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", name, err)
		}
	}
	if ids, err := s.IDs(ctx); err != nil || len(ids) != 0 {
		t.Errorf("IDs = %v, %v", ids, err)
	}
}

func testMetaOnAppend(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	create(t, s, "a", "/w", t0)
	m := storage.Meta{Name: "renamed", Model: "m1", Provider: "p", Updated: t0.Add(time.Hour), Messages: 2,
		Compactions: 1, ContextTokens: 1234, Preview: "hello", Leaf: "e2", Checkpoint: 2,
		// Fields the store owns are overwritten.
		ID: "wrong", WorkingDir: "/wrong", Created: t0.Add(-time.Hour), LastSeq: 99}
	appendJSON(t, s, "a", m, `{"a":1}`, `{"b":2}`)
	got, err := s.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := m
	want.ID, want.WorkingDir, want.Created, want.LastSeq = "a", "/w", t0, 2
	if got.ID != want.ID || got.Name != want.Name || got.WorkingDir != want.WorkingDir || got.Model != want.Model ||
		got.Provider != want.Provider || !got.Created.Equal(want.Created) || !got.Updated.Equal(want.Updated) ||
		got.Messages != want.Messages || got.Compactions != want.Compactions || got.ContextTokens != want.ContextTokens ||
		got.Preview != want.Preview || got.Leaf != want.Leaf || got.Checkpoint != want.Checkpoint || got.LastSeq != want.LastSeq {
		t.Fatalf("meta\n got %+v\nwant %+v", got, want)
	}
	// The listing shows the same at once.
	l, err := s.List(ctx, storage.ListQuery{})
	if err != nil || len(l) != 1 || l[0].Messages != 2 || l[0].LastSeq != 2 || l[0].Name != "renamed" {
		t.Fatalf("list after append = %+v, %v", l, err)
	}
	// Every append updates the counters at once (no delayed listing).
	for i := 3; i <= 10; i++ {
		m.Messages = i
		appendJSON(t, s, "a", m, `{"c":1}`)
		l, _ := s.List(ctx, storage.ListQuery{})
		if l[0].Messages != i || l[0].LastSeq != uint64(i) {
			t.Fatalf("after append %d: listed %d messages, last_seq %d", i, l[0].Messages, l[0].LastSeq)
		}
	}
}

func testVerify(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	for i := 0; i < 20; i++ {
		appendJSON(t, s, "a", storage.Meta{}, `{"x":1}`, `{"y":2}`)
	}
	rep, err := s.Verify(context.Background(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ID != "a" || rep.Records != 40 || rep.LastSeq != 40 || rep.Damaged() != nil || rep.NewerFormat() != nil || rep.Torn() || len(rep.Problems) != 0 {
		t.Fatalf("verify of a healthy session: %+v", rep)
	}
}

func testClosed(t *testing.T, b Backend) {
	loc := b.New(t)
	s := b.Open(t, loc)
	create(t, s, "a", "/w", t0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := s.Get(ctx, "a")
	if !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if err := s.View(ctx, "a", func(storage.Reader) error { return nil }); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("view after close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// testTimesExact: times come back Equal to what was stored, nanoseconds included.
func testTimesExact(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	created := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	if err := s.Create(ctx, storage.Header{ID: "a", Created: created, WorkingDir: "/w"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	updated := created.Add(987654321 * time.Nanosecond).In(time.FixedZone("x", 3600))
	appendJSON(t, s, "a", storage.Meta{Updated: updated}, `{"x":1}`)
	m, err := s.Get(ctx, "a")
	if err != nil || !m.Created.Equal(created) || !m.Updated.Equal(updated) {
		t.Fatalf("times: created %v updated %v (%v), want %v %v", m.Created, m.Updated, err, created, updated)
	}
	_ = s.View(ctx, "a", func(r storage.Reader) error {
		if !r.Header().Created.Equal(created) {
			t.Errorf("header created %v, want %v", r.Header().Created, created)
		}
		return nil
	})
	// A cursor taken from a listing continues right after it.
	l, _ := s.List(ctx, storage.ListQuery{After: &storage.ListPosition{Updated: m.Updated, ID: m.ID}})
	if len(l) != 0 {
		t.Fatalf("listing after the only session returned %d", len(l))
	}
}
