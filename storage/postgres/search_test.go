package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
	"github.com/sessionmem/sessionmem/storage/storetest"
)

// saveText appends one message record per text, in memory's format (storetest.Docs reads it).
func saveText(t testing.TB, s *Store, id string, texts ...string) {
	t.Helper()
	if err := trySave(s, id, texts...); err != nil {
		t.Fatal(err)
	}
}

func trySave(s *Store, id string, texts ...string) error {
	return s.Update(context.Background(), id, func(w storage.Writer) error {
		recs := make([]storage.Record, len(texts))
		for i, text := range texts {
			seq := w.LastSeq() + uint64(i) + 1
			recs[i] = storage.Record{Kind: "message", Data: []byte(fmt.Sprintf(
				`{"id":"e%d","ts":%q,"message":{"role":"user","content":[{"type":"text","text":%q}]}}`,
				seq, t0.Add(time.Duration(seq)*time.Second).Format(time.RFC3339Nano), text))}
		}
		_, err := w.Append(recs, storage.Meta{})
		return err
	})
}

func find(t testing.TB, s *Store, query string, q storage.SearchQuery) storage.SearchResult {
	t.Helper()
	m, err := fts.Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	q.Match = m
	res, err := s.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("search %q: %v", query, err)
	}
	return res
}

func docCount(t testing.TB, s *Store) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM sessionmem_documents`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMigrateAndBackfill: a database at schema 1 with sessions is migrated to 2 by the next
// server, whose background backfill builds the documents of the old records; Progress says
// how far it is.
func TestMigrateAndBackfill(t *testing.T) {
	url := newSchema(t)
	old := openStore(t, url, Options{TailRecords: 3, MergeChunks: 2, ChunkRecords: 7})
	for i := range 5 {
		id := fmt.Sprintf("s%d", i)
		mustCreate(t, old, id)
		for j := range 4 {
			saveText(t, old, id, fmt.Sprintf("ocelot %d %d", i, j), "filler text")
		}
	}
	old.Close()
	// Back to schema 1, as a database written by the previous release.
	admin := openStore(t, url, Options{})
	_, err := admin.pool.Exec(context.Background(), undoSchema4+`DROP TABLE sessionmem_documents, sessionmem_settings;
		ALTER TABLE sessionmem_sessions DROP COLUMN docs_through, DROP COLUMN docs_gen; UPDATE sessionmem_schema SET version = 1`)
	if err != nil {
		t.Fatal(err)
	}
	admin.Close()

	s := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: time.Hour})
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := s.Progress(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p.Done() {
			if p.Total != 40 || p.Sessions != 0 {
				t.Fatalf("progress %+v", p)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backfill not done: %+v", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res := find(t, s, "ocelot", storage.SearchQuery{Limit: 100}); len(res.Hits) != 20 {
		t.Fatalf("after backfill: %d hits", len(res.Hits))
	}
	if n := docCount(t, s); n != 40 {
		t.Fatalf("%d documents, want 40", n)
	}
	if p, err := s.BackfillStatus(); err != nil || !p.Done() {
		t.Fatalf("backfill status %+v, %v", p, err)
	}
}

// TestBackfillWithSaves: handles without Docs (records without documents) and with Docs save
// into the same sessions while Reindex runs in two processes' stead; in the end every record
// has exactly its document.
func TestBackfillWithSaves(t *testing.T) {
	url := newSchema(t)
	plain := openStore(t, url, Options{TailRecords: 4, MergeChunks: 2, ChunkRecords: 16})
	with := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1, TailRecords: 4, MergeChunks: 2, ChunkRecords: 16})
	other := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	const sessions, rounds = 4, 30
	for i := range sessions {
		mustCreate(t, plain, fmt.Sprintf("s%d", i))
	}
	// Some history without documents first.
	for i := range sessions {
		for range 10 {
			saveText(t, plain, fmt.Sprintf("s%d", i), "bison before")
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w, st := range []*Store{plain, with} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range rounds {
				if err := trySave(st, fmt.Sprintf("s%d", rng.IntN(sessions)), "bison during"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, st := range []*Store{with, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if err := st.Reindex(context.Background(), nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var p storage.ReindexProgress
	if err := with.Reindex(context.Background(), func(x storage.ReindexProgress) { p = x }); err != nil {
		t.Fatal(err)
	}
	total := sessions*10 + 2*rounds
	if !p.Done() || p.TotalRecords != int64(total) {
		t.Fatalf("progress after reindex: %+v, want %d records", p, total)
	}
	if n := docCount(t, with); n != total {
		t.Fatalf("%d documents for %d records", n, total)
	}
	if res := find(t, other, "bison", storage.SearchQuery{Limit: 100}); len(res.Hits) != 100 {
		t.Fatalf("%d hits", len(res.Hits))
	}
}

// TestHugeDocument: a record whose text has more distinct terms than a tsvector holds is
// saved, and its beginning is searchable.
func TestHugeDocument(t *testing.T) {
	s := openStore(t, newSchema(t), Options{Docs: storetest.Docs})
	mustCreate(t, s, "h")
	var b strings.Builder
	b.WriteString("start ")
	for i := 0; b.Len() < 1500_000; i++ {
		fmt.Fprintf(&b, "t%x ", uint64(i)*0x9e3779b97f4a7c15)
	}
	saveText(t, s, "h", b.String())
	if res := find(t, s, "start", storage.SearchQuery{}); len(res.Hits) != 1 {
		t.Fatalf("%d hits", len(res.Hits))
	}
}

// TestRewriteWithoutDocs: a rewrite by a handle without Docs drops the session's documents
// (they held the old text) and leaves them to the backfill.
func TestRewriteWithoutDocs(t *testing.T) {
	url := newSchema(t)
	with := openStore(t, url, Options{Docs: storetest.Docs, BackfillInterval: -1})
	plain := openStore(t, url, Options{})
	mustCreate(t, with, "r")
	saveText(t, with, "r", "tapir SECRET", "tapir clean")
	changed, err := plain.Rewrite(context.Background(), "r", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		out := make([][]byte, len(recs))
		d, _ := storage.StripSeq(recs[0].Data)
		out[0] = []byte(strings.ReplaceAll(string(d), "SECRET", "gone"))
		return h, out, storage.Meta{}, nil
	})
	if err != nil || !changed {
		t.Fatalf("rewrite: %v %v", changed, err)
	}
	if n := docCount(t, with); n != 0 {
		t.Fatalf("%d documents left after a rewrite without Docs", n)
	}
	if err := with.Reindex(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if res := find(t, with, "tapir", storage.SearchQuery{}); len(res.Hits) != 2 {
		t.Fatalf("%d hits after reindex", len(res.Hits))
	}
	if res := find(t, with, "secret", storage.SearchQuery{}); len(res.Hits) != 0 {
		t.Fatal("the old text is found")
	}
}

// undoSchema4 takes a database back to schema 3 (tests of migrations).
const undoSchema4 = `DROP TRIGGER sessionmem_doc_stats_insert ON sessionmem_documents;
	DROP TRIGGER sessionmem_doc_stats_delete ON sessionmem_documents;
	DROP TRIGGER sessionmem_doc_stats_update ON sessionmem_documents;
	DROP FUNCTION sessionmem_doc_stats_insert(), sessionmem_doc_stats_delete(), sessionmem_doc_stats_update();
	DROP TABLE sessionmem_doc_stats;
	DROP INDEX sessionmem_documents_len_unknown;
	ALTER TABLE sessionmem_documents DROP COLUMN len;
	UPDATE sessionmem_schema SET version = 3;
`
