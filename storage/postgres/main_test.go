package postgres

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
	"github.com/sessionmem/sessionmem/storage/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	stopBench()
	os.Exit(code)
}

// newDB returns the URL of a fresh database on the package's cluster.
func newDB(t testing.TB) string {
	t.Helper()
	return pgtest.Shared(t).NewDatabase(t)
}

// newSchema returns the URL of a fresh, empty schema (faster to make than a database).
func newSchema(t testing.TB) string {
	t.Helper()
	return pgtest.Shared(t).NewSchema(t)
}

// openStore opens a store on url, closed when the test ends.
func openStore(t testing.TB, url string, opts Options) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, url, opts)
	if err != nil {
		t.Fatalf("open %s: %v", Redact(url), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestContract runs the backend contract suite against PostgreSQL, with small chunk
// thresholds so merges, barriers and multi-chunk reads are exercised by every subtest.
func TestContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"default", Options{Docs: storetest.Docs}},
		{"small-chunks", Options{TailRecords: 3, TailBytes: 300, MergeChunks: 2, ChunkRecords: 7, ChunkBytes: 600, Docs: storetest.Docs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, storetest.Backend{
				New: func(t *testing.T) string { return newSchema(t) },
				Open: func(t *testing.T, url string) storage.Store {
					s, err := Open(context.Background(), url, tc.opts)
					if err != nil {
						t.Fatal(err)
					}
					return s
				},
			})
		})
	}
}
