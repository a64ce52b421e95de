package ftsindex

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/internal/buildinfo"
)

// TestNewerFormatNamesWriter: an index file records the sessionmem version that created it,
// and an older build refusing the file names that version.
func TestNewerFormatNamesWriter(t *testing.T) {
	tests := []struct {
		name string
		by   string // written into the file; "-": the table dropped (a file of an earlier build)
		want string
	}{
		{"release", "v9.1.0", fmt.Sprintf(", written by sessionmem v9.1.0; this sessionmem (%s) reads up to %d: upgrade sessionmem to v9.1.0 or later", buildinfo.Version(), SchemaVersion)},
		{"development build", "dev-0123456789ab", ", written by sessionmem dev-0123456789ab; this sessionmem ("},
		{"not recorded", "-", fmt.Sprintf("; this sessionmem (%s) reads up to %d: upgrade sessionmem", buildinfo.Version(), SchemaVersion)},
		{"junk", "v1 \x1b[31m", "; this sessionmem ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ix := openTest(t, dir)
			file := ix.File()
			ix.Close()
			db, err := sql.Open("sqlite", file)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := db.QueryRow(`SELECT version FROM sessionmem_writer`).Scan(&got); err != nil || got != buildinfo.Version() {
				t.Fatalf("recorded writer %q, %v; want %q", got, err, buildinfo.Version())
			}
			stmt, arg := `UPDATE sessionmem_writer SET version = ?`, any(tt.by)
			if tt.by == "-" {
				stmt, arg = `DROP TABLE sessionmem_writer`, nil
			}
			if arg == nil {
				_, err = db.Exec(stmt)
			} else {
				_, err = db.Exec(stmt, arg)
			}
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			setVersion(t, file, SchemaVersion+1)
			_, err = Open(t.Context(), dir, Options{})
			if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v, want ErrNewerFormat saying %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\x1b") {
				t.Fatalf("junk quoted: %q", err)
			}
		})
	}
}
