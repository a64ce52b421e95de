package local

// The store's files: the index rebuilt from them, newer formats and damage, the .zst as plain
// zstd, and frames a read skips.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/klauspost/compress/zstd"
)

func TestIndexRebuild(t *testing.T) {
	payloads := testLines(t)
	t.Run("missing", func(t *testing.T) {
		dir := buildIndexStore(t, payloads)
		os.Remove(filepath.Join(dir, "index.jsonl"))
		calls := 0
		s := mustOpen(t, dir, Options{Summarize: countingSummarize(&calls)})
		checkIndexList(t, s, 5)
		if calls != 5 {
			t.Fatalf("Summarize called %d times", calls)
		}
		s.Close()
		calls = 0
		s = mustOpen(t, dir, Options{Summarize: countingSummarize(&calls)})
		checkIndexList(t, s, 5)
		if calls != 0 {
			t.Fatalf("rebuilt index not trusted: %d calls", calls)
		}
	})
	t.Run("missing without summarize", func(t *testing.T) {
		dir := buildIndexStore(t, payloads)
		os.Remove(filepath.Join(dir, "index.jsonl"))
		s := mustOpen(t, dir, Options{})
		checkIndexList(t, s, 0)
	})
	t.Run("damaged lines", func(t *testing.T) {
		dir := buildIndexStore(t, payloads)
		p := filepath.Join(dir, "index.jsonl")
		b, _ := os.ReadFile(p)
		lines := bytes.SplitAfter(b, []byte("\n"))
		lines[len(lines)-2] = []byte("{garbage\x00\x01\n") // the newest line of one session
		os.WriteFile(p, bytes.Join(lines, nil), 0o600)
		calls := 0
		s := mustOpen(t, dir, Options{Summarize: countingSummarize(&calls)})
		checkIndexList(t, s, 1)
		nb, _ := os.ReadFile(p)
		if bytes.Contains(nb, []byte("garbage")) {
			t.Fatal("damaged index not rewritten")
		}
	})
	t.Run("damaged header", func(t *testing.T) {
		dir := buildIndexStore(t, payloads)
		p := filepath.Join(dir, "index.jsonl")
		b, _ := os.ReadFile(p)
		copy(b, "XXXX")
		os.WriteFile(p, b, 0o600)
		calls := 0
		s := mustOpen(t, dir, Options{Summarize: countingSummarize(&calls)})
		checkIndexList(t, s, 0) // lines were still usable; the file is rewritten with a good header
		nb, _ := os.ReadFile(p)
		if !bytes.HasPrefix(nb, []byte(`{"v":2,"index":"sessionmem",`)) {
			t.Fatalf("index not rewritten: %.60s", nb)
		}
	})
	t.Run("stale after crash before index write", func(t *testing.T) {
		dir := buildIndexStore(t, payloads)
		p := filepath.Join(dir, "index.jsonl")
		old, _ := os.ReadFile(p)
		s := mustOpen(t, dir, Options{})
		appendBatches(t, s, "s2", [][]storage.Record{recordsOf(payloads[:2])})
		s.Close()
		os.WriteFile(p, old, 0o600) // the index line of that append never made it
		calls := 0
		s = mustOpen(t, dir, Options{Summarize: countingSummarize(&calls)})
		m, err := s.Get(context.Background(), "s2")
		if err != nil {
			t.Fatal(err)
		}
		if m.LastSeq != 13 || m.Messages != 13 || calls != 1 {
			t.Fatalf("stale session not reconciled: %+v, %d calls", m, calls)
		}
	})
	t.Run("deleted session file", func(t *testing.T) {
		dir := buildIndexStore(t, payloads)
		os.Remove(filepath.Join(dir, "sessions", "s3.zst"))
		s := mustOpen(t, dir, Options{})
		if _, err := s.Get(context.Background(), "s3"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Get of removed session = %v", err)
		}
	})
	t.Run("rewrite when long", func(t *testing.T) {
		dir := memTempDir(t) // a thousand fsyncs test nothing more on a disk
		s := mustOpen(t, dir, Options{})
		mustCreate(t, s, "x")
		for range minRewriteLines + 10 {
			appendBatches(t, s, "x", [][]storage.Record{{{Data: []byte(`{"a":1}`)}}})
		}
		if _, lines := indexFileLines(t, dir); len(lines) > minRewriteLines {
			t.Fatalf("index has %d lines, want a rewrite at %d", len(lines), minRewriteLines)
		}
		m, _ := s.Get(context.Background(), "x")
		if m.LastSeq != minRewriteLines+10 {
			t.Fatalf("LastSeq %d", m.LastSeq)
		}
	})
}

// countingSummarize is a SummarizeFunc that counts its calls, names the session
// "summarized" and counts its records as messages.
func countingSummarize(calls *int) func(h storage.Header, recs iter.Seq2[storage.Record, error]) (storage.Meta, error) {
	return func(h storage.Header, recs iter.Seq2[storage.Record, error]) (storage.Meta, error) {
		*calls++
		n := 0
		for _, err := range recs {
			if err != nil {
				return storage.Meta{}, err
			}
			n++
		}
		return storage.Meta{Name: "summarized", Messages: n}, nil
	}
}

// buildIndexStore makes a closed store of sessions s0..s4, si holding i*5+1 records.
func buildIndexStore(t *testing.T, payloads [][]byte) string {
	t.Helper()
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{SealRecords: 8})
	for i := range 5 {
		id := fmt.Sprintf("s%d", i)
		mustCreate(t, s, id)
		appendBatches(t, s, id, [][]storage.Record{recordsOf(payloads[:i*5+1])})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkIndexList checks that s lists buildIndexStore's sessions, wantSummarized of them
// summarized again.
func checkIndexList(t *testing.T, s *Store, wantSummarized int) {
	t.Helper()
	l, err := s.List(context.Background(), storage.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 5 {
		t.Fatalf("List has %d sessions, want 5", len(l))
	}
	summarized := 0
	for _, m := range l {
		var i int
		fmt.Sscanf(m.ID, "s%d", &i)
		if m.LastSeq != uint64(i*5+1) || m.WorkingDir != "/work/"+m.ID {
			t.Errorf("%s: %+v", m.ID, m)
		}
		if m.Name == "summarized" {
			summarized++
			if m.Messages != i*5+1 {
				t.Errorf("%s: Messages %d", m.ID, m.Messages)
			}
		}
	}
	if summarized != wantSummarized {
		t.Fatalf("%d sessions summarized, want %d", summarized, wantSummarized)
	}
}

func TestNewerFormatAndDamage(t *testing.T) {
	payloads := testLines(t)
	tests := []struct {
		name    string
		mutate  func(t *testing.T, dir string)
		wantErr error
		openErr bool
	}{
		{"newer session header", func(t *testing.T, dir string) {
			writeHeader(t, dir, "bad", `{"v":2,"id":"bad"}`)
		}, storage.ErrNewerFormat, false},
		{"newer tail", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "sessions", "bad.tail.jsonl"), []byte("{\"v\":9}\n"), 0o600)
		}, storage.ErrNewerFormat, false},
		{"damaged header frame", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "sessions", "bad.zst")
			b, _ := os.ReadFile(p)
			b[10] ^= 0xff
			os.WriteFile(p, b, 0o600)
		}, storage.ErrCorrupt, false},
		{"header of another id", func(t *testing.T, dir string) {
			writeHeader(t, dir, "bad", `{"v":1,"id":"other"}`)
		}, storage.ErrCorrupt, false},
		{"newer index", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "index.jsonl"), []byte("{\"v\":3,\"index\":\"sessionmem\"}\n"), 0o600)
		}, storage.ErrNewerFormat, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{})
			mustCreate(t, s, "good")
			mustCreate(t, s, "bad")
			appendBatches(t, s, "bad", [][]storage.Record{recordsOf(payloads[:3])})
			s.Close()
			tt.mutate(t, dir)
			os.Remove(filepath.Join(dir, "index.jsonl.keep"))
			if !tt.openErr {
				// Force the store to look at the session files.
				os.Remove(filepath.Join(dir, "index.jsonl"))
			}
			logs := &logCounter{}
			s2, err := Open(dir, Options{Logger: slog.New(logs)})
			if tt.openErr {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Open = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "upgrade") {
					t.Fatalf("error does not say what to do: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open failed on one damaged file: %v", err)
			}
			defer s2.Close()
			for range 2 {
				l, err := s2.List(context.Background(), storage.ListQuery{})
				if err != nil || len(l) != 1 || l[0].ID != "good" {
					t.Fatalf("List = %+v, %v", l, err)
				}
			}
			if n := logs.count("skipping damaged session"); n != 1 {
				t.Fatalf("%d warnings, want 1: %v", n, logs.msgs)
			}
			if err := s2.viewR(t.Context(), "bad", func(*Reader) error { return nil }); !errors.Is(err, tt.wantErr) {
				t.Fatalf("View = %v, want %v", err, tt.wantErr)
			}
			if err := s2.updateW(t.Context(), "bad", func(*Writer) error { return nil }); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Update = %v, want %v", err, tt.wantErr)
			}
			if _, err := s2.Get(context.Background(), "bad"); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Get = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// writeHeader replaces a session's header frame, keeping its records.
func writeHeader(t *testing.T, dir, id, js string) {
	t.Helper()
	p := filepath.Join(dir, "sessions", id+".zst")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := int(b[4]) | int(b[5])<<8
	frame := append([]byte{0x50, 0x2a, 0x4d, 0x18, byte(len(js)), 0, 0, 0}, js...)
	if err := os.WriteFile(p, append(frame, b[8+n:]...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestZstdCompatible checks that a session file is a plain zstd stream: the streaming reader
// (and the zstd CLI when installed) print exactly the sealed lines.
func TestZstdCompatible(t *testing.T) {
	payloads := testLines(t)
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{SealRecords: 6})
	mustCreate(t, s, "z")
	acked := appendBatches(t, s, "z", [][]storage.Record{recordsOf(payloads[:1]), recordsOf(payloads[1:20]), recordsOf(payloads[20:])})
	s.Close()
	want := strings.Join(acked, "\n") + "\n"
	p := filepath.Join(dir, "sessions", "z.zst")
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := io.ReadAll(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("streaming reader output differs (%d vs %d bytes)", len(got), len(want))
	}
	if _, err := exec.LookPath("zstd"); err != nil {
		t.Skip("zstd CLI not installed")
	}
	out, err := exec.CommandContext(t.Context(), "zstd", "-dc", p).Output()
	if err != nil {
		t.Fatalf("zstd -dc: %v", err)
	}
	if string(out) != want {
		t.Fatalf("zstd CLI output differs (%d vs %d bytes)", len(out), len(want))
	}
}

// TestReadFromBarrierSkipsEarlierFrames proves Records(from) never decodes earlier frames:
// they are damaged, yet reading from the barrier works.
func TestReadFromBarrierSkipsEarlierFrames(t *testing.T) {
	payloads := testLines(t)
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{SealRecords: 5})
	mustCreate(t, s, "b")
	recs := recordsOf(payloads)
	recs[30].Barrier = true
	acked := appendBatches(t, s, "b", [][]storage.Record{recs[:30], recs[30:]})
	var barrierOff int64
	s.viewR(t.Context(), "b", func(r *Reader) error {
		for _, f := range r.v.frames {
			if f.first == 31 {
				barrierOff = f.off
			}
		}
		return nil
	})
	s.Close()
	if barrierOff == 0 {
		t.Fatal("barrier frame not found")
	}
	p := filepath.Join(dir, "sessions", "b.zst")
	b, _ := os.ReadFile(p)
	for i := 200; i < int(barrierOff)-40; i += 97 {
		b[i] ^= 0x55
	}
	os.WriteFile(p, b, 0o600)
	s2 := mustOpen(t, dir, Options{})
	got, err := readAll(t, s2, "b", 31)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, got, acked[30:])
	if _, err := readAll(t, s2, "b", 1); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("reading damaged frames: %v, want storage.ErrCorrupt", err)
	}
}
