package memory

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sessionmem/sessionmem/redact/redacttest"
	"github.com/sessionmem/sessionmem/storage/local"
)

// TestRedactStoreCleansWhatOlderVersionsWrote: a store written without redaction (as an older
// sessionmem, or older rules, left it) holds secrets in names of every rename, the working
// dir, model, message text and ids, and the index's old lines. RedactStore leaves none of them
// on disk, and the sessions stay whole and usable.
func TestRedactStoreCleansWhatOlderVersionsWrote(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	secrets := redacttest.Plant(21)
	pick := func(kind string) redacttest.Secret {
		for _, s := range secrets {
			if s.Kind == kind {
				return s
			}
		}
		t.Fatalf("no kind %s", kind)
		return redacttest.Secret{}
	}
	gh, oa, aws, env := pick("github-token"), pick("openai-project-key"), pick("aws-cli-configure-set"), pick("env-file-line")
	var ids []string
	{
		store, err := local.Open(dir, local.Options{Summarize: Summarize})
		if err != nil {
			t.Fatal(err)
		}
		old := New(store, Options{}) // no redaction: what an older version stored
		for i := range 3 {
			r, err := old.Save(ctx, SaveRequest{WorkingDir: "/home/me/" + gh.Text, Name: "first " + oa.Text, Model: aws.Text,
				Messages: []Message{user(gh.Text, "run "+aws.Text), assistantCall("a1", gh.Text, "bash", `{"cmd":"`+env.Text+`"}`), toolResult("t1", gh.Text, "ok")}})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"second " + gh.Text, "third " + env.Text} {
				if _, err := old.Save(ctx, SaveRequest{SessionID: r.SessionID, Name: n, Messages: []Message{user("u"+n[:1]+string(rune('0'+i)), n)}}); err != nil {
					t.Fatal(err)
				}
			}
			ids = append(ids, r.SessionID)
		}
		if redacttest.Leaks(readStore(t, dir), secrets) == "" {
			t.Fatal("the unredacted store holds no secret: the test plants nothing")
		}
		store.Close()
	}
	store, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	s := New(store, redactOpts(t))
	dry, err := s.RedactStore(ctx, true, nil)
	if err != nil || len(dry.Changed) != 3 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	rep, err := s.RedactStore(ctx, false, nil)
	if err != nil || len(rep.Changed) != 3 || len(rep.Failed) != 0 {
		t.Fatalf("redact: %+v, %v", rep, err)
	}
	again, err := s.RedactStore(ctx, false, nil)
	if err != nil || len(again.Changed) != 0 {
		t.Fatalf("second run changed %v, %v", again.Changed, err)
	}
	for _, id := range ids {
		res, err := s.Resume(ctx, ResumeRequest{SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 5 {
			t.Fatalf("session %s has %d messages after the rewrite", id, len(res.Messages))
		}
		// A retried save of the old, secret-bearing id stores nothing twice.
		r, err := s.Save(ctx, SaveRequest{SessionID: id, Messages: []Message{user(gh.Text, "again")}})
		if err != nil || r.Saved != 0 {
			t.Fatalf("retry after rewrite: %+v, %v", r, err)
		}
		b, _ := json.Marshal(res)
		if leaks := redacttest.Leaks(b, secrets); leaks != "" {
			t.Fatalf("resume shows %s", leaks)
		}
	}
	list, err := s.List(ctx, ListRequest{WorkingDir: "/home/me/" + gh.Text})
	if err != nil || len(list.Sessions) != 3 {
		t.Fatalf("list by the old working dir: %d sessions, %v", len(list.Sessions), err)
	}
	store.Close()
	if leaks := redacttest.Leaks(readStore(t, dir), secrets); leaks != "" {
		t.Fatalf("secrets left on disk after RedactStore: %s", leaks)
	}
}
