package ftsindex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// t0 is the base time of test docs.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openTest(t testing.TB, dir string) *Index {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ix, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// sess is a test session in working directory /w/<id>.
func sess(id string) Session {
	return Session{ID: id, Created: t0, WorkingDir: "/w/" + id, Name: "name of " + id}
}

// doc is a message doc at seq, seq minutes after t0.
func doc(id string, seq uint64, role, text string, files ...string) fts.Doc {
	return fts.Doc{SessionID: id, Seq: seq, EntryID: entryID(id, seq), Kind: fts.KindMessage, Role: role,
		Time: t0.Add(time.Duration(seq) * time.Minute), Text: text, Files: files}
}

func entryID(id string, seq uint64) string { return id + "-e" + itoa(seq) }

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// feed indexes docs of one session as one batch covering 1..max seq.
func feed(t testing.TB, ix *Index, s Session, docs ...fts.Doc) []Progress {
	t.Helper()
	var through uint64 = 1
	for _, d := range docs {
		through = max(through, d.Seq)
	}
	p, err := ix.Index(context.Background(), Batch{Session: s, From: 1, Through: through, Docs: docs})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		texts.Store(textKey{d.SessionID, d.Seq}, d.Text)
	}
	return p
}

// texts are the texts of every doc fed by any test (ids are unique enough across tests:
// the same (session, seq) always gets the same text within one test), for Query.Text.
var texts sync.Map

type textKey struct {
	sid string
	seq uint64
}

// textOf is the Query.Text of the test docs.
func textOf(_ context.Context, refs []DocRef) ([]string, error) {
	out := make([]string, len(refs))
	for i, r := range refs {
		if v, ok := texts.Load(textKey{r.SessionID, r.Seq}); ok {
			out[i] = v.(string)
		}
	}
	return out, nil
}

func mustParse(t testing.TB, q string) *fts.Query {
	t.Helper()
	pq, err := fts.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return pq
}

// search returns the entry ids of a search's hits.
func search(t testing.TB, ix *Index, q Query) []string {
	t.Helper()
	if q.Text == nil {
		q.Text = textOf
	}
	res, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", q, err)
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.EntryID
	}
	return ids
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// readAll returns the bytes of every file in dir.
func readAll(t testing.TB, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}
