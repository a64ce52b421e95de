package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// Benchmarks of a server on PostgreSQL over stdio, against a cluster of their own with fsync
// on (a commit waits for its WAL flush, as in production). Run with
//
//	go test -run '^$' -bench 'StdioPG' -benchtime 2000x ./cmd/sessionmem/

var (
	benchPGOnce    sync.Once
	benchPG        *pgtest.Cluster
	benchPGErr     error
	corpusMsgsOnce sync.Once
	corpusMsgs     []json.RawMessage
)

// benchDatabase returns a fresh database on the benchmark cluster (fsync on).
func benchDatabase(b *testing.B) string {
	b.Helper()
	benchPGOnce.Do(func() { benchPG, benchPGErr = pgtest.Start(pgtest.Options{Fsync: true}) })
	if benchPGErr != nil {
		if errors.Is(benchPGErr, pgtest.ErrNotInstalled) {
			b.Skip(benchPGErr)
		}
		b.Fatal(benchPGErr)
	}
	return benchPG.NewDatabase(b)
}

// corpusMessages returns the corpus's messages of 1-4 KB as session_save takes them (without
// ids), imported once.
func corpusMessages(b *testing.B) []json.RawMessage {
	b.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		b.Skip("corpus not found")
	}
	corpusMsgsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sessionmem-corpus-")
		if err != nil {
			return
		}
		defer os.RemoveAll(dir)
		files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
		var out, errb nopWriter
		if err := run(context.Background(), append([]string{"import", "--store", dir, "--file"}, files...), nil, &out, &errb); err != nil {
			return
		}
		st, err := local.Open(dir, local.Options{Summarize: memory.Summarize})
		if err != nil {
			return
		}
		defer st.Close()
		ids, _ := st.IDs(context.Background())
		for _, id := range ids {
			_ = st.View(context.Background(), id, func(r storage.Reader) error {
				for rec, err := range r.Records(1) {
					if err != nil {
						return err
					}
					msg := gjson.GetBytes(rec.Data, "message")
					if rec.Kind != memory.KindMessage || len(msg.Raw) < 1024 || len(msg.Raw) > 4096 {
						continue
					}
					var m map[string]json.RawMessage
					if json.Unmarshal([]byte(msg.Raw), &m) == nil {
						delete(m, "id")
						raw, _ := json.Marshal(m)
						corpusMsgs = append(corpusMsgs, raw)
					}
				}
				return nil
			})
		}
	})
	if len(corpusMsgs) == 0 {
		b.Skip("no corpus messages")
	}
	return corpusMsgs
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// corpusMessage is message i of the corpus with a fresh id.
func corpusMessage(msgs []json.RawMessage, i int) any {
	var m map[string]any
	_ = json.Unmarshal(msgs[(i+len(msgs))%len(msgs)], &m)
	m["id"] = fmt.Sprintf("bench-%d", i)
	return m
}

// BenchmarkStdioPGSave: session_save of one ~2 KB corpus message (durable when answered) into
// an existing session, on PostgreSQL.
func BenchmarkStdioPGSave(b *testing.B) {
	msgs := corpusMessages(b)
	c := stdioClient(b, benchDatabase(b))
	var s struct {
		SessionID string `json:"session_id"`
	}
	call(b, c, "session_save", obj{"working_dir": "/bench", "messages": []any{corpusMessage(msgs, -1)}}, &s)
	benchCall(b, c, "session_save", func(i int) obj {
		return obj{"session_id": s.SessionID, "messages": []any{corpusMessage(msgs, i)}}
	})
}

// BenchmarkStdioLocalSaveCorpus: the same on a local store, for comparison.
func BenchmarkStdioLocalSaveCorpus(b *testing.B) {
	msgs := corpusMessages(b)
	c := stdioClient(b, b.TempDir())
	var s struct {
		SessionID string `json:"session_id"`
	}
	call(b, c, "session_save", obj{"working_dir": "/bench", "messages": []any{corpusMessage(msgs, -1)}}, &s)
	benchCall(b, c, "session_save", func(i int) obj {
		return obj{"session_id": s.SessionID, "messages": []any{corpusMessage(msgs, i)}}
	})
}

// BenchmarkStdioPGList1000: session_list (default page of 20) over 1,000 sessions.
func BenchmarkStdioPGList1000(b *testing.B) {
	url := benchDatabase(b)
	st, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	svc := memory.New(st, memory.Options{})
	for i := range 1000 {
		if _, err := svc.Save(context.Background(), memory.SaveRequest{WorkingDir: fmt.Sprintf("/proj/%d", i%10), Name: fmt.Sprintf("session %d", i),
			Messages: []memory.Message{{Role: memory.RoleUser, Content: []memory.Block{{Type: "text", Text: "prompt " + fmt.Sprint(i)}}}}}); err != nil {
			b.Fatal(err)
		}
	}
	st.Close()
	c := stdioClient(b, url)
	benchCall(b, c, "session_list", func(int) obj { return obj{} })
}

// BenchmarkServiceSaveCorpus: memory's Save of one ~2 KB corpus message in process (no MCP,
// no pipes), on PostgreSQL and on a local store: the server's own cost of a save.
func BenchmarkServiceSaveCorpus(b *testing.B) {
	msgs := corpusMessages(b)
	for _, name := range []string{"postgres", "local"} {
		b.Run(name, func(b *testing.B) {
			var st storage.Store
			var err error
			if name == "postgres" {
				st, err = postgres.Open(context.Background(), benchDatabase(b), postgres.Options{})
			} else {
				st, err = local.Open(b.TempDir(), local.Options{Summarize: memory.Summarize})
			}
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			svc := memory.New(st, memory.Options{})
			message := func(i int) memory.Message {
				raw, _ := json.Marshal(corpusMessage(msgs, i))
				var m memory.Message
				if err := json.Unmarshal(raw, &m); err != nil {
					b.Fatal(err)
				}
				return m
			}
			res, err := svc.Save(context.Background(), memory.SaveRequest{WorkingDir: "/bench", Messages: []memory.Message{message(-1)}})
			if err != nil {
				b.Fatal(err)
			}
			var ds []time.Duration
			for i := 0; b.Loop(); i++ {
				m := message(i)
				start := time.Now()
				if _, err := svc.Save(context.Background(), memory.SaveRequest{SessionID: res.SessionID, Messages: []memory.Message{m}}); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, "median-us")
		})
	}
}
