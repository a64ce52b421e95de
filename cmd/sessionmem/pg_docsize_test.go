package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// TestPGCorpusSizeDocs measures where the bytes of the search documents go: the corpus
// imported $SESSIONMEM_SIZE_COPIES times (default 1) into a store with memory.Docs, then
// VACUUM FULL (live data), then the size of each relation of sessionmem_documents (heap,
// TOAST, each index) against the JSONL, and the ratio with and without documents. It also
// measures variants of the documents table built from the same rows (compression, stripped
// positions), for docs/BENCHMARKS.md. Runs with SESSIONMEM_MEASURE=1.
func TestPGCorpusSizeDocs(t *testing.T) {
	copies := measureCopies(t, 1)
	c := pgtest.Own(t, pgtest.Options{})
	src := importCorpus(t)
	ctx := context.Background()
	_, url, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := postgres.Open(ctx, url, postgres.Options{Docs: memory.Docs, BackfillInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := local.Open(src, local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	ids, _ := ls.IDs(ctx)
	var messages int64
	for k := range copies {
		for _, id := range ids {
			_, m := replayAs(t, dst, ls, id, fmt.Sprintf("c%d-%s", k, id), 64)
			messages += m
		}
	}
	if err := dst.Reindex(ctx, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "VACUUM FULL ANALYZE"); err != nil {
		t.Fatal(err)
	}
	u, err := dst.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst.Close()
	var docs int64
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM sessionmem_documents").Scan(&docs)
	t.Logf("%d messages, %d documents, %d bytes as JSONL; tables %d bytes (%.2fx), without documents %d (%.2fx), documents %d (%.2f of the JSONL)",
		messages, docs, u.RawBytes, u.Total, ratio(u.RawBytes, u.Total), u.Total-u.Documents, ratio(u.RawBytes, u.Total-u.Documents),
		u.Documents, ratio(u.Documents, u.RawBytes))
	t.Logf("sessionmem_documents: %s", relationSizes(ctx, t, conn, "sessionmem_documents", u.RawBytes))
	var avg, rowAvg float64
	_ = conn.QueryRow(ctx, "SELECT avg(pg_column_size(terms)), avg(pg_column_size(d.*)) FROM sessionmem_documents d").Scan(&avg, &rowAvg)
	t.Logf("per document: terms %.0f bytes as stored, the whole row %.0f (the rest: %.0f)", avg, rowAvg, rowAvg-avg)
	t.Logf("per 1,000 messages: documents %.0f bytes, the other tables %.0f", float64(u.Documents)*1000/float64(messages),
		float64(u.Total-u.Documents)*1000/float64(messages))

	// Variants, each a copy of the documents with one change.
	for _, v := range []struct{ name, setup, fill string }{
		{"as is (copy)", ``, `SELECT * FROM sessionmem_documents`},
		{"terms compressed (pglz, toast_tuple_target 128)", `ALTER TABLE %[1]s SET (toast_tuple_target = 128)`, `SELECT * FROM sessionmem_documents`},
		{"terms compressed (lz4, toast_tuple_target 128)", `ALTER TABLE %[1]s SET (toast_tuple_target = 128); ALTER TABLE %[1]s ALTER COLUMN terms SET COMPRESSION lz4`, `SELECT * FROM sessionmem_documents`},
		{"terms stripped of positions", ``, `SELECT sid, seq, n, doc, entry_id, kind, role, time_ns, files, strip(terms) FROM sessionmem_documents`},
		{"terms stripped, lz4, target 128", `ALTER TABLE %[1]s SET (toast_tuple_target = 128); ALTER TABLE %[1]s ALTER COLUMN terms SET COMPRESSION lz4`, `SELECT sid, seq, n, doc, entry_id, kind, role, time_ns, files, strip(terms) FROM sessionmem_documents`},
	} {
		name := "sizes_variant"
		_, err := conn.Exec(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS %[1]s; CREATE TABLE %[1]s (LIKE sessionmem_documents INCLUDING STORAGE INCLUDING COMPRESSION)`, name))
		if err != nil {
			t.Fatal(err)
		}
		if v.setup != "" {
			if _, err := conn.Exec(ctx, fmt.Sprintf(v.setup, name)); err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %[1]s %[2]s;
			ALTER TABLE %[1]s ADD PRIMARY KEY (sid, seq, n);
			CREATE INDEX ON %[1]s USING gin (terms); CREATE INDEX ON %[1]s USING gin (files);
			CREATE UNIQUE INDEX ON %[1]s (doc)`, name, v.fill)); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+name); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", v.name, relationSizes(ctx, t, conn, name, u.RawBytes))
	}
}

// relationSizes lists the heap, TOAST and each index of a table, with the total's share of
// raw.
func relationSizes(ctx context.Context, t *testing.T, conn *pgx.Conn, table string, raw int64) string {
	var heap, toast, total int64
	err := conn.QueryRow(ctx, `SELECT pg_relation_size(c.oid) + pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm'),
		coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0), pg_total_relation_size(c.oid)
		FROM pg_class c WHERE c.relname = $1`, table).Scan(&heap, &toast, &total)
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprintf("total %d (%.3f of the JSONL): heap %d, TOAST %d", total, ratio(total, raw), heap, toast)
	rows, err := conn.Query(ctx, `SELECT i.relname, pg_total_relation_size(i.oid) FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid WHERE c.relname = $1 ORDER BY i.relname`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		var sz int64
		if err := rows.Scan(&n, &sz); err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintf(", %s %d", n, sz)
	}
	return out
}
