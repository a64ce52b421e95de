package postgres

import (
	"context"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestTextWithNUL: listing metadata holding U+0000, which PostgreSQL's text cannot hold, is
// stored with U+FFFD in its place instead of failing the save (a session whose first prompt
// held one could be neither saved nor migrated here), and a list query holding one is
// answered instead of failing.
func TestTextWithNUL(t *testing.T) {
	s := openStore(t, newSchema(t), Options{})
	ctx := context.Background()
	m := storage.Meta{Name: "a\x00name", Preview: "first \x00 prompt"}
	if err := s.Create(ctx, storage.Header{ID: "nul", Created: t0, WorkingDir: "/w"}, m); err != nil {
		t.Fatal(err)
	}
	err := s.Update(ctx, "nul", func(w storage.Writer) error {
		_, err := w.Append([]storage.Record{{Data: []byte(`{"text":"a\u0000b"}`)}}, storage.Meta{Name: "b\x00", Preview: "\x00 again"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "nul")
	if err != nil || got.Name != "b\uFFFD" || got.Preview != "\uFFFD again" {
		t.Fatalf("Get: %+v %v", got, err)
	}
	for q, n := range map[string]int{"\x00 AGAIN": 1, "a\x00": 0} {
		list, err := s.List(ctx, storage.ListQuery{Text: q})
		if err != nil || len(list) != n {
			t.Errorf("List %q: %d sessions, %v; want %d", q, len(list), err, n)
		}
	}
}
