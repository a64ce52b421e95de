package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func mustCreate(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := s.Create(context.Background(), storage.Header{ID: id, Created: t0, WorkingDir: "/w"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
}

func appendN(t *testing.T, s *Store, id string, n int, barrier bool) {
	t.Helper()
	err := s.Update(context.Background(), id, func(w storage.Writer) error {
		recs := make([]storage.Record, n)
		for i := range recs {
			recs[i] = storage.Record{Data: []byte(fmt.Sprintf(`{"n":%d,"pad":%q}`, w.LastSeq()+uint64(i)+1, strings.Repeat("x", 40)))}
		}
		if n > 0 {
			recs[0].Barrier = barrier
		}
		_, err := w.Append(recs, storage.Meta{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// chunks returns first-last:level of every chunk of a session.
func chunks(t *testing.T, s *Store, id string) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT c.first_seq, c.last_seq, c.level FROM sessionmem_chunks c
		JOIN sessionmem_sessions s USING (sid) WHERE s.id = $1 ORDER BY c.first_seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var f, l int64
		var level int16
		if err := rows.Scan(&f, &l, &level); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d-%d:%d", f, l, level))
	}
	return out
}

func TestLevels(t *testing.T) {
	s := openStore(t, newSchema(t), Options{TailRecords: 3, TailBytes: 1 << 20, MergeChunks: 2, ChunkRecords: 10, ChunkBytes: 1 << 20})
	mustCreate(t, s, "a")
	for _, step := range []struct {
		n       int
		barrier bool
		want    string
	}{
		{2, false, "1-2:0"},
		{1, false, "1-3:1"},                                 // 3 level-0 records make a level-1 chunk
		{2, false, "1-3:1 4-5:0"},                           //
		{2, false, "1-7:2"},                                 // 2 level-1 chunks merge into level 2
		{1, true, "1-7:2 8-8:0"},                            // a barrier closes the open level-2 chunk
		{3, false, "1-7:2 8-11:1"},                          //
		{3, false, "1-7:2 8-14:2"},                          // a new level-2 chunk
		{3, false, "1-7:2 8-14:2 15-17:1"},                  //
		{3, false, "1-7:2 8-17:2 18-20:2"},                  // it grows up to ChunkRecords
		{25, false, "1-7:2 8-17:2 18-27:2 28-37:2 38-45:2"}, // a big batch goes to level 2 at once
		{1, true, "1-7:2 8-17:2 18-27:2 28-37:2 38-45:2 46-46:0"},
	} {
		appendN(t, s, "a", step.n, step.barrier)
		if got := strings.Join(chunks(t, s, "a"), " "); got != step.want {
			t.Fatalf("after appending %d: chunks %s, want %s", step.n, got, step.want)
		}
		rep, err := s.Verify(context.Background(), "a", false)
		if err != nil || rep.Damaged() != nil {
			t.Fatalf("verify: %+v, %v", rep, err)
		}
	}
	rep, err := s.verifyChunkReport(context.Background(), "a")
	if err != nil || rep.damaged != nil || rep.records != 46 || rep.chunks != 6 || rep.level0 != 1 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	// Byte bound: records of about 200 bytes, level-2 chunks of at most 1,000 bytes (one
	// record alone may exceed it).
	s2 := openStore(t, newSchema(t), Options{TailRecords: 2, TailBytes: 200, MergeChunks: 2, ChunkRecords: 1000, ChunkBytes: 1000})
	mustCreate(t, s2, "b")
	err = s2.Update(context.Background(), "b", func(w storage.Writer) error {
		var recs []storage.Record
		for i := 0; i < 12; i++ {
			size := 180
			if i == 5 {
				size = 3000
			}
			recs = append(recs, storage.Record{Data: []byte(fmt.Sprintf(`{"p":%q}`, strings.Repeat("y", size)))})
		}
		_, err := w.Append(recs, storage.Meta{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(chunks(t, s2, "b"), " "); got != "1-5:2 6-6:2 7-11:2 12-12:2" {
		t.Fatalf("byte-bounded chunks: %s", got)
	}
}

// TestDuplicateKey: a key already stored in the session makes the whole Update roll back and
// fail with ErrDuplicateKey.
func TestDuplicateKey(t *testing.T) {
	s := openStore(t, newSchema(t), Options{})
	ctx := context.Background()
	mustCreate(t, s, "a")
	err := s.Update(ctx, "a", func(w storage.Writer) error {
		_, err := w.Append([]storage.Record{{Data: []byte(`{"m":1}`), Key: "client-1"}}, storage.Meta{Messages: 1})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, "a", func(w storage.Writer) error {
		if _, err := w.Append([]storage.Record{{Data: []byte(`{"m":2}`), Key: "client-2"}}, storage.Meta{Messages: 2}); err != nil {
			return err
		}
		// The conflict shows when the statements reach the server: at the latest at COMMIT.
		_, err := w.Append([]storage.Record{{Data: []byte(`{"m":3}`)}, {Data: []byte(`{"m":1}`), Key: "client-1"}}, storage.Meta{Messages: 4})
		return err
	})
	if !errors.Is(err, storage.ErrDuplicateKey) {
		t.Fatalf("Update returned %v, want ErrDuplicateKey", err)
	}
	m, _ := s.Get(ctx, "a")
	var n int
	_ = s.View(ctx, "a", func(r storage.Reader) error {
		for range r.Records(1) {
			n++
		}
		return nil
	})
	if m.LastSeq != 1 || m.Messages != 1 || n != 1 {
		t.Fatalf("after the rolled-back Update: meta %+v, %d records", m, n)
	}
	// Twice in one batch is refused before anything is sent.
	err = s.Update(ctx, "a", func(w storage.Writer) error {
		_, err := w.Append([]storage.Record{{Data: []byte(`{}`), Key: "k"}, {Data: []byte(`{}`), Key: "k"}}, storage.Meta{})
		return err
	})
	if !errors.Is(err, storage.ErrDuplicateKey) {
		t.Fatalf("a key twice in a batch: %v", err)
	}
	// The key of client-2 was rolled back with its record: it can be stored now.
	err = s.Update(ctx, "a", func(w storage.Writer) error {
		_, err := w.Append([]storage.Record{{Data: []byte(`{"m":2}`), Key: "client-2"}}, storage.Meta{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Keys are per session.
	mustCreate(t, s, "b")
	err = s.Update(ctx, "b", func(w storage.Writer) error {
		_, err := w.Append([]storage.Record{{Data: []byte(`{"m":1}`), Key: "client-1"}}, storage.Meta{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSchemaMigration(t *testing.T) {
	ms := migrations()
	for i, m := range ms {
		if m.version != i+1 {
			t.Fatalf("schema file %s has version %d, want %d (no gaps)", m.name, m.version, i+1)
		}
	}
	u := newSchema(t)
	// Servers starting at once create the tables once.
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), u, Options{})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := openStore(t, u, Options{})
	var v int
	if err := s.pool.QueryRow(context.Background(), "SELECT version FROM sessionmem_schema").Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("schema version %d, %v", v, err)
	}
	// A newer schema is refused, by Open and by a store that was already open.
	if _, err := s.pool.Exec(context.Background(), "UPDATE sessionmem_schema SET version = $1", SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), u, Options{})
	if !errors.Is(err, storage.ErrNewerFormat) || !strings.Contains(err.Error(), "upgrade sessionmem") {
		t.Fatalf("open of a newer schema: %v", err)
	}
	lazy, err := New(u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	if _, err := lazy.List(context.Background(), storage.ListQuery{}); !errors.Is(err, storage.ErrNewerFormat) {
		t.Fatalf("list on a newer schema: %v", err)
	}
	// A session of a newer format is refused; the others still work.
	if _, err := s.pool.Exec(context.Background(), "UPDATE sessionmem_schema SET version = $1", SchemaVersion); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "new")
	mustCreate(t, s, "old")
	if _, err := s.pool.Exec(context.Background(), "UPDATE sessionmem_sessions SET format = 99 WHERE id = 'new'"); err != nil {
		t.Fatal(err)
	}
	if err := s.View(context.Background(), "new", func(storage.Reader) error { return nil }); !errors.Is(err, storage.ErrNewerFormat) {
		t.Fatalf("view of a newer session: %v", err)
	}
	if rep, err := s.Verify(context.Background(), "new", false); err != nil || !errors.Is(rep.NewerFormat(), storage.ErrNewerFormat) {
		t.Fatalf("verify of a newer session: %+v, %v", rep, err)
	}
	appendN(t, s, "old", 2, false)
}

func TestDamage(t *testing.T) {
	s := openStore(t, newSchema(t), Options{TailRecords: 5, MergeChunks: 100})
	ctx := context.Background()
	mustCreate(t, s, "a")
	for i := 0; i < 5; i++ {
		appendN(t, s, "a", 3, false)
	}
	if got := strings.Join(chunks(t, s, "a"), " "); got != "1-6:1 7-12:1 13-15:0" {
		t.Fatalf("chunks %s", got)
	}
	read := func(from uint64) (int, error) {
		n := 0
		err := s.View(ctx, "a", func(r storage.Reader) error {
			for _, err := range r.Records(from) {
				if err != nil {
					return err
				}
				n++
			}
			return nil
		})
		return n, err
	}
	for _, tc := range []struct {
		name, sql string
		from      uint64 // a read from here does not touch the damage
		undamaged int
	}{
		{"flipped byte", `UPDATE sessionmem_chunks SET data = overlay(data placing '\xff'::bytea from 20 for 1) WHERE first_seq = 7`, 13, 3},
		{"wrong raw size", `UPDATE sessionmem_chunks SET raw_bytes = raw_bytes + 1 WHERE first_seq = 7`, 13, 3},
		{"missing chunk", `DELETE FROM sessionmem_chunks WHERE first_seq = 7`, 13, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			rep, err := s.verifyIn(ctx, tx, "a")
			if err != nil || !errors.Is(rep.damaged, storage.ErrCorrupt) || rep.records != 6 {
				t.Fatalf("verify: %+v, %v", rep, err)
			}
			n, err := readIn(ctx, s, tx, "a", 1)
			if !errors.Is(err, storage.ErrCorrupt) || n != 6 {
				t.Fatalf("read from 1: %d records, %v", n, err)
			}
			n, err = readIn(ctx, s, tx, "a", tc.from)
			if err != nil || n != tc.undamaged {
				t.Fatalf("read from %d: %d records, %v", tc.from, n, err)
			}
		})
	}
	if n, err := read(1); err != nil || n != 15 {
		t.Fatalf("after rolling back the damage: %d records, %v", n, err)
	}
}

// verifyIn runs Verify's checks inside tx (so a test can damage rows and roll back).
func (s *Store) verifyIn(ctx context.Context, tx pgx.Tx, id string) (chunkReport, error) {
	rep := chunkReport{id: id}
	row, err := s.readSession(ctx, tx, id, "")
	if err != nil {
		return rep, err
	}
	rep.damaged, err = s.verifyChunks(ctx, tx, row, &rep)
	return rep, err
}

// readIn reads a session's records through tx.
func readIn(ctx context.Context, s *Store, tx pgx.Tx, id string, from uint64) (int, error) {
	row, err := s.readSession(ctx, tx, id, "")
	if err != nil {
		return 0, err
	}
	r := &reader{s: s, ctx: ctx, q: tx, sid: row.sid, hdr: row.hdr, last: row.last}
	n := 0
	for _, err := range r.Records(from) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// TestUnreachable: a closed port, a wrong password, a missing role and a missing database fail
// at once with ErrUnavailable, say what is wrong, and never print the password; the last three
// are ErrMisconfigured and say what to fix instead of calling the database unreachable.
func TestUnreachable(t *testing.T) {
	c := pgtest.Shared(t)
	good := newDB(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().String()
	l.Close()
	withHost := func(host string) string {
		u, _ := url.Parse(good)
		u.Host = host
		return u.String()
	}
	wrongPW := strings.Replace(good, c.Password, "not-the-password-x", 1)
	noDB := func() string { u, _ := url.Parse(good); u.Path = "/nope"; return u.String() }()
	noRole := func() string {
		u, _ := url.Parse(good)
		u.User = url.UserPassword("nobody_here", "not-the-password-x")
		return u.String()
	}()
	for _, tc := range []struct {
		name, url, secret string
		want              []string
		misconfigured     bool // a refusal to fix, not an outage to wait out
	}{
		{"closed port", withHost(closedPort), c.Password, []string{"the database is unreachable", "connect"}, false},
		{"wrong password", wrongPW, "not-the-password-x",
			[]string{"password authentication failed", "28P01", "check the user name and password in the store URL"}, true},
		{"no role", noRole, "not-the-password-x", []string{`user "nobody_here"`, "check the user name"}, true},
		{"no database", noDB, c.Password,
			[]string{`database "nope" does not exist`, "3D000", "create the database"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Open(context.Background(), tc.url, Options{})
			if !errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrMisconfigured) != tc.misconfigured {
				t.Fatalf("open: %v, want ErrUnavailable, ErrMisconfigured %v", err, tc.misconfigured)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("open took %v", d)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q: want %q", msg, w)
				}
			}
			if strings.Contains(msg, tc.secret) || strings.Contains(msg, "\n") || tc.misconfigured && strings.Contains(msg, "unreachable") {
				t.Errorf("error %q: want one line, without the password (nor \"unreachable\" for a refusal)", msg)
			}
			// A lazily opened store answers every call the same way, fast.
			s, err := New(tc.url, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := 0; i < 3; i++ {
				start := time.Now()
				_, err := s.Get(context.Background(), "a")
				if !errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrMisconfigured) != tc.misconfigured ||
					strings.Contains(err.Error(), tc.secret) {
					t.Fatalf("get: %v", err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("get took %v", d)
				}
			}
		})
	}
	if _, err := New("postgres://u:topsecret@host:notaport/db", Options{}); err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("bad URL: %v", err)
	}
}

// TestRestart: while the database is down every call fails fast with ErrUnavailable; once it
// is back, the same store works again without reopening, and nothing committed is lost.
func TestRestart(t *testing.T) {
	c := pgtest.Own(t, pgtest.Options{})
	_, u, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, u, Options{})
	mustCreate(t, s, "a")
	appendN(t, s, "a", 5, false)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		start := time.Now()
		err := s.Update(context.Background(), "a", func(w storage.Writer) error {
			_, err := w.Append([]storage.Record{{Data: []byte(`{"down":1}`)}}, storage.Meta{})
			return err
		})
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("update while down: %v", err)
		}
		if _, err := s.List(context.Background(), storage.ListQuery{}); !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("list while down: %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("calls while down took %v", d)
		}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := s.Update(context.Background(), "a", func(w storage.Writer) error {
			_, err := w.Append([]storage.Record{{Data: []byte(`{"up":1}`)}}, storage.Meta{})
			return err
		})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing 15 s after the restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	m, err := s.Get(context.Background(), "a")
	if err != nil || m.LastSeq != 6 {
		t.Fatalf("after the restart: %+v, %v", m, err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db?sslmode=disable": "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgresql://u@h/db?password=secret":           "postgresql://u@h/db?password=xxxxx",
		"postgres://h/db":                               "postgres://h/db",
		"host=h password=secret":                        "(connection string)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDuplicateKeyThenRead: a read inside the Update sends the queued statements, so the
// conflict shows there, and the writer refuses further use.
func TestDuplicateKeyThenRead(t *testing.T) {
	s := openStore(t, newSchema(t), Options{})
	ctx := context.Background()
	mustCreate(t, s, "a")
	err := s.Update(ctx, "a", func(w storage.Writer) error {
		_, err := w.Append([]storage.Record{{Data: []byte(`{"m":1}`), Key: "k"}}, storage.Meta{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, "a", func(w storage.Writer) error {
		if _, err := w.Append([]storage.Record{{Data: []byte(`{"m":2}`), Key: "k"}}, storage.Meta{}); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		for _, err := range w.Records(1) {
			if !errors.Is(err, storage.ErrDuplicateKey) {
				return fmt.Errorf("read after a conflicting append: %v", err)
			}
			break
		}
		if _, err := w.Append([]storage.Record{{Data: []byte(`{"m":3}`)}}, storage.Meta{}); !errors.Is(err, storage.ErrDuplicateKey) {
			return fmt.Errorf("append after a failed statement: %v", err)
		}
		return nil // ignoring the error must not commit anything
	})
	if !errors.Is(err, storage.ErrDuplicateKey) {
		t.Fatalf("Update returned %v", err)
	}
	if m, _ := s.Get(ctx, "a"); m.LastSeq != 1 {
		t.Fatalf("after the rolled-back Update: %+v", m)
	}
}
