package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
	"github.com/sessionmem/sessionmem/storage/storecopy"
)

// corpusDir holds the shared transcripts; tests that need them skip when it is absent.
const corpusDir = "/work/shared/corpus"

// TestPGCorpusSize measures the PostgreSQL tables (pg_total_relation_size of every sessionmem
// table) holding the four corpus transcripts, against the same records as plain JSONL, for
// three ways of writing them: one import (large batches), one save per message, and saves of
// four messages (every batch through its own Update, as session_save does). The cluster runs
// autovacuum every second; the sizes are taken after the writes and once autovacuum has
// caught up, and again after VACUUM FULL (the live data).
//
// The bar: at least 3x smaller than the JSONL, as written for the import, live for the saves.
// Saves replace small chunks by merged ones, so until autovacuum reuses the space of the
// replaced rows a table holds them too; on this 4 MB corpus written in seconds that is most
// of the table (TestPGCorpusSizeAtScale measures a store that keeps growing). The save
// replays run with SESSIONMEM_MEASURE=1.
func TestPGCorpusSize(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skip("corpus not found")
	}
	if testing.Short() {
		t.Skip("short")
	}
	c := pgtest.Own(t, pgtest.Options{AutovacuumNaptime: "1s"})
	src := importCorpus(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		batch int
	}{
		{"import", 0},
		{"one save per message", 1},
		{"saves of 4 messages", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.batch > 0 && os.Getenv("SESSIONMEM_MEASURE") == "" {
				t.Skip("set SESSIONMEM_MEASURE=1 to measure save replays")
			}
			_, url, err := c.CreateDatabase(ctx)
			if err != nil {
				t.Fatal(err)
			}
			dst, err := postgres.Open(ctx, url, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			ls, err := local.Open(src, local.Options{Summarize: memory.Summarize})
			if err != nil {
				t.Fatal(err)
			}
			defer ls.Close()
			res, err := storecopy.Copy(ctx, dst, ls, storecopy.Options{Key: memory.RecordKey, Barrier: memory.RecordBarrier, BatchRecords: tc.batch})
			if err != nil || len(res.Failed) > 0 {
				t.Fatalf("copy: %+v %v", res, err)
			}
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			written, _ := dst.Usage(ctx)
			time.Sleep(3 * time.Second) // autovacuum's turn
			if _, err := conn.Exec(ctx, "VACUUM"); err != nil {
				t.Fatal(err)
			}
			u, _ := dst.Usage(ctx)
			detail := tableSizes(ctx, conn)
			if _, err := conn.Exec(ctx, "VACUUM FULL"); err != nil {
				t.Fatal(err)
			}
			live, _ := dst.Usage(ctx)
			t.Logf("%d records, %d bytes as JSONL; tables %d bytes right after the writes (%.2fx), %d after autovacuum (%.2fx: %s), %d live (%.2fx: %s)",
				res.Records, u.RawBytes, written.Total, ratio(u.RawBytes, written.Total), u.Total, ratio(u.RawBytes, u.Total), detail,
				live.Total, ratio(u.RawBytes, live.Total), tableSizes(ctx, conn))
			got := ratio(u.RawBytes, written.Total)
			if tc.batch > 0 {
				got = ratio(u.RawBytes, live.Total)
			}
			if got < 3 {
				t.Errorf("tables only %.2fx smaller than the JSONL", got)
			}
		})
	}
}

// TestPGCorpusSizeAtScale writes the corpus $SESSIONMEM_SIZE_COPIES times (default 10), as
// sessions of their own, one save of 4 messages at a time, into one database whose autovacuum
// runs every second: the sizes a store that keeps growing settles at, and the cost per 1,000
// messages. It takes about a minute: it runs with SESSIONMEM_MEASURE=1.
func TestPGCorpusSizeAtScale(t *testing.T) {
	copies := measureCopies(t, 10)
	c := pgtest.Own(t, pgtest.Options{AutovacuumNaptime: "1s"})
	src := importCorpus(t)
	ctx := context.Background()
	_, url, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	ls, err := local.Open(src, local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	ids, _ := ls.IDs(ctx)
	start := time.Now()
	var messages, records int64
	for k := range copies {
		for _, id := range ids {
			n, m := replayAs(t, dst, ls, id, fmt.Sprintf("c%d-%s", k, id), 4)
			records += n
			messages += m
		}
	}
	took := time.Since(start)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	time.Sleep(3 * time.Second)
	if _, err := conn.Exec(ctx, "VACUUM"); err != nil {
		t.Fatal(err)
	}
	u, _ := dst.Usage(ctx)
	var keyRows int64
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM sessionmem_keys").Scan(&keyRows)
	detail := tableSizes(ctx, conn)
	if _, err := conn.Exec(ctx, "VACUUM FULL"); err != nil {
		t.Fatal(err)
	}
	live, _ := dst.Usage(ctx)
	t.Logf("%d sessions, %d records (%d messages), %d bytes as JSONL, written in %v; tables %d bytes after autovacuum (%.2fx: %s), %d live (%.2fx: %s)",
		u.Sessions, records, messages, u.RawBytes, took.Round(time.Millisecond), u.Total, ratio(u.RawBytes, u.Total), detail,
		live.Total, ratio(u.RawBytes, live.Total), tableSizes(ctx, conn))
	t.Logf("per 1,000 messages: %.0f bytes after autovacuum, %.0f live; %.1f chunk rows, %.0f key rows, %.1f session rows",
		float64(u.Total)*1000/float64(messages), float64(live.Total)*1000/float64(messages),
		float64(live.Chunks)*1000/float64(messages), float64(keyRows)*1000/float64(messages), float64(live.Sessions)*1000/float64(messages))
	if r := ratio(u.RawBytes, u.Total); r < 3 {
		t.Errorf("tables only %.2fx smaller than the JSONL", r)
	}
}

// replayAs writes the records of session id of src into dst as session newID, batch records
// per Update (per save), with the keys and barriers memory gives them. It returns the
// records and messages written.
func replayAs(t *testing.T, dst, src storage.Store, id, newID string, batch int) (records, messages int64) {
	t.Helper()
	ctx := context.Background()
	meta, err := src.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var recs []storage.Record
	var hdr storage.Header
	err = src.View(ctx, id, func(r storage.Reader) error {
		hdr = r.Header()
		for rec, err := range r.Records(1) {
			if err != nil {
				return err
			}
			data, _ := storage.StripSeq(rec.Data)
			recs = append(recs, storage.Record{Kind: rec.Kind, Data: data, Key: memory.RecordKey(rec), Barrier: memory.RecordBarrier(rec)})
			if rec.Kind == memory.KindMessage {
				messages++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hdr.ID, hdr.Nonce, hdr.Version = newID, "", 0
	if err := dst.Create(ctx, hdr, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	meta.ID = newID
	for i := 0; i < len(recs); i += batch {
		err := dst.Update(ctx, newID, func(w storage.Writer) error {
			_, err := w.Append(recs[i:min(i+batch, len(recs))], meta)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return int64(len(recs)), messages
}

func ratio(a, b int64) float64 { return float64(a) / float64(b) }

// tableSizes lists pg_total_relation_size of each sessionmem table.
func tableSizes(ctx context.Context, conn *pgx.Conn) string {
	var out string
	rows, err := conn.Query(ctx, `SELECT relname, pg_total_relation_size(oid) FROM pg_class
		WHERE relname LIKE 'sessionmem_%' AND relkind = 'r' ORDER BY relname`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		var sz int64
		_ = rows.Scan(&n, &sz)
		if out != "" {
			out += " "
		}
		out += fmt.Sprintf("%s=%d", n[len("sessionmem_"):], sz)
	}
	return out
}

// measureCopies skips a measurement unless the corpus is there and SESSIONMEM_MEASURE is set,
// and returns how many copies of the corpus to write: $SESSIONMEM_SIZE_COPIES, or def.
func measureCopies(t *testing.T, def int) int {
	t.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skip("corpus not found")
	}
	if os.Getenv("SESSIONMEM_MEASURE") == "" {
		t.Skip("set SESSIONMEM_MEASURE=1 to run")
	}
	copies := def
	if v := os.Getenv("SESSIONMEM_SIZE_COPIES"); v != "" {
		fmt.Sscan(v, &copies)
	}
	return copies
}

// importCorpus imports the corpus's transcripts into a new local store and returns its path.
func importCorpus(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	src := t.TempDir()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	runCLI(t, "", append([]string{"import", "--store", src, "--file"}, files...)...).must(t)
	return src
}
