package local

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// testLines returns the fixture record payloads (JSON objects without "seq").
func testLines(t testing.TB) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "storage", "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// storedLine is what storage writes for payload p at seq.
func storedLine(seq uint64, p []byte) string {
	return `{"seq":` + strconv.FormatUint(seq, 10) + "," + string(p[1:])
}

func mustOpen(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustCreate(t testing.TB, s *Store, id string) {
	t.Helper()
	if err := s.Create(context.Background(), storage.Header{ID: id, WorkingDir: "/work/" + id}, storage.Meta{Name: "n-" + id}); err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
}

// appendBatches appends each batch with its own Update and returns every acknowledged line.
func appendBatches(t testing.TB, s *Store, id string, batches [][]storage.Record) []string {
	t.Helper()
	var got []string
	for _, b := range batches {
		err := s.updateW(context.Background(), id, func(w *Writer) error {
			out, err := w.Append(b, storage.Meta{Name: "n-" + id})
			for _, r := range out {
				got = append(got, string(r.Data))
			}
			return err
		})
		if err != nil {
			t.Fatalf("Append to %s: %v", id, err)
		}
	}
	return got
}

// readAll returns all lines of a session via View, and the error that stopped it (if any).
func readAll(t testing.TB, s *Store, id string, from uint64) ([]string, error) {
	t.Helper()
	var got []string
	var iterErr error
	err := s.viewR(context.Background(), id, func(r *Reader) error {
		for rec, err := range r.Records(from) {
			if err != nil {
				iterErr = err
				break
			}
			got = append(got, string(rec.Data))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, iterErr
}

// readAllWriter is readAll through Update (which repairs first).
func readAllWriter(s *Store, id string) ([]string, error) {
	var got []string
	err := s.updateW(context.Background(), id, func(w *Writer) error {
		for rec, err := range w.Records(1) {
			if err != nil {
				return err
			}
			got = append(got, string(rec.Data))
		}
		if n := uint64(len(got)); n != w.LastSeq() {
			return fmt.Errorf("LastSeq %d but %d records", w.LastSeq(), n)
		}
		return nil
	})
	return got, err
}

func recordsOf(payloads [][]byte) []storage.Record {
	out := make([]storage.Record, len(payloads))
	for i, p := range payloads {
		out[i] = storage.Record{Data: p}
	}
	return out
}

// logCounter counts warnings.
type logCounter struct {
	mu   sync.Mutex
	msgs []string
}

func (c *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	c.msgs = append(c.msgs, msg)
	return nil
}
func (c *logCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCounter) WithGroup(string) slog.Handler      { return c }
func (c *logCounter) count(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.msgs {
		if bytes.Contains([]byte(m), []byte(sub)) {
			n++
		}
	}
	return n
}

func equalLines(t testing.TB, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("record %d:\n got %.200s\nwant %.200s", i, got[i], want[i])
		}
	}
}

// memTempDir returns a temp dir on tmpfs when there is one. The byte-by-byte recovery loops
// run thousands of repairs, each with fsyncs that cost milliseconds on a real disk but test
// nothing more there; everything else uses t.TempDir().
func memTempDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "storage-test-*"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// viewR and updateW run View and Update with the concrete Reader and Writer, so tests can
// reach the local store's internals.
func (s *Store) viewR(ctx context.Context, id string, fn func(r *Reader) error) error {
	return s.View(ctx, id, func(r storage.Reader) error { return fn(r.(*Reader)) })
}

func (s *Store) updateW(ctx context.Context, id string, fn func(w *Writer) error) error {
	return s.Update(ctx, id, func(w storage.Writer) error { return fn(w.(*Writer)) })
}

// skipUnderWine skips a test in the Windows build's run under Wine (scripts/windows.sh sets
// SESSIONMEM_WINE=1) that proves nothing there Linux does not: logic on file contents alone,
// slow under Wine, where every file operation is a round trip to the wine server.
func skipUnderWine(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("SESSIONMEM_WINE") == "1" {
		t.Skip("under Wine: " + why)
	}
}
