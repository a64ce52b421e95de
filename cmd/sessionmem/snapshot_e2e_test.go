package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
)

// resumeEverything pages through a whole resume and returns each page's structured content.
func resumeEverything(t *testing.T, c *client.Client, id string) []string {
	t.Helper()
	var pages []string
	cursor := ""
	for {
		args := obj{"session_id": id, "max_tokens": 5000}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res := call(t, c, "session_resume", args, nil)
		b, _ := json.Marshal(res.StructuredContent)
		pages = append(pages, string(b))
		var page struct {
			NextCursor string `json:"next_cursor"`
		}
		json.Unmarshal(b, &page)
		if cursor = page.NextCursor; cursor == "" {
			return pages
		}
	}
}

// TestStateSnapshotAcrossRestarts: a server that stops writes the state snapshots of the long
// sessions it wrote; one killed with SIGKILL leaves the snapshot it wrote once the session
// was idle. Either way the next server answers exactly what the first one would have.
func TestStateSnapshotAcrossRestarts(t *testing.T) {
	store := t.TempDir()
	c := stdioClient(t, store)
	var saved struct {
		SessionID string `json:"session_id"`
	}
	// About 400 KB: a session long enough to be worth a snapshot.
	call(t, c, "session_save", obj{"working_dir": "/p", "messages": msgs("a", 80, strings.Repeat("first part ", 250))}, &saved)
	id := saved.SessionID
	want := resumeEverything(t, c, id)
	c.Close()
	snap := filepath.Join(store, "sessions", id+".state")
	st, err := os.Stat(snap)
	if err != nil {
		t.Fatalf("no snapshot after the server stopped: %v", err)
	}

	c = stdioClient(t, store)
	if got := resumeEverything(t, c, id); !reflect.DeepEqual(got, want) {
		t.Fatal("after a restart the resume differs")
	}
	c.Close()

	// SIGKILL after the session went idle: the idle snapshot is there, and newer.
	srv := startLines(t, store)
	more, _ := json.Marshal(obj{"session_id": id, "messages": msgs("b", 20, "second part")})
	srv.roundTrip(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_save","arguments":%s}}`, more))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if now, err := os.Stat(snap); err == nil && now.ModTime().After(st.ModTime()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new snapshot 20 s after the last save")
		}
		time.Sleep(50 * time.Millisecond)
	}
	srv.cmd.Process.Kill()
	srv.cmd.Wait()

	c = stdioClient(t, store)
	var all struct {
		Messages []json.RawMessage `json:"messages"`
	}
	call(t, c, "session_resume", obj{"session_id": id, "max_tokens": 1000000}, &all)
	if len(all.Messages) != 300 {
		t.Fatalf("after SIGKILL and a restart: %d messages, want 300", len(all.Messages))
	}
}
