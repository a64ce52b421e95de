// Package storetest is the contract suite every storage backend must pass unchanged (the way
// litestream tests every replica client): a behaviour that differs between backends is a bug.
//
// A backend's test calls Run with a Backend that makes fresh, empty stores and opens
// independent handles on them (a second handle stands for a second server process). After
// every subtest the suite checks that each session's listing agrees with what a read returns.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	// Skip names subtests the backend is known to fail, with the reason (an open issue).
	// Every entry is a defect to fix, not a licence.
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

func testAppendRead(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	got := appendJSON(t, s, "a", storage.Meta{}, `{"type":"message","x":1}`, `{"y":"two"}`)
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 || got[0].Kind != "message" {
		t.Fatalf("append returned %+v", got)
	}
	err := s.Update(context.Background(), "a", func(w storage.Writer) error {
		if w.LastSeq() != 2 {
			return fmt.Errorf("writer last seq %d", w.LastSeq())
		}
		out, err := w.Append([]storage.Record{{Kind: "compaction", Data: []byte(`{"z":3}`), Barrier: true}, {Kind: "message", Data: []byte(`{"type":"message"}`)}}, storage.Meta{})
		if err != nil {
			return err
		}
		if out[0].Seq != 3 || out[1].Seq != 4 || w.LastSeq() != 4 {
			return fmt.Errorf("second batch %+v, last %d", out, w.LastSeq())
		}
		// Read your writes inside the same Update.
		n := 0
		for rec, err := range w.Records(3) {
			if err != nil {
				return err
			}
			n++
			_ = rec
		}
		if n != 2 {
			return fmt.Errorf("writer read %d records from 3", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"seq":1,"type":"message","x":1}`, `{"seq":2,"y":"two"}`, `{"seq":3,"type":"compaction","z":3}`, `{"seq":4,"type":"message"}`}
	if got := readAll(t, s, "a", 1); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("read back\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	err = s.View(context.Background(), "a", func(r storage.Reader) error {
		kinds := []string{}
		for rec, err := range r.Records(1) {
			if err != nil {
				return err
			}
			kinds = append(kinds, rec.Kind)
		}
		if strings.Join(kinds, ",") != "message,,compaction,message" {
			return fmt.Errorf("kinds %v", kinds)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testRecordsFrom(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	const n = 300
	for i := 0; i < n; i += 30 {
		var objs []string
		for j := i; j < i+30; j++ {
			objs = append(objs, fmt.Sprintf(`{"i":%d,"pad":%q}`, j+1, strings.Repeat("p", j*7%500)))
		}
		appendJSON(t, s, "a", storage.Meta{}, objs...)
	}
	for _, from := range []uint64{0, 1, 2, 29, 30, 31, 150, 299, 300, 301, 1000} {
		got := readAll(t, s, "a", from)
		start := max(from, 1)
		wantN := 0
		if start <= n {
			wantN = int(n - start + 1)
		}
		if len(got) != wantN {
			t.Fatalf("Records(%d) gave %d records, want %d", from, len(got), wantN)
		}
		if wantN > 0 && !strings.HasPrefix(got[0], fmt.Sprintf(`{"seq":%d,"i":%d,`, start, start)) {
			t.Fatalf("Records(%d) starts with %.40s", from, got[0])
		}
	}
	// Stopping early is allowed.
	err := s.View(context.Background(), "a", func(r storage.Reader) error {
		for rec, err := range r.Records(10) {
			if err != nil || rec.Seq != 10 {
				return fmt.Errorf("first record %d, %v", rec.Seq, err)
			}
			break
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testAppendRejects(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	appendJSON(t, s, "a", storage.Meta{}, `{"ok":1}`)
	for _, tc := range []struct {
		name string
		recs []storage.Record
	}{
		{"not an object", []storage.Record{{Data: []byte(`[1]`)}}},
		{"invalid json", []storage.Record{{Data: []byte(`{"a":`)}}},
		{"empty", []storage.Record{{Data: nil}}},
		{"has seq", []storage.Record{{Data: []byte(`{"seq":5}`)}}},
		{"kind differs", []storage.Record{{Kind: "a", Data: []byte(`{"type":"b"}`)}}},
		{"type not a string", []storage.Record{{Data: []byte(`{"type":1}`)}}},
		{"bad record after good", []storage.Record{{Data: []byte(`{"good":1}`)}, {Data: []byte(`nope`)}}},
	} {
		err := s.Update(context.Background(), "a", func(w storage.Writer) error {
			_, err := w.Append(tc.recs, storage.Meta{})
			return err
		})
		if err == nil {
			t.Errorf("%s: append succeeded", tc.name)
		}
	}
	if got := readAll(t, s, "a", 1); len(got) != 1 {
		t.Fatalf("rejected appends wrote records: %v", got)
	}
}

func testExactBytes(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	objs := []string{
		`{"t":"<b>&amp; \u00e9 é 日本 🙂","n":1.50,"e":[]}`,
		`{"esc":"a\"b\\c\n\t\u0000","big":12345678901234567890}`,
		`{"nested":{"k":[{"x":null},{"y":true}]},"s":""}`,
		`{ "spaced" : 1 }`,
	}
	appendJSON(t, s, "a", storage.Meta{}, objs...)
	got := readAll(t, s, "a", 1)
	want := []string{
		`{"seq":1,"t":"<b>&amp; \u00e9 é 日本 🙂","n":1.50,"e":[]}`,
		`{"seq":2,"esc":"a\"b\\c\n\t\u0000","big":12345678901234567890}`,
		`{"seq":3,"nested":{"k":[{"x":null},{"y":true}]},"s":""}`,
		`{"seq":4,"spaced" : 1 }`,
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
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

func testList(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	for i, c := range []struct{ id, wd, name, preview string }{
		{"a", "/w1", "Alpha", "fix the LOGIN bug"},
		{"b", "/w2/", "beta", "write docs"},
		{"c", "/w1/", "", "Login page"},
		{"d", "/w2", "delta", ""},
	} {
		create(t, s, c.id, c.wd, t0)
		appendJSON(t, s, c.id, storage.Meta{Name: c.name, Preview: c.preview, Updated: t0.Add(time.Duration(i) * time.Minute)}, `{"x":1}`)
	}
	// Same Updated as c: ties go by id.
	appendJSON(t, s, "a", storage.Meta{Name: "Alpha", Preview: "fix the LOGIN bug", Updated: t0.Add(2 * time.Minute)}, `{"x":2}`)
	ids := func(q storage.ListQuery) string {
		l, err := s.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range l {
			out = append(out, m.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		q    storage.ListQuery
		want string
	}{
		{storage.ListQuery{}, "d,a,c,b"},
		{storage.ListQuery{WorkingDir: "/w1"}, "a,c"},
		{storage.ListQuery{WorkingDir: "/w2/"}, "d,b"},
		{storage.ListQuery{WorkingDir: "/w3"}, ""},
		{storage.ListQuery{Text: "login"}, "a,c"},
		{storage.ListQuery{Text: "ALPHA"}, "a"},
		{storage.ListQuery{Text: "login", WorkingDir: "/w2"}, ""},
		{storage.ListQuery{Limit: 2}, "d,a"},
		{storage.ListQuery{After: &storage.ListPosition{Updated: t0.Add(2 * time.Minute), ID: "a"}}, "c,b"},
		{storage.ListQuery{After: &storage.ListPosition{Updated: t0.Add(2 * time.Minute), ID: "c"}, Limit: 5}, "b"},
		{storage.ListQuery{After: &storage.ListPosition{Updated: t0.Add(3 * time.Minute), ID: "d"}, WorkingDir: "/w1"}, "a,c"},
	} {
		if got := ids(tc.q); got != tc.want {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func testListPaging(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	const n = 57
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s%03d", i)
		create(t, s, id, "/w", t0)
		// Several sessions share each Updated, so pages must break ties by id.
		appendJSON(t, s, id, storage.Meta{Updated: t0.Add(time.Duration(i/3) * time.Second)}, `{"x":1}`)
	}
	seen := map[string]bool{}
	var after *storage.ListPosition
	for page := 0; ; page++ {
		l, err := s.List(ctx, storage.ListQuery{After: after, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range l {
			if seen[m.ID] {
				t.Fatalf("page %d repeats %s", page, m.ID)
			}
			seen[m.ID] = true
		}
		if len(l) < 10 {
			break
		}
		last := l[len(l)-1]
		after = &storage.ListPosition{Updated: last.Updated, ID: last.ID}
	}
	if len(seen) != n {
		t.Fatalf("paged through %d sessions, want %d", len(seen), n)
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

func testLargeRecord(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	big := strings.Repeat("0123456789abcdef", 3<<16) // 3 MiB
	appendJSON(t, s, "a", storage.Meta{}, `{"small":1}`, `{"big":"`+big+`"}`, `{"small":2}`)
	got := readAll(t, s, "a", 2)
	if len(got) != 2 || got[0] != `{"seq":2,"big":"`+big+`"}` {
		t.Fatalf("large record did not round-trip (%d records)", len(got))
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
	if rep.ID != "a" || rep.Records != 40 || rep.LastSeq != 40 || rep.Damaged != nil || rep.NewerFormat != nil || rep.Torn() {
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

// testNormalize: every backend stores the same line for the same input (storage.AppendRecord):
// surrounding white space trimmed, line breaks compacted away, the kind added after the seq.
func testNormalize(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	err := s.Update(context.Background(), "a", func(w storage.Writer) error {
		_, err := w.Append([]storage.Record{
			{Data: []byte("  {\n  \"a\" : [1,\n 2],\r\n \"s\": \"x y\"\n}\t ")},
			{Kind: "k", Data: []byte(`{}`)},
			{Kind: "k", Data: []byte(`{ "z":1}`)},
			{Kind: "k", Data: []byte(`{"type":"k","z":2}`)},
			{Data: []byte(`{}`)},
		}, storage.Meta{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"seq":1,"a":[1,2],"s":"x y"}`,
		`{"seq":2,"type":"k"}`,
		`{"seq":3,"type":"k","z":1}`,
		`{"seq":4,"type":"k","z":2}`,
		`{"seq":5}`,
	}
	got := readAll(t, s, "a", 1)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, line := range want {
		seq := uint64(i + 1)
		data, ok := storage.StripSeq([]byte(line))
		if !ok {
			t.Fatalf("StripSeq(%s) failed", line)
		}
		again, _, err := storage.AppendRecord(nil, storage.Record{Data: data}, seq)
		if err != nil || string(again) != line+"\n" {
			t.Fatalf("StripSeq does not invert AppendRecord: %s -> %s -> %q (%v)", line, data, again, err)
		}
	}
}

// testKeys: records with keys read back exactly like records without; distinct keys across
// appends are accepted. (Whether a repeated key is refused is up to the backend: memory never
// repeats one.)
func testKeys(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	for i := 0; i < 3; i++ {
		err := s.Update(context.Background(), "a", func(w storage.Writer) error {
			_, err := w.Append([]storage.Record{
				{Data: []byte(fmt.Sprintf(`{"i":%d}`, i)), Key: fmt.Sprintf("k%d-a", i)},
				{Data: []byte(fmt.Sprintf(`{"i":%d,"b":1}`, i))},
				{Data: []byte(fmt.Sprintf(`{"i":%d,"c":1}`, i)), Key: fmt.Sprintf("k%d-c", i)},
			}, storage.Meta{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	got := readAll(t, s, "a", 4)
	if len(got) != 6 || got[0] != `{"seq":4,"i":1}` || got[5] != `{"seq":9,"i":2,"c":1}` {
		t.Fatalf("read back %v", got)
	}
}

// testUpdateError: after an Update whose fn failed (after appending or not), the session is
// consistent and later appends continue its sequence.
func testUpdateError(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	create(t, s, "a", "/w", t0)
	appendJSON(t, s, "a", storage.Meta{Messages: 1}, `{"x":1}`)
	boom := errors.New("boom")
	err := s.Update(ctx, "a", func(w storage.Writer) error {
		if _, err := w.Append([]storage.Record{{Data: []byte(`{"x":2}`)}}, storage.Meta{Messages: 2}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	err = s.Update(ctx, "a", func(w storage.Writer) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	out := appendJSON(t, s, "a", storage.Meta{Messages: 9}, `{"x":3}`)
	got := readAll(t, s, "a", 1)
	if len(got) == 0 || out[0].Seq != uint64(len(got)) {
		t.Fatalf("after a failed Update: appended seq %d, read %v", out[0].Seq, got)
	}
	if m, _ := s.Get(ctx, "a"); m.LastSeq != out[0].Seq || m.Messages != 9 {
		t.Fatalf("meta after a failed Update: %+v", m)
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

// testListFolding: the text filter folds case as Go's strings.ToLower does (non-ASCII too),
// and working directories compare without trailing separators of either kind.
func testListFolding(t *testing.T, b Backend) {
	s, _ := open(t, b)
	ctx := context.Background()
	for i, c := range []struct{ id, wd, name, preview string }{
		{"a", `C:\work\`, "École ÜBER", ""},
		{"b", `C:\work`, "", "straße ΣΊΣΥΦΟΣ"},
		{"c", "/w//", "100% done_", "a_b"},
	} {
		create(t, s, c.id, c.wd, t0)
		appendJSON(t, s, c.id, storage.Meta{Name: c.name, Preview: c.preview, Updated: t0.Add(time.Duration(i) * time.Minute)}, `{"x":1}`)
	}
	ids := func(q storage.ListQuery) string {
		l, err := s.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range l {
			out = append(out, m.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		q    storage.ListQuery
		want string
	}{
		{storage.ListQuery{Text: "école"}, "a"},
		{storage.ListQuery{Text: "über"}, "a"},
		{storage.ListQuery{Text: "STRASSE"}, ""},
		{storage.ListQuery{Text: "STRAßE"}, "b"},
		{storage.ListQuery{Text: "σίσυφοσ"}, "b"},
		{storage.ListQuery{Text: "%"}, "c"},
		{storage.ListQuery{Text: "_"}, "c"},
		{storage.ListQuery{Text: "e_"}, "c"},
		{storage.ListQuery{WorkingDir: `C:\work`}, "b,a"},
		{storage.ListQuery{WorkingDir: `C:\work\\`}, "b,a"},
		{storage.ListQuery{WorkingDir: "/w"}, "c"},
		{storage.ListQuery{WorkingDir: "/w/"}, "c"},
	} {
		want := ""
		// The reference: storage.Selects over every session.
		all, _ := s.List(ctx, storage.ListQuery{})
		var ref []string
		for _, m := range all {
			if tc.q.Selects(&m) {
				ref = append(ref, m.ID)
			}
		}
		want = strings.Join(ref, ",")
		if want != tc.want {
			t.Fatalf("test table disagrees with storage.Selects for %+v: %q vs %q", tc.q, want, tc.want)
		}
		if got := ids(tc.q); got != tc.want {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
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

// testRecordsTwice: a Reader's Records can be iterated more than once, and stopped early.
func testRecordsTwice(t *testing.T, b Backend) {
	s, _ := open(t, b)
	create(t, s, "a", "/w", t0)
	for i := 0; i < 10; i++ {
		appendJSON(t, s, "a", storage.Meta{}, `{"x":1}`, `{"x":2}`, `{"x":3}`)
	}
	err := s.View(context.Background(), "a", func(r storage.Reader) error {
		for pass := 0; pass < 3; pass++ {
			n := 0
			for rec, err := range r.Records(uint64(pass*7 + 1)) {
				if err != nil {
					return err
				}
				if rec.Seq != uint64(pass*7+1+n) {
					return fmt.Errorf("pass %d: record %d has seq %d", pass, n, rec.Seq)
				}
				n++
				if pass == 1 && n == 5 {
					break
				}
			}
			if want := []int{30, 5, 16}[pass]; n != want {
				return fmt.Errorf("pass %d read %d records, want %d", pass, n, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
