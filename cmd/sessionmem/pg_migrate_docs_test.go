package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// TestPGMigrateWritesSearchDocuments: `sessionmem migrate` into PostgreSQL (a real process)
// exits only once every copied message has its search document, so a search right after it
// finds the last message of the last session, and no warning says documents were left to a
// backfill. Before, Close cancelled the document writer mid-write and dropped its batch.
func TestPGMigrateWritesSearchDocuments(t *testing.T) {
	dir := t.TempDir()
	st, err := local.Open(dir, local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	svc := memory.New(st, memory.Options{})
	const sessions = 20
	var words []string
	for i := range sessions {
		word := fmt.Sprintf("zebrafinch%c", 'a'+i)
		words = append(words, word)
		var msgs []memory.Message
		for j := range 300 {
			msgs = append(msgs, userMsg(fmt.Sprintf("message %d of session %d about the build", j, i)))
		}
		msgs = append(msgs, userMsg("the last word is "+word+" quokka"))
		if _, err := svc.Save(t.Context(), memory.SaveRequest{WorkingDir: "/w", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	url := pgtest.Shared(t).NewDatabase(t)
	cmd := exec.Command(binary(t), "migrate", "--from", dir, "--to", url)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || strings.Contains(stderr.String(), "WARN") {
		t.Fatalf("migrate: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	// Every session's documents are written: no backfill needed.
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var behind, total int
	err = conn.QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE docs_through < last_seq), count(*) FROM sessionmem_sessions`).Scan(&behind, &total)
	if err != nil || behind != 0 || total != sessions {
		t.Fatalf("after migrate: %d of %d sessions without all their search documents (%v)", behind, total, err)
	}
	for _, w := range words {
		r := runCLI(t, "", "search", w+" quokka", "--json", "--store", url).must(t)
		if !strings.Contains(r.stdout, w) {
			t.Fatalf("search %q right after migrate finds nothing:\n%s", w, r.stdout)
		}
	}
}
