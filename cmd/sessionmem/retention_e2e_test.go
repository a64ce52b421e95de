package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/local"

	"github.com/sessionmem/sessionmem/memory"
)

// A server started with a retention limit applies it on its own, in the background, and keeps
// what is recent.
func TestServeAppliesRetention(t *testing.T) {
	dir := t.TempDir()
	store, err := local.Open(dir, local.Options{Summarize: memory.Summarize})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-10 * 24 * time.Hour)
	for i, when := range []time.Time{old, old, time.Now()} {
		svc := memory.New(store, memory.Options{Now: func() time.Time { return when }})
		if _, err := svc.Save(context.Background(), memory.SaveRequest{WorkingDir: "/w",
			Messages: []memory.Message{{Role: memory.RoleUser, Content: []memory.Block{{Type: "text", Text: fmt.Sprint(i)}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	c := stdioClient(t, dir, "SESSIONMEM_MAX_AGE=7d")
	deadline := time.Now().Add(5 * time.Second)
	for {
		var out struct {
			Sessions []struct {
				Preview string `json:"preview"`
			} `json:"sessions"`
		}
		call(t, c, "session_list", obj{}, &out)
		if len(out.Sessions) == 1 && out.Sessions[0].Preview == "2" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after retention: %+v", out.Sessions)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
