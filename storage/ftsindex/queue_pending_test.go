package ftsindex

import (
	"testing"
	"time"
)

// TestQueuePending: Pending counts what waits for a flush, and nothing once it is indexed.
func TestQueuePending(t *testing.T) {
	ix := openTest(t, t.TempDir())
	q := ix.NewQueue(QueueOptions{Delay: time.Hour})
	defer q.Close(t.Context())
	if n := q.Pending(); n != 0 {
		t.Fatalf("empty queue: Pending %d", n)
	}
	b := Batch{Session: sess("s"), From: 1, Through: 3}
	b.Docs = append(b.Docs, doc("s", 1, "user", "one"), doc("s", 2, "user", "two"), doc("s", 3, "user", "three"))
	if err := q.Add(b); err != nil {
		t.Fatal(err)
	}
	if n := q.Pending(); n != 3 {
		t.Fatalf("Pending %d after adding 3 docs, want 3", n)
	}
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := q.Pending(); n != 0 {
		t.Fatalf("Pending %d after Flush, want 0", n)
	}
}
