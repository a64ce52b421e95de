package local

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// Regression tests for what the power-loss test (TestCrashPoints) found, each a disk built by
// hand on a crashFS and the power loss that broke it.

// crashStore opens a store on fsys as the power-loss test does (no background sealer).
func crashStore(t *testing.T, fsys *crashFS, dir string) *Store {
	t.Helper()
	return openCrashStore(t, fsys, dir, false)
}

// crashStoreTail is crashStore with a new session's first append going to its tail like any
// other (Options.firstInTail), for the tests of what a power loss does to tails and seals.
func crashStoreTail(t *testing.T, fsys *crashFS, dir string) *Store {
	t.Helper()
	return openCrashStore(t, fsys, dir, true)
}

func openCrashStore(t *testing.T, fsys *crashFS, dir string, firstInTail bool) *Store {
	t.Helper()
	s, err := Open(dir, Options{IdleSeal: -1, MaxPlainBytes: -1, Summarize: crashSummarize, fs: fsys, closeSealers: 1, firstInTail: firstInTail})
	if err != nil {
		t.Fatalf("open on the disk after the power loss: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func crashAppend(t *testing.T, s *Store, id string, payloads ...string) {
	t.Helper()
	recs := make([]storage.Record, len(payloads))
	for i, p := range payloads {
		recs[i] = storage.Record{Data: []byte(p)}
	}
	err := s.Update(context.Background(), id, func(w storage.Writer) error {
		_, err := w.Append(recs, storage.Meta{})
		return err
	})
	if err != nil {
		t.Fatalf("append to %s: %v", id, err)
	}
}

// crashImages returns what a power loss leaves of fsys in every mode, with a few draws of
// the torn ones.
func crashImages(fsys *crashFS) map[string]*crashFS {
	out := map[string]*crashFS{}
	for mode := range numCrashModes {
		for seed := range uint64(16) {
			if seed > 0 && (mode == crashKill || mode == crashStrict) {
				continue
			}
			out[mode.String()+"/"+string(rune('a'+seed))] = fsys.image(rand.New(rand.NewPCG(seed, 7)), mode)
		}
	}
	return out
}

// TestCrashNewStoreDirectory: Open created the store's directory and sessions/ without
// syncing the directories they were made in, so a power loss could take them, and every
// session in them, however durable each file was.
func TestCrashNewStoreDirectory(t *testing.T) {
	fsys := newCrashFS(time.Now)
	s := crashStore(t, fsys, "/home/u/store")
	mustCreate(t, s, "a")
	crashAppend(t, s, "a", `{"x":1}`)
	for name, img := range crashImages(fsys) {
		got, err := crashRead(crashStore(t, img, "/home/u/store"), "a")
		if want := []string{`{"seq":1,"x":1}`}; err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: after the power loss: %q, %v; want %q", name, got, err, want)
		}
	}
}

// TestCrashStaleIndexAfterCut: an index line written by a reader (Open's summary) recorded
// where the tail's bytes ended, lines a crash left included (torn, or already sealed);
// a writer then cut those and appended where the data really ended, so when the append's
// own index line was lost the new padding sat where the old line said the data ended, and
// the line passed for current: the listing showed one record fewer than the session held.
func TestCrashStaleIndexAfterCut(t *testing.T) {
	fsys := newCrashFS(time.Now)
	s := crashStore(t, fsys, "/store")
	mustCreate(t, s, "a")
	crashAppend(t, s, "a", `{"type":"message","n":1,"text":"one"}`, `{"type":"message","n":2,"text":"two"}`)
	if err := s.Update(context.Background(), "a", func(w storage.Writer) error { return w.(*Writer).Seal() }); err != nil {
		t.Fatal(err)
	}
	// A power loss before the seal's truncation reached the disk: the tail holds the sealed
	// lines still. A restart summarises the session from them.
	img := fsys.image(nil, crashStrict)
	crashStore(t, img, "/store").Close()
	// The next save cuts the sealed lines and appends; the process dies before its index line.
	s = crashStore(t, img, "/store")
	testSkipIndexLine = true
	crashAppend(t, s, "a", `{"type":"message","n":3,"text":"3"}`)
	testSkipIndexLine = false
	ms, err := crashStore(t, img.image(nil, crashKill), "/store").List(context.Background(), storage.ListQuery{})
	if err != nil || len(ms) != 1 || ms[0].LastSeq != 3 || ms[0].Name != "n3" {
		t.Fatalf("listed %+v (%v); want session a with its 3 records", ms, err)
	}
}

// TestCrashTornSealRecord: a power loss during a seal can leave the new record at its full
// length with a page of it lost (the size reached the disk, that page did not): the record
// is all there, continues the sequence, and fails its checksum, while the tail still holds
// its records. Readers took the record for a sealed one and failed on it ("checksum
// mismatch": the session could not be read, and a summary at Open skipped it), and writers
// refused the session as damaged, so no save could go on.
func TestCrashTornSealRecord(t *testing.T) {
	fsys := newCrashFS(time.Now)
	s := crashStoreTail(t, fsys, "/store")
	mustCreate(t, s, "a")
	rng := rand.New(rand.NewPCG(1, 2))
	var payloads, want []string
	for i := range 3 {
		text := make([]byte, 6000) // incompressible: the sealed record spans pages
		for j := range text {
			text[j] = 'a' + byte(rng.IntN(26))
		}
		payloads = append(payloads, `{"type":"message","n":`+string(rune('1'+i))+`,"text":"`+string(text)+`"}`)
		want = append(want, storedLine(uint64(i+1), []byte(payloads[i])))
	}
	crashAppend(t, s, "a", payloads...)
	zst := "/store/sessions/a" + zstSuffix
	fi, err := fsys.Stat(zst)
	if err != nil {
		t.Fatal(err)
	}
	sealAt := fi.Size()
	// The disk as it is when the seal has written its record and not synced it yet.
	var img *crashFS
	fsys.onOp = func(n int) {
		if fi, err := fsys.Stat(zst); img == nil && err == nil && fi.Size() > sealAt {
			img = fsys.image(nil, crashKill)
		}
	}
	if err := s.Update(context.Background(), "a", func(w storage.Writer) error { return w.(*Writer).Seal() }); err != nil {
		t.Fatal(err)
	}
	fsys.onOp = nil
	// The power loss keeps the record's length and its last page, not the page before.
	f, err := img.OpenFile(zst, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ = f.Stat()
	lost := (sealAt/crashPage + 1) * crashPage
	if lost+crashPage >= fi.Size() {
		t.Fatalf("the record (%d to %d) does not span the pages this test needs", sealAt, fi.Size())
	}
	if _, err := f.WriteAt(make([]byte, crashPage), lost); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s = crashStore(t, img.image(nil, crashKill), "/store")
	if ms, err := s.List(context.Background(), storage.ListQuery{}); err != nil || len(ms) != 1 || ms[0].LastSeq != 3 {
		t.Fatalf("listed %+v, %v; want the session with 3 records", ms, err)
	}
	if got, err := crashRead(s, "a"); err != nil || !slices.Equal(got, want) {
		t.Fatalf("read after the power loss: %d records, %v; want the %d the tail holds", len(got), err, len(want))
	}
	if rep, err := s.verifyFiles(context.Background(), "a", false); err != nil || rep.Damaged != nil || rep.TornSealed == 0 {
		t.Fatalf("verify: %+v, %v; want a torn seal, not damage", rep, err)
	}
	crashAppend(t, s, "a", `{"type":"message","n":4}`)
	want = append(want, `{"seq":4,"type":"message","n":4}`)
	if got, err := crashRead(s, "a"); err != nil || !slices.Equal(got, want) {
		t.Fatalf("read after the next save: %d records, %v; want %d", len(got), err, len(want))
	}
	if rep, err := s.Verify(context.Background(), "a", false); err != nil || rep.Damaged() != nil || rep.Torn() {
		t.Fatalf("verify after the next save: %+v, %v", rep, err)
	}
}

// crashAt runs op on s's disk fsys and returns the disk as it is just before the operation
// that changes it for the n-th time from now (0: the first), everything kept, and as a power
// loss then would leave it in strict mode (only what was synced).
func crashAt(t *testing.T, fsys *crashFS, n int, op func()) (kept, synced *crashFS) {
	t.Helper()
	start := -1
	fsys.onOp = func(op int) {
		if start < 0 {
			start = op
		}
		if op-start == n {
			kept, synced = fsys.image(nil, crashKill), fsys.image(nil, crashStrict)
		}
	}
	op()
	fsys.onOp = nil
	if kept == nil {
		t.Fatalf("the operation changed the disk %d times, not %d", -1, n+1)
	}
	return kept, synced
}

// mixPages returns a disk like a, but with the pages of file name for which fromB is true
// as b holds them (the power loss kept a's version of some pages of an unsynced write and
// b's of others).
func mixPages(t *testing.T, a, b *crashFS, name string, fromB func(page int64) bool) *crashFS {
	t.Helper()
	out := a.image(nil, crashKill)
	ab, err := readFile(a, name)
	if err != nil {
		t.Fatal(err)
	}
	bb, _ := readFile(b, name)
	f, err := out.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for p := int64(0); p*crashPage < int64(len(ab)); p++ {
		if !fromB(p) {
			continue
		}
		page := make([]byte, min(crashPage, int64(len(ab))-p*crashPage))
		if p*crashPage < int64(len(bb)) {
			copy(page, bb[p*crashPage:])
		}
		if _, err := f.WriteAt(page, p*crashPage); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func crashText(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghij klmnop"[rng.IntN(17)]
	}
	return string(b)
}

// TestCrashAppendOverSealedLines: a seal (and a rewrite) empties the tail by truncating it,
// and did not sync the truncation, so the next append, which writes from the header on,
// wrote over bytes the disk still held as the sealed lines. A power loss during that append
// could keep its first page and the old second page: a line that begins as the new record
// and ends as an old one is valid JSON with the new seq when both are inside a string there,
// and came back as a record nobody wrote.
func TestCrashAppendOverSealedLines(t *testing.T) {
	empty := map[string]func(t *testing.T, s *Store){
		"seal": func(t *testing.T, s *Store) {
			if err := s.Update(context.Background(), "a", func(w storage.Writer) error { return w.(*Writer).Seal() }); err != nil {
				t.Fatal(err)
			}
		},
		"rewrite": func(t *testing.T, s *Store) {
			_, err := s.Rewrite(context.Background(), "a", func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
				red := crashRedact(string(recs[0].Data))
				return h, [][]byte{[]byte("{" + red[strings.IndexByte(red, ',')+1:])}, storage.Meta{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, empty := range empty {
		t.Run(name, func(t *testing.T) {
			fsys := newCrashFS(time.Now)
			s := crashStoreTail(t, fsys, "/store")
			mustCreate(t, s, "a")
			rng := rand.New(rand.NewPCG(3, 4))
			old := `{"type":"message","n":1,"text":"secret-0001 ` + crashText(rng, 9000) + `"}`
			crashAppend(t, s, "a", old)
			empty(t, s)
			want, err := crashRead(s, "a")
			if err != nil {
				t.Fatal(err)
			}
			next := `{"type":"message","n":2,"text":"` + crashText(rng, 9000) + `"}`
			// The append's write (op 0) is followed by its fsync (op 1): power goes before it.
			kept, synced := crashAt(t, fsys, 1, func() { crashAppend(t, s, "a", next) })
			tail := "/store/sessions/a" + tailSuffix
			img := mixPages(t, kept, synced, tail, func(p int64) bool { return p == 1 })
			got, err := crashRead(crashStore(t, img, "/store"), "a")
			if err != nil || !(slices.Equal(got, want) || slices.Equal(got, append(want, storedLine(2, []byte(next))))) {
				t.Fatalf("after the power loss: %d records (%v); want the sealed one, and maybe the new one whole:\n%.300q", len(got), err, got)
			}
		})
	}
}

// TestCrashBatchAtomic: an Append is one atomic batch (storage.Writer), and its lines are
// one write and one sync; but a power loss before the sync can keep some pages of the write
// and lose others, and the store kept every whole line that continued the sequence: the
// first records of a batch that never returned, without the rest.
func TestCrashBatchAtomic(t *testing.T) {
	for _, padded := range []bool{true, false} {
		t.Run(fmt.Sprintf("padded=%v", padded), func(t *testing.T) {
			fsys := newCrashFS(time.Now)
			s := crashStoreTail(t, fsys, "/store")
			mustCreate(t, s, "a")
			crashAppend(t, s, "a", `{"type":"message","n":0}`)
			if !padded {
				s.sealer.trySeal("a", (*Writer).trimPadding) // the next append extends the file
			}
			want, err := crashRead(s, "a")
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			var batch []string
			for i := 1; i <= 3; i++ {
				batch = append(batch, fmt.Sprintf(`{"type":"message","n":%d,"text":"%s"}`, i, crashText(rng, 2500)))
			}
			kept, synced := crashAt(t, fsys, 1, func() { crashAppend(t, s, "a", batch...) })
			whole := slices.Clone(want)
			for i, p := range batch {
				whole = append(whole, storedLine(uint64(len(want)+i+1), []byte(p)))
			}
			tail := "/store/sessions/a" + tailSuffix
			for lost := int64(0); lost < 3; lost++ {
				img := mixPages(t, kept, synced, tail, func(p int64) bool { return p == lost })
				got, err := crashRead(crashStore(t, img, "/store"), "a")
				if err != nil || !(slices.Equal(got, want) || slices.Equal(got, whole)) {
					t.Errorf("page %d lost: %d records (%v); want %d or %d", lost, len(got), err, len(want), len(whole))
				}
			}
		})
	}
}

// TestCrashDeleteHalfway: Delete removed the .zst (without which the session does not
// exist), the tail and the snapshot, then synced the directory once. A file system that
// does not keep directory changes in order (POSIX promises none before the sync) can lose
// power having removed the tail and not the .zst: the session came back with its sealed
// records only, its latest ones gone, though the Delete never returned.
func TestCrashDeleteHalfway(t *testing.T) {
	fsys := newCrashFS(time.Now)
	s := crashStore(t, fsys, "/store")
	mustCreate(t, s, "a")
	crashAppend(t, s, "a", `{"type":"message","n":1}`)
	if err := s.Update(context.Background(), "a", func(w storage.Writer) error { return w.(*Writer).Seal() }); err != nil {
		t.Fatal(err)
	}
	crashAppend(t, s, "a", `{"type":"message","n":2}`)
	want, err := crashRead(s, "a")
	if err != nil || len(want) != 2 {
		t.Fatalf("%q, %v", want, err)
	}
	var imgs []*crashFS
	fsys.onOp = func(int) {
		for seed := range uint64(16) {
			imgs = append(imgs, fsys.image(rand.New(rand.NewPCG(seed, 9)), crashTornAny))
		}
	}
	if err := s.Delete(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	fsys.onOp = nil
	for i, img := range imgs {
		got, err := crashRead(crashStore(t, img, "/store"), "a")
		if !(errors.Is(err, storage.ErrNotFound) || (err == nil && slices.Equal(got, want))) {
			t.Errorf("image %d (operation %d of the delete): %q, %v; want the session whole or gone", i, i/16+1, got, err)
		}
	}
}
