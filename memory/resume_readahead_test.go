package memory

import (
	"context"
	"fmt"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
)

// readAheadStore hands out Readers that record the ReadAhead calls made on them.
type readAheadStore struct {
	storage.Store
	calls []uint64
}

type readAheadReader struct {
	storage.Reader
	s *readAheadStore
}

func (r readAheadReader) ReadAhead(from uint64) { r.s.calls = append(r.s.calls, from) }

func (s *readAheadStore) View(ctx context.Context, id string, fn func(r storage.Reader) error) error {
	return s.Store.View(ctx, id, func(r storage.Reader) error { return fn(readAheadReader{Reader: r, s: s}) })
}

// TestResumeReadsAhead: a resume page that ends with a cursor asks the store to read ahead
// from the seq the next page starts at (the cursor's), once; the last page asks nothing.
func TestResumeReadsAhead(t *testing.T) {
	inner, err := local.Open(t.TempDir(), local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inner.Close() })
	store := &readAheadStore{Store: inner}
	s := New(store, Options{})
	var msgs []Message
	for i := range 10 {
		msgs = append(msgs, turn(i, fmt.Sprintf("pkg/f%d.go", i), 3000)...)
	}
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: msgs})
	cursor, pages := "", 0
	for {
		store.calls = nil
		page, err := s.Resume(t.Context(), ResumeRequest{SessionID: res.SessionID, MaxTokens: 2000, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if page.NextCursor == "" {
			if len(store.calls) != 0 {
				t.Fatalf("last page (%d) read ahead from %v", pages, store.calls)
			}
			break
		}
		var c resumeCursor
		if err := decodeToken("r1.", page.NextCursor, &c); err != nil {
			t.Fatal(err)
		}
		if len(store.calls) != 1 || store.calls[0] != c.Seq {
			t.Fatalf("page %d (next starts at seq %d) read ahead from %v", pages, c.Seq, store.calls)
		}
		cursor = page.NextCursor
	}
	if pages < 3 {
		t.Fatalf("only %d pages", pages)
	}
}
