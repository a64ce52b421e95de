package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/storetest"
)

// Tests of the documents written after the save's commit (docqueue.go).

// lazy is a store with Docs whose writer waits an hour: only a search (or Close) of this
// store writes its queued documents.
func lazy(t *testing.T, url string) *Store {
	return openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1, DocsDelay: time.Hour})
}

func docsThrough(t *testing.T, s *Store, id string) (through, last int64) {
	t.Helper()
	err := s.pool.QueryRow(context.Background(), `SELECT docs_through, last_seq FROM sessionmem_sessions WHERE id = $1`, id).Scan(&through, &last)
	if err != nil {
		t.Fatal(err)
	}
	return through, last
}

func redact(t *testing.T, s *Store, id, old, new string) {
	t.Helper()
	if err := tryRedact(s, id, old, new); err != nil {
		t.Fatal(err)
	}
}

func tryRedact(s *Store, id, old, new string) error {
	_, err := s.Rewrite(context.Background(), id, func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		out := make([][]byte, len(recs))
		for i, r := range recs {
			d, _ := storage.StripSeq(r.Data)
			out[i] = []byte(strings.ReplaceAll(string(d), old, new))
		}
		return h, out, storage.Meta{}, nil
	})
	return err
}

// TestDocsReadYourWrites: a search right after a save on the same Store finds it, though
// the writer has not run.
func TestDocsReadYourWrites(t *testing.T) {
	s := lazy(t, newSchema(t))
	mustCreate(t, s, "r")
	for i := range 20 {
		word := fmt.Sprintf("kiwi%c%c", 'a'+i%26, 'a'+i/26)
		saveText(t, s, "r", word+" landed")
		if res := find(t, s, word, storage.SearchQuery{}); len(res.Hits) != 1 || res.Hits[0].Seq != uint64(i+1) {
			t.Fatalf("save %d: search right after it: %+v", i, res.Hits)
		}
	}
	if through, last := docsThrough(t, s, "r"); through != last {
		t.Fatalf("docs_through %d, last_seq %d", through, last)
	}
}

// TestDocsFreshness: another Store (another server) finds a save within DocsDelay and the
// write; the bar is 1 s.
func TestDocsFreshness(t *testing.T) {
	url := newSchema(t)
	a := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	b := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	mustCreate(t, a, "f")
	var lat []time.Duration
	for i := range 15 {
		word := fmt.Sprintf("fresh%c%c", 'a'+i%26, 'a'+i/26)
		saveText(t, a, "f", word)
		start := time.Now()
		for {
			if res := find(t, b, word, storage.SearchQuery{}); len(res.Hits) == 1 {
				break
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("save %d not found by another store after 5 s", i)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	t.Logf("found by another store after: median %v, max %v (DocsDelay %v)", lat[len(lat)/2], lat[len(lat)-1], DefaultDocsDelay)
	if lat[len(lat)-1] > time.Second {
		t.Fatalf("slowest %v, bar 1 s", lat[len(lat)-1])
	}
}

// TestDocsCrashHealed: a process that committed saves and died before it wrote their
// documents leaves docs_through behind; the backfill of the next server builds them, once.
func TestDocsCrashHealed(t *testing.T) {
	url := newSchema(t)
	a := lazy(t, url)
	mustCreate(t, a, "c")
	saveText(t, a, "c", "numbat one", "numbat two")
	saveText(t, a, "c", "numbat three")
	if through, last := docsThrough(t, a, "c"); through != 0 || last != 3 {
		t.Fatalf("before the writer ran: docs_through %d, last_seq %d", through, last)
	}
	a.abandonDocs() // killed
	a.Close()
	b := backfilled(t, url)
	if res := find(t, b, "numbat", storage.SearchQuery{}); len(res.Hits) != 3 {
		t.Fatalf("%d hits after the backfill", len(res.Hits))
	}
	if n := docCount(t, b); n != 3 {
		t.Fatalf("%d documents for 3 records", n)
	}
}

// backfilled opens a store on url with Docs, whose backfill runs at start, and waits until it
// has built every missing document.
func backfilled(t *testing.T, url string) *Store {
	t.Helper()
	b := openStore(t, url, Options{Docs: storetest.Docs})
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := b.Progress(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p.Done() {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("backfill did not catch up: %+v", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDocsCloseFlushes: Close writes what is queued.
func TestDocsCloseFlushes(t *testing.T) {
	url := newSchema(t)
	a := lazy(t, url)
	mustCreate(t, a, "z")
	saveText(t, a, "z", "dugong")
	a.Close()
	b := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	if res := find(t, b, "dugong", storage.SearchQuery{}); len(res.Hits) != 1 {
		t.Fatalf("%d hits after Close", len(res.Hits))
	}
}

// TestDocsRewriteRace: documents queued from records that a Rewrite (redaction) then changed
// are never written: the old text does not come back, whether the rewrite was made by a
// handle with Docs (which rebuilds the documents itself) or without (which leaves them to a
// backfill, which may already have rebuilt them up to the queued records when the queue is
// written).
func TestDocsRewriteRace(t *testing.T) {
	for _, withDocs := range []bool{true, false} {
		t.Run(fmt.Sprintf("docs=%v", withDocs), func(t *testing.T) {
			url := newSchema(t)
			a := lazy(t, url)
			var other *Store
			if withDocs {
				other = openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
			} else {
				other = openStore(t, url, Options{})
			}
			mustCreate(t, a, "r")
			saveText(t, a, "r", "okapi first")
			find(t, a, "okapi", storage.SearchQuery{}) // written: docs_through 1
			saveText(t, a, "r", "okapi SECRET")        // queued
			redact(t, other, "r", "SECRET", "gone")
			if !withDocs {
				// A backfill rebuilds record 1 only: docs_through is back at 1, where the
				// queued batch expects it.
				c := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
				if _, _, err := c.backfillSessionN(context.Background(), "r", 1); err != nil {
					t.Fatal(err)
				}
				if through, _ := docsThrough(t, c, "r"); through != 1 {
					t.Fatalf("docs_through %d after the partial backfill", through)
				}
			}
			if res := find(t, a, "secret", storage.SearchQuery{}); len(res.Hits) != 0 { // writes the queue
				t.Fatalf("the redacted text is found: %+v", res.Hits)
			}
			if err := a.Reindex(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if res := find(t, a, "okapi", storage.SearchQuery{}); len(res.Hits) != 2 {
				t.Fatalf("%d hits for okapi", len(res.Hits))
			}
			if res := find(t, a, "gone", storage.SearchQuery{}); len(res.Hits) != 1 {
				t.Fatalf("%d hits for the new text", len(res.Hits))
			}
			if res := find(t, a, "secret", storage.SearchQuery{}); len(res.Hits) != 0 {
				t.Fatalf("the redacted text is found after reindex: %+v", res.Hits)
			}
		})
	}
}

// TestDocsRewriteRaceConcurrent: saves with a secret while another server redacts it again
// and again; once the saves stopped and a last redaction ran, no document holds the secret,
// and every record has its document once.
func TestDocsRewriteRaceConcurrent(t *testing.T) {
	url := newSchema(t)
	a := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1, DocsDelay: 2 * time.Millisecond})
	b := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	mustCreate(t, a, "x")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var rerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for rerr == nil {
			select {
			case <-stop:
				return
			default:
			}
			rerr = tryRedact(b, "x", "SECRET", "gone")
		}
	}()
	for i := range 60 {
		saveText(t, a, "x", fmt.Sprintf("serval %d SECRET", i))
		if i%10 == 0 {
			time.Sleep(3 * time.Millisecond) // let the writer run now and then
		}
	}
	close(stop)
	wg.Wait()
	if rerr != nil {
		t.Fatal(rerr)
	}
	redact(t, b, "x", "SECRET", "gone")
	if res := find(t, a, "secret", storage.SearchQuery{}); len(res.Hits) != 0 {
		t.Fatalf("%d documents hold the redacted text", len(res.Hits))
	}
	if err := b.Reindex(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if res := find(t, a, "secret", storage.SearchQuery{}); len(res.Hits) != 0 {
		t.Fatalf("%d documents hold the redacted text after reindex", len(res.Hits))
	}
	if n := docCount(t, a); n != 60 {
		t.Fatalf("%d documents for 60 records", n)
	}
}

// TestDocsDeleteRace: documents queued for a session deleted (and created again under the
// same id) meanwhile are not written.
func TestDocsDeleteRace(t *testing.T) {
	url := newSchema(t)
	a := lazy(t, url)
	b := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	mustCreate(t, a, "d")
	saveText(t, a, "d", "wombat gone")
	if err := b.Delete(context.Background(), "d"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, "d")
	saveText(t, b, "d", "quoll new")
	if res := find(t, a, "wombat", storage.SearchQuery{}); len(res.Hits) != 0 {
		t.Fatalf("a deleted session's document was written: %+v", res.Hits)
	}
	if res := find(t, b, "quoll", storage.SearchQuery{}); len(res.Hits) != 1 {
		t.Fatalf("%d hits for the new session", len(res.Hits))
	}
	if n := docCount(t, a); n != 1 {
		t.Fatalf("%d documents, want 1", n)
	}
}

// TestDocsTwoWriters: two servers save into the same sessions at once (their queues write
// in whatever order); every record ends with its document exactly once, and docs_through
// reaches last_seq (at the latest after a backfill).
func TestDocsTwoWriters(t *testing.T) {
	url := newSchema(t)
	stores := []*Store{
		openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1, DocsDelay: time.Millisecond}),
		openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1, DocsDelay: 5 * time.Millisecond}),
	}
	const sessions, per = 3, 25
	for i := range sessions {
		mustCreate(t, stores[0], fmt.Sprintf("s%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w, st := range stores {
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					if err := trySave(st, fmt.Sprintf("s%d", (i+g+w)%sessions), "bilby"); err != nil {
						errs <- err
						return
					}
					if i%8 == 0 {
						if _, err := st.Search(context.Background(), storage.SearchQuery{File: "/nowhere"}); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, st := range stores {
		st.Close()
	}
	c := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	total := 2 * 2 * per
	if n := docCount(t, c); n != total {
		t.Fatalf("%d documents for %d records", n, total)
	}
	if err := c.Reindex(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	p, err := c.Progress(context.Background())
	if err != nil || !p.Done() || p.Total != int64(total) {
		t.Fatalf("progress %+v, %v", p, err)
	}
	if n := docCount(t, c); n != total {
		t.Fatalf("%d documents for %d records after reindex", n, total)
	}
}

// TestMigrateFrom2: a database at schema 2 (documents written in the save's transaction) is
// migrated to 3 and keeps its documents.
func TestMigrateFrom2(t *testing.T) {
	url := newSchema(t)
	old := lazy(t, url)
	mustCreate(t, old, "m")
	saveText(t, old, "m", "pangolin")
	old.Close()
	admin := openStore(t, url, Options{})
	if _, err := admin.pool.Exec(context.Background(), undoSchema4+`ALTER TABLE sessionmem_sessions DROP COLUMN docs_gen;
		UPDATE sessionmem_schema SET version = 2`); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	s := lazy(t, url)
	if res := find(t, s, "pangolin", storage.SearchQuery{}); len(res.Hits) != 1 {
		t.Fatalf("%d hits after the migration", len(res.Hits))
	}
	saveText(t, s, "m", "pangolin again")
	if res := find(t, s, "pangolin", storage.SearchQuery{}); len(res.Hits) != 2 {
		t.Fatalf("%d hits after a save", len(res.Hits))
	}
}

// backfillSessionN runs one backfill batch of at most n records on session id (tests).
func (s *Store) backfillSessionN(ctx context.Context, id string, n int) (int, bool, error) {
	var sid int64
	if err := s.pool.QueryRow(ctx, `SELECT sid FROM sessionmem_sessions WHERE id = $1`, id).Scan(&sid); err != nil {
		return 0, false, err
	}
	return s.backfillSession(ctx, sid, id, n)
}

// TestDocsWriteFailure: a document write the database refuses is tried maxDocAttempts times
// in all, then left to the backfill; docs_through stays behind meanwhile, and nothing is
// written twice once the backfill has built it.
func TestDocsWriteFailure(t *testing.T) {
	url := newSchema(t)
	s := lazy(t, url)
	ctx := context.Background()
	mustCreate(t, s, "w")
	if _, err := s.pool.Exec(ctx, `ALTER TABLE sessionmem_documents ADD CONSTRAINT refuse_all CHECK (false) NOT VALID`); err != nil {
		t.Fatal(err)
	}
	saveText(t, s, "w", "wombat one", "wombat two")
	for attempt := 1; attempt <= maxDocAttempts; attempt++ {
		if err := s.flushDocs(ctx); err == nil {
			t.Fatalf("attempt %d: the refused write reported no error", attempt)
		}
		s.docs.mu.Lock()
		queued := s.docs.records
		s.docs.mu.Unlock()
		if want := 2 * min(1, maxDocAttempts-attempt); queued != want {
			t.Fatalf("after attempt %d: %d records queued, want %d", attempt, queued, want)
		}
	}
	if through, last := docsThrough(t, s, "w"); through != 0 || last != 2 {
		t.Fatalf("after the failures: docs_through %d, last_seq %d", through, last)
	}
	if _, err := s.pool.Exec(ctx, `ALTER TABLE sessionmem_documents DROP CONSTRAINT refuse_all`); err != nil {
		t.Fatal(err)
	}
	if err := s.flushDocs(ctx); err != nil {
		t.Fatalf("nothing left to write: %v", err)
	}
	b := backfilled(t, url)
	if res := find(t, b, "wombat", storage.SearchQuery{}); len(res.Hits) != 2 {
		t.Fatalf("%d hits after the backfill", len(res.Hits))
	}
	if n := docCount(t, b); n != 2 {
		t.Fatalf("%d documents for 2 records", n)
	}
}

// TestDocsCloseMidWrite: a Close that comes while the writer goroutine is in the middle of
// writing a batch (here: waiting for a row lock) still writes it before closing. Stopping the
// writer cancels its write; the batch used to be dropped then ("context canceled"), leaving
// the last sessions a migrate copied unsearchable until some server's backfill ran.
func TestDocsCloseMidWrite(t *testing.T) {
	url := newSchema(t)
	s := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1, DocsDelay: 300 * time.Millisecond})
	ctx := context.Background()
	mustCreate(t, s, "m")
	saveText(t, s, "m", "narwhal tusk")
	// Hold the lock the batch's insert needs (FOR KEY SHARE conflicts with FOR UPDATE).
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM sessionmem_sessions WHERE id = 'm' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the writer to wait for the row lock", func() bool {
		var n int // not in tx: a transaction sees one snapshot of pg_stat_activity
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO sessionmem_documents%'`).Scan(&n)
		return err == nil && n > 0
	})
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	time.Sleep(300 * time.Millisecond) // Close has cancelled the blocked write by now
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(closeFlushTimeout + 5*time.Second):
		t.Fatal("Close did not return")
	}
	b := openStore(t, url, Options{BackfillInterval: -1})
	if through, last := docsThrough(t, b, "m"); through != last {
		t.Fatalf("after Close: docs_through %d, last_seq %d", through, last)
	}
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
