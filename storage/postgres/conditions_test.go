package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessionmem/sessionmem/storage"
)

// TestConditionErrors: the database's disk full and read-only errors (as the server sends
// them, injected here; cmd/sessionmem's TestFullDiskPostgres and TestReadOnlyPostgres make
// the server send them) wrap the storage conditions, so memory words them plainly.
func TestConditionErrors(t *testing.T) {
	var s Store
	for _, tc := range []struct {
		code           string
		full, readOnly bool
	}{
		{"53100", true, false}, // disk_full
		{"25006", false, true}, // read_only_sql_transaction
		{"42501", false, true}, // insufficient_privilege
		{"53200", false, false},
		{"23505", false, false},
	} {
		err := s.wrap(context.Background(), "append", &pgconn.PgError{Code: tc.code, Message: `could not extend file "base/16384/16390": No space left on device`})
		if storage.DiskFull(err) != tc.full || storage.ReadOnly(err) != tc.readOnly {
			t.Errorf("%s: %v: disk full %v, read-only %v", tc.code, err, storage.DiskFull(err), storage.ReadOnly(err))
		}
		if errors.Is(err, storage.ErrUnavailable) {
			t.Errorf("%s: unavailable: %v", tc.code, err)
		}
	}
}
