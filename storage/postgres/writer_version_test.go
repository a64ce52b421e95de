package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestNewerSchemaNamesWriter: the migration records the sessionmem version that made it, and
// a build that finds the schema newer than it knows names that version.
func TestNewerSchemaNamesWriter(t *testing.T) {
	u := newSchema(t)
	s := openStore(t, u, Options{})
	ctx := context.Background()
	var by string
	if err := s.pool.QueryRow(ctx, "SELECT written_by FROM sessionmem_schema").Scan(&by); err != nil || by != storage.WriterVersion() {
		t.Fatalf("written_by %q, %v; want %q", by, err, storage.WriterVersion())
	}
	tests := []struct {
		name, by, alter, want string
	}{
		{"release", "v9.1.0", "", fmt.Sprintf("the database's sessionmem schema has format version %d, written by sessionmem v9.1.0; this sessionmem (%s) reads up to %d: upgrade sessionmem to v9.1.0 or later",
			SchemaVersion+1, storage.WriterVersion(), SchemaVersion)},
		{"migrated by a build that did not record it", "", "ALTER TABLE sessionmem_schema DROP COLUMN written_by",
			fmt.Sprintf("the database's sessionmem schema has format version %d; this sessionmem (%s) reads up to %d: upgrade sessionmem", SchemaVersion+1, storage.WriterVersion(), SchemaVersion)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stmt := "UPDATE sessionmem_schema SET version = $1, written_by = '" + tt.by + "'"
			if tt.alter != "" {
				if _, err := s.pool.Exec(ctx, tt.alter); err != nil {
					t.Fatal(err)
				}
				stmt = "UPDATE sessionmem_schema SET version = $1"
			}
			if _, err := s.pool.Exec(ctx, stmt, SchemaVersion+1); err != nil {
				t.Fatal(err)
			}
			_, err := Open(ctx, u, Options{})
			var nf *storage.NewerFormatError
			if !errors.As(err, &nf) || !errors.Is(err, storage.ErrNewerFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v\nwant a NewerFormatError saying %q", err, tt.want)
			}
		})
	}
}
