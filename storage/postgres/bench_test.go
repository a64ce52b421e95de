package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// Store-level benchmarks on a cluster of their own with fsync on. Each reports the median of
// its operations as median-us next to Go's mean. Run with
//
//	go test -run '^$' -bench . -benchtime 2000x ./storage/postgres/

var (
	benchOnce    sync.Once
	benchCluster *pgtest.Cluster
	benchErr     error
)

func benchDB(b *testing.B) string {
	b.Helper()
	benchOnce.Do(func() { benchCluster, benchErr = pgtest.Start(pgtest.Options{Fsync: true}) })
	if benchErr != nil {
		if errors.Is(benchErr, pgtest.ErrNotInstalled) {
			b.Skip(benchErr)
		}
		b.Fatal(benchErr)
	}
	return benchCluster.NewDatabase(b)
}

// stopBench removes the benchmark cluster (called by TestMain).
func stopBench() {
	if benchCluster != nil {
		benchCluster.Remove()
	}
}

// message is a ~2 KB record like a corpus message.
func message(i int) []byte {
	return []byte(fmt.Sprintf(`{"type":"message","id":"e%08d","parent_id":"e%08d","ts":"2026-11-01T12:00:00Z","message":{"id":"m%d","role":"assistant","content":[{"type":"text","text":%q}]}}`,
		i, i-1, i, strings.Repeat(fmt.Sprintf("line %d of the build log: compiling package %d ok; ", i, i%97), 30)))
}

func medianOf(b *testing.B, ds []time.Duration) {
	b.StopTimer()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, "median-us")
	b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds())/1e3, "p99-us")
}

// BenchmarkAppend: one Update appending one ~2 KB record with its key (what session_save of
// one message asks of the store), committed with fsync.
func BenchmarkAppend(b *testing.B) {
	s := openStore(b, benchDB(b), Options{})
	ctx := context.Background()
	if err := s.Create(ctx, storage.Header{ID: "a", WorkingDir: "/w"}, storage.Meta{}); err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		err := s.Update(ctx, "a", func(w storage.Writer) error {
			_, err := w.Append([]storage.Record{{Data: message(i), Key: fmt.Sprintf("m%d", i)}}, storage.Meta{Messages: i + 1})
			return err
		})
		ds = append(ds, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	medianOf(b, ds)
}

// seedSessions creates n sessions with one record each, spread over 10 directories.
func seedSessions(b *testing.B, s *Store, n int) {
	b.Helper()
	ctx := context.Background()
	for i := range n {
		id := fmt.Sprintf("s%05d", i)
		t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		if err := s.Create(ctx, storage.Header{ID: id, WorkingDir: fmt.Sprintf("/proj/%d", i%10), Created: t}, storage.Meta{}); err != nil {
			b.Fatal(err)
		}
		err := s.Update(ctx, id, func(w storage.Writer) error {
			_, err := w.Append([]storage.Record{{Data: message(i)}}, storage.Meta{Name: fmt.Sprintf("session %d", i), Updated: t,
				Preview: "fix the build of package " + fmt.Sprint(i), Messages: 1})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchList(b *testing.B, sessions int, q storage.ListQuery) {
	s := openStore(b, benchDB(b), Options{})
	seedSessions(b, s, sessions)
	ctx := context.Background()
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		l, err := s.List(ctx, q)
		ds = append(ds, time.Since(start))
		if err != nil || len(l) == 0 {
			b.Fatalf("list: %d, %v", len(l), err)
		}
	}
	medianOf(b, ds)
}

// BenchmarkList1000All: every one of 1,000 sessions, newest first.
func BenchmarkList1000All(b *testing.B) { benchList(b, 1000, storage.ListQuery{}) }

// BenchmarkList10000Page: the first page (21 rows, as session_list asks) of 10,000 sessions.
func BenchmarkList10000Page(b *testing.B) { benchList(b, 10000, storage.ListQuery{Limit: 21}) }

// BenchmarkList10000DirText: a page of one directory's sessions matching a text, of 10,000.
func BenchmarkList10000DirText(b *testing.B) {
	benchList(b, 10000, storage.ListQuery{WorkingDir: "/proj/3/", Text: "BUILD", Limit: 21})
}

// BenchmarkRecordsFrom: read 20 records from a random place of a session of 20,000 ~2 KB
// records (40 MB): the cost must not depend on the place.
func BenchmarkRecordsFrom(b *testing.B) {
	s := openStore(b, benchDB(b), Options{})
	ctx := context.Background()
	if err := s.Create(ctx, storage.Header{ID: "big", WorkingDir: "/w"}, storage.Meta{}); err != nil {
		b.Fatal(err)
	}
	const n = 20000
	for i := 0; i < n; i += 1000 {
		err := s.Update(ctx, "big", func(w storage.Writer) error {
			recs := make([]storage.Record, 1000)
			for j := range recs {
				recs[j] = storage.Record{Data: message(i + j)}
			}
			_, err := w.Append(recs, storage.Meta{})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var ds []time.Duration
	for i := 0; b.Loop(); i++ {
		from := uint64(i*7919%n + 1)
		start := time.Now()
		err := s.View(ctx, "big", func(r storage.Reader) error {
			k := 0
			for _, err := range r.Records(from) {
				if err != nil {
					return err
				}
				if k++; k == 20 {
					break
				}
			}
			return nil
		})
		ds = append(ds, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	medianOf(b, ds)
}

// BenchmarkCommitFloor: an autocommit INSERT of one small row on the same cluster, the cost
// of one commit's WAL flush on this disk that every durable save pays.
func BenchmarkCommitFloor(b *testing.B) {
	u := benchDB(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE floor (id bigint, v bytea)"); err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := conn.Exec(ctx, "INSERT INTO floor VALUES (1, '\\x00')"); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	medianOf(b, ds)
}

// BenchmarkAtScale: the same calls on a database already holding 10,000 sessions and 10
// million messages (synthetic rows written by SQL: 10,000 session rows, 10 million key rows,
// and ~14 chunk rows per 1,000 messages, the proportions TestPGCorpusSizeAtScale measured,
// with small payloads: row counts and index depths are what matter here). It takes several
// minutes and about 2 GB of disk: it runs with SESSIONMEM_MEASURE=1.
func BenchmarkAtScale(b *testing.B) {
	if os.Getenv("SESSIONMEM_MEASURE") == "" {
		b.Skip("set SESSIONMEM_MEASURE=1 to run")
	}
	u := benchDB(b)
	s := openStore(b, u, Options{})
	ctx := context.Background()
	start := time.Now()
	seed, err := pgx.Connect(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	defer seed.Close(ctx)
	for _, q := range []string{
		`SET statement_timeout = 0`,
		`INSERT INTO sessionmem_sessions (id, format, nonce, created_ns, working_dir, dir_key, name, updated_ns,
			messages, preview, match_name, match_preview, last_seq, l2_end, l1_end)
		 SELECT 'syn-' || g, 1, md5(g::text), 1767225600000000000 + g * 60000000000, '/proj/' || (g % 100), '/proj/' || (g % 100),
			'session ' || g, 1767225600000000000 + g * 60000000000, 1000, 'fix the build of package ' || g,
			'session ' || g, 'fix the build of package ' || g, 1000, 1000, 1000
		 FROM generate_series(1, 10000) g`,
		`INSERT INTO sessionmem_keys (sid, key_hash)
		 SELECT s.sid, ('x' || substr(md5(s.sid::text || '-' || k), 1, 16))::bit(64)::bigint
		 FROM sessionmem_sessions s, generate_series(1, 1000) k`,
		`INSERT INTO sessionmem_chunks (sid, first_seq, last_seq, raw_bytes, level, data)
		 SELECT s.sid, c * 72 + 1, least(c * 72 + 72, 1000), 100, 2, decode(md5(c::text), 'hex')
		 FROM sessionmem_sessions s, generate_series(0, 13) c`,
		`VACUUM ANALYZE`,
	} {
		if _, err := seed.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	var keys, chunks int64
	_ = s.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM sessionmem_keys), (SELECT count(*) FROM sessionmem_chunks)").Scan(&keys, &chunks)
	u2, _ := s.Usage(ctx)
	b.Logf("seeded %d sessions, %d key rows, %d chunk rows (%d MB) in %v", u2.Sessions, keys, chunks, u2.Total>>20, time.Since(start).Round(time.Second))
	if err := s.Create(ctx, storage.Header{ID: "live", WorkingDir: "/proj/7"}, storage.Meta{}); err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name string
		fn   func(i int) error
	}{
		{"append", func(i int) error {
			return s.Update(ctx, "live", func(w storage.Writer) error {
				_, err := w.Append([]storage.Record{{Data: message(i), Key: fmt.Sprintf("m%d", i)}}, storage.Meta{Messages: i + 1})
				return err
			})
		}},
		{"list-page", func(int) error { _, err := s.List(ctx, storage.ListQuery{Limit: 21}); return err }},
		{"list-dir-text", func(int) error {
			_, err := s.List(ctx, storage.ListQuery{WorkingDir: "/proj/7", Text: "BUILD", Limit: 21})
			return err
		}},
		{"get", func(i int) error { _, err := s.Get(ctx, fmt.Sprintf("syn-%d", i%10000+1)); return err }},
		{"read-20", func(i int) error {
			return s.View(ctx, "live", func(r storage.Reader) error {
				for _, err := range r.Records(uint64(i%max(int(r.LastSeq()), 1) + 1)) {
					return err
				}
				return nil
			})
		}},
	} {
		var ds []time.Duration
		for i := range 500 {
			t0 := time.Now()
			if err := m.fn(i); err != nil {
				b.Fatalf("%s: %v", m.name, err)
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		b.Logf("%s: median %v, p99 %v", m.name, ds[len(ds)/2].Round(time.Microsecond), ds[len(ds)*99/100].Round(time.Microsecond))
	}
}
