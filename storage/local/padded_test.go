package local

import (
	"bytes"
	"context"
	"iter"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

func tailSize(t *testing.T, dir, id string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, "sessions", id+tailSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// readsBack checks that s, and a store opened on dir afresh (another process), read exactly
// want from session id.
func readsBack(t *testing.T, dir string, s *Store, id string, want []string) {
	t.Helper()
	for _, st := range []*Store{s, mustOpen(t, dir, Options{})} {
		got, err := readAll(t, st, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		equalLines(t, got, want)
	}
}

func TestPadFor(t *testing.T) {
	const seal = 1 << 20
	tests := []struct {
		name            string
		end, data, seal int64
		want            int64
	}{
		{"a first small append: the minimum, to a 4 KiB boundary", 2500, 2460, seal, 64<<10 + 4096 - 2500},
		{"as much as the tail holds", 200 << 10, 200 << 10, seal, 200 << 10},
		{"no more than the seal leaves", 900 << 10, 900 << 10, seal, 124 << 10},
		{"at least the minimum near the seal", 1020 << 10, 1020 << 10, seal, 64 << 10},
		{"at most the maximum", 3 << 20, 3 << 20, 16 << 20, 1 << 20},
		{"a seal smaller than the minimum", 100, 60, 4096, 64<<10 + 4096 - 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := padFor(tt.end, tt.data, tt.seal)
			if got != tt.want {
				t.Fatalf("padFor(%d, %d, %d) = %d, want %d", tt.end, tt.data, tt.seal, got, tt.want)
			}
			if (tt.end+got)%padAlign != 0 {
				t.Fatalf("the file would end at %d, not on a %d boundary", tt.end+got, padAlign)
			}
		})
	}
}

// TestPaddedAppends: appends go into the padding without changing the tail's size, an append
// that does not fit extends it with new padding, the bytes after the data are zeros, and what
// reads back (a fresh store too, and a writer's repairing open) is what was appended.
func TestPaddedAppends(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{firstInTail: true})
	mustCreate(t, s, "p")
	var want []string
	want = append(want, appendBatches(t, s, "p", [][]storage.Record{{bigRecord(0, 2000)}})...)
	size := tailSize(t, dir, "p")
	if size%padAlign != 0 || size < minTailPad {
		t.Fatalf("tail of %d bytes after the first append: want padding to a %d boundary, at least %d", size, padAlign, minTailPad)
	}
	extended := 0
	for i := 1; i < 60; i++ {
		want = append(want, appendBatches(t, s, "p", [][]storage.Record{{bigRecord(i, 2000)}})...)
		if n := tailSize(t, dir, "p"); n != size {
			extended++
			size = n
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "sessions", "p"+tailSuffix))
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.TrimRight(b, "\x00")
	if len(data) == len(b) || bytes.IndexByte(data, 0) >= 0 {
		t.Fatalf("want the data, then only zeros: %d bytes of data in %d", len(data), len(b))
	}
	if got := len(data) - bytes.IndexByte(data, '\n') - 1; got == 0 {
		t.Fatal("no records in the tail")
	}
	t.Logf("60 appends of %d bytes extended the tail %d times; %d bytes of data, %d of padding", len(data)/60, extended, len(data), len(b)-len(data))
	if extended < 1 || extended > 3 {
		t.Fatalf("the tail was extended %d times in 60 appends of ~2 KB: want 1 to 3", extended)
	}
	for name, st := range map[string]*Store{"same store": s, "fresh store": mustOpen(t, dir, Options{})} {
		got, err := readAll(t, st, "p", 1)
		if err != nil {
			t.Fatal(name, err)
		}
		equalLines(t, got, want)
		if got, err = readAllWriter(st, "p"); err != nil {
			t.Fatal(name, err)
		}
		equalLines(t, got, want)
	}
	if n := tailSize(t, dir, "p"); n != size {
		t.Fatalf("a writer's open changed the padded tail: %d bytes, was %d", n, size)
	}
	rep, err := s.verifyFiles(context.Background(), "p", false)
	if err != nil || rep.Torn() || rep.Damaged != nil || rep.TailPadding != size-int64(len(data)) {
		t.Fatalf("Verify = %+v, %v; want intact with %d bytes of padding", rep, err, size-int64(len(data)))
	}
}

// TestPaddedAppendSeenElsewhere: another store on the same directory (another process) sees
// an append into the padding at once although the tail's size is unchanged, even when its
// mtime did not move either (timestamps are coarse: two appends in one tick look alike), and
// appends after it in turn; the listing agrees with the reads on both.
func TestPaddedAppendSeenElsewhere(t *testing.T) {
	dir := t.TempDir()
	a := mustOpen(t, dir, Options{firstInTail: true})
	b := mustOpen(t, dir, Options{firstInTail: true})
	mustCreate(t, a, "x")
	lines := testLines(t)
	var want []string
	want = append(want, appendBatches(t, a, "x", [][]storage.Record{recordsOf(lines[:1])})...)
	if got, _ := readAll(t, b, "x", 1); len(got) != 1 {
		t.Fatalf("b reads %d records, want 1", len(got))
	}
	tp := filepath.Join(dir, "sessions", "x"+tailSuffix)
	for i := 1; i < 20; i++ {
		w, r := a, b
		if i%2 == 0 {
			w, r = b, a
		}
		before, err := os.Stat(tp)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, appendBatches(t, w, "x", [][]storage.Record{recordsOf(lines[i : i+1])})...)
		after, err := os.Stat(tp)
		if err != nil {
			t.Fatal(err)
		}
		if after.Size() == before.Size() {
			// Put the mtime back: the reader must not depend on it.
			if err := os.Chtimes(tp, time.Time{}, before.ModTime()); err != nil {
				t.Fatal(err)
			}
		}
		got, err := readAll(t, r, "x", 1)
		if err != nil {
			t.Fatal(err)
		}
		equalLines(t, got, want)
		for _, st := range []*Store{a, b} {
			m, err := st.Get(context.Background(), "x")
			if err != nil || m.LastSeq != uint64(len(want)) {
				t.Fatalf("index: LastSeq %d (%v), want %d", m.LastSeq, err, len(want))
			}
		}
	}
}

// TestPaddedIndexReconciled: an index line lost after an append into the padding (a crash
// between the fdatasync and the line) is found stale at the next Open although the tail's
// size did not change, and the listing agrees with the files again.
func TestPaddedIndexReconciled(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{firstInTail: true, Summarize: countSummary})
	mustCreate(t, s, "r")
	lines := testLines(t)
	appendBatches(t, s, "r", [][]storage.Record{recordsOf(lines[:2])})
	size := tailSize(t, dir, "r")
	testSkipIndexLine = true
	appendBatches(t, s, "r", [][]storage.Record{recordsOf(lines[2:3])})
	testSkipIndexLine = false
	if tailSize(t, dir, "r") != size {
		t.Fatal("the append did not go into the padding")
	}
	s2 := mustOpen(t, dir, Options{Summarize: countSummary})
	m, err := s2.Get(context.Background(), "r")
	if err != nil || m.LastSeq != 3 || m.Messages != 3 {
		t.Fatalf("after reopening: LastSeq %d, Messages %d (%v), want 3 and 3", m.LastSeq, m.Messages, err)
	}
	// And a current line (the data ends where it says, zeros after) is left alone.
	s3 := mustOpen(t, dir, Options{Summarize: func(storage.Header, iter.Seq2[storage.Record, error]) (storage.Meta, error) {
		t.Error("a current index line was summarized again")
		return storage.Meta{}, nil
	}})
	if _, err := s3.Get(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
}

// countSummary counts records as messages, which is all a reconciliation test needs.
func countSummary(_ storage.Header, recs iter.Seq2[storage.Record, error]) (storage.Meta, error) {
	var m storage.Meta
	for _, err := range recs {
		if err != nil {
			return m, err
		}
		m.Messages++
	}
	return m, nil
}

// TestVersion1TailUpgraded: a tail of format version 1 (unpadded, as earlier builds wrote
// it) is appended to as before, without padding, and replaced by a padded one when its seal
// empties it; no record is lost on the way.
func TestVersion1TailUpgraded(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{firstInTail: true})
	mustCreate(t, s, "old")
	tp := filepath.Join(dir, "sessions", "old"+tailSuffix)
	if err := os.WriteFile(tp, []byte(`{"v":1,"tail":"old"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.dropState("old")
	lines := testLines(t)
	want := appendBatches(t, s, "old", [][]storage.Record{recordsOf(lines[:2]), recordsOf(lines[2:3])})
	b, err := os.ReadFile(tp)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(b, 0) >= 0 || !bytes.HasPrefix(b, []byte(`{"v":1,`)) || b[len(b)-1] != '\n' {
		t.Fatalf("a version 1 tail got padding or a new header: %q…", b[:min(len(b), 40)])
	}
	if err := s.updateW(context.Background(), "old", func(w *Writer) error { return w.Seal() }); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(tp); err != nil || string(b) != string(encodeTailHeader("old")) {
		t.Fatalf("tail after the seal: %q, %v; want an empty version %d tail", b, err, TailFormatVersion)
	}
	want = append(want, appendBatches(t, s, "old", [][]storage.Record{recordsOf(lines[3:4])})...)
	if n := tailSize(t, dir, "old"); n%padAlign != 0 {
		t.Fatalf("tail of %d bytes after the upgrade: not padded", n)
	}
	readsBack(t, dir, s, "old", want)
}

// TestIdleTrimsPadding: once a session is idle for IdleSeal, its tail's padding goes even
// when the tail is too small to be sealed yet, and the records stay where they were.
func TestIdleTrimsPadding(t *testing.T) {
	const idle, tick = time.Hour, 20 * time.Millisecond
	clk := newClock()
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{firstInTail: true, IdleSeal: idle, Now: clk.now, sealTick: tick})
	mustCreate(t, s, "small")
	want := appendBatches(t, s, "small", [][]storage.Record{{bigRecord(0, 100)}})
	padded := tailSize(t, dir, "small")
	time.Sleep(5 * tick)
	if tailSize(t, dir, "small") != padded {
		t.Fatal("padding trimmed before the tail was idle")
	}
	clk.advance(idle + time.Minute)
	waitFor(t, 10*time.Second, "the idle tail kept its padding", func() bool {
		return tailSize(t, dir, "small") < padded
	})
	if lines, frames := tailState(t, s, "small"); lines != 1 || frames != 0 {
		t.Fatalf("after the trim: %d tail lines, %d frames; want the record still plain", lines, frames)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sessions", "small"+tailSuffix))
	if err != nil || bytes.IndexByte(b, 0) >= 0 {
		t.Fatalf("zeros left after the trim (%v)", err)
	}
	got, err := readAll(t, s, "small", 1)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, got, want)
	// The next append pads again.
	appendBatches(t, s, "small", [][]storage.Record{{bigRecord(1, 100)}})
	if n := tailSize(t, dir, "small"); n%padAlign != 0 {
		t.Fatalf("tail of %d bytes after the next append: not padded again", n)
	}
}

// TestReconcileKeepsNewerLines: another process writing while this one opens (appending
// again, or sealing) leaves index lines as new as the summary Open computed, or newer: the
// rewritten index keeps them, with their metadata, instead of the summary. (A summary written
// over the newer line once made a session list fewer records than it held, and made
// TestMultiProcessAppend flaky: a seal's line then carried the summary's empty metadata on.)
func TestReconcileKeepsNewerLines(t *testing.T) {
	tests := []struct {
		name      string
		meanwhile func(t *testing.T, b *Store)
		lastSeq   uint64
		wantName  string
	}{
		{"an append meanwhile", func(t *testing.T, b *Store) {
			appendMeta(t, b, "s", "writer")
		}, 4, "writer"},
		// The second append's line is lost (a crash): the index stays behind the files, as the
		// next Open finds, but with the seal's line, not the summary's metadata.
		{"a seal meanwhile, then an append without its line", func(t *testing.T, b *Store) {
			if err := b.updateW(t.Context(), "s", func(w *Writer) error { return w.Seal() }); err != nil {
				t.Fatal(err)
			}
			testSkipIndexLine = true
			defer func() { testSkipIndexLine = false }()
			appendMeta(t, b, "s", "lost")
		}, 3, "n-s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			a := mustOpen(t, dir, Options{firstInTail: true})
			mustCreate(t, a, "s")
			appendMeta(t, a, "s", "n-s")
			appendMeta(t, a, "s", "n-s")
			b := mustOpen(t, dir, Options{firstInTail: true})
			testSkipIndexLine = true
			appendMeta(t, a, "s", "unlisted") // the index is one append behind: stale
			testSkipIndexLine = false
			testHookReconcileWrite = func() { tt.meanwhile(t, b) }
			defer func() { testHookReconcileWrite = nil }()
			c := mustOpen(t, dir, Options{Summarize: func(storage.Header, iter.Seq2[storage.Record, error]) (storage.Meta, error) {
				return storage.Meta{Name: "summary"}, nil
			}})
			testHookReconcileWrite = nil
			m, err := c.Get(t.Context(), "s")
			if err != nil || m.LastSeq != tt.lastSeq || m.Name != tt.wantName {
				t.Fatalf("index: LastSeq %d, name %q (%v); want %d, %q", m.LastSeq, m.Name, err, tt.lastSeq, tt.wantName)
			}
		})
	}
}

func appendMeta(t *testing.T, s *Store, id, name string) {
	t.Helper()
	err := s.updateW(t.Context(), id, func(w *Writer) error {
		_, err := w.Append([]storage.Record{{Kind: "message", Data: []byte(`{"x":1}`)}}, storage.Meta{Name: name})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPaddingWhenDiskFull: an append that would extend the tail with padding on a disk with
// no room for it stores its lines without padding (a save the disk can hold is not refused),
// and the next appends go on from there.
func TestPaddingWhenDiskFull(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{firstInTail: true})
	mustCreate(t, s, "f")
	// An empty tail, as Create wrote before sessions had none (writeFirst), so that the first
	// append grows the tail in place (tailWriteAt) rather than writing it whole.
	if err := os.WriteFile(filepath.Join(dir, "sessions", "f"+tailSuffix), encodeTailHeader("f"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.dropState("f")
	full := true
	tailWriteAt = func(f file, b []byte, off int64) (int, error) {
		if full && len(b) > 8<<10 {
			n, _ := f.WriteAt(b[:len(b)/2], off) // the disk fills up halfway
			return n, syscall.ENOSPC
		}
		return f.WriteAt(b, off)
	}
	defer func() { tailWriteAt = file.WriteAt }()
	want := appendBatches(t, s, "f", [][]storage.Record{{bigRecord(0, 2000)}, {bigRecord(1, 2000)}})
	b, err := os.ReadFile(filepath.Join(dir, "sessions", "f"+tailSuffix))
	if err != nil || bytes.IndexByte(b, 0) >= 0 {
		t.Fatalf("the tail holds zeros on a full disk (%v)", err)
	}
	full = false
	want = append(want, appendBatches(t, s, "f", [][]storage.Record{{bigRecord(2, 2000)}})...)
	if n := tailSize(t, dir, "f"); n%padAlign != 0 {
		t.Fatalf("tail of %d bytes once there is room again: not padded", n)
	}
	readsBack(t, dir, s, "f", want)
}
