package local

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// crashFixture holds the bytes of one session at interesting moments:
// z0/t0 before the last seal (t0 holds the lines being sealed), z1 after it, t1 the tail after
// more appends. The tails are cut where their data ends (the padding after it left out:
// the shapes built from them are padded tails without padding, as after a trim), and t1Pad
// is t1 as written, padding and all. want are all acknowledged lines (seq 1..len).
type crashFixture struct {
	z0, z1, t0, t1 []byte
	t1Pad          []byte
	hdrEnd         int
	tailHdr        int
	nSealed0       int // records in z0
	nSealed1       int // records in z1
	want           []string
}

func buildCrashFixture(t testing.TB) crashFixture {
	t.Helper()
	payloads := shortest(testLines(t), 29) // small files keep the every-offset loops fast
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{firstInTail: true, SealRecords: 1000, SealBytes: 1 << 30})
	mustCreate(t, s, "c")
	zp, tp := filepath.Join(dir, "sessions", "c.zst"), filepath.Join(dir, "sessions", "c.tail.jsonl")
	var fx crashFixture
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	hdr := read(zp)
	fx.hdrEnd = len(hdr)
	fx.tailHdr = len(encodeTailHeader("c")) // Create writes no tail: the first append does
	fx.want = append(fx.want, appendBatches(t, s, "c", [][]storage.Record{recordsOf(payloads[0:5]), recordsOf(payloads[5:12])})...)
	seal := func() {
		if err := s.updateW(context.Background(), "c", func(w *Writer) error { return w.Seal() }); err != nil {
			t.Fatal(err)
		}
	}
	seal()
	fx.want = append(fx.want, appendBatches(t, s, "c", [][]storage.Record{recordsOf(payloads[12:14]), recordsOf(payloads[14:22])})...)
	fx.nSealed0 = 12
	fx.z0, fx.t0 = read(zp), bytes.TrimRight(read(tp), "\x00")
	seal()
	fx.z1 = read(zp)
	fx.nSealed1 = 22
	fx.want = append(fx.want, appendBatches(t, s, "c", [][]storage.Record{recordsOf(payloads[22:23]), recordsOf(payloads[23:29])})...)
	fx.t1Pad = read(tp)
	fx.t1 = bytes.TrimRight(fx.t1Pad, "\x00")
	if len(fx.t1Pad) == len(fx.t1) {
		t.Fatal("the tail is not padded")
	}
	return fx
}

// shortest returns the n shortest payloads in their original order.
func shortest(p [][]byte, n int) [][]byte {
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return len(p[idx[a]]) < len(p[idx[b]]) })
	idx = idx[:n]
	sort.Ints(idx)
	out := make([][]byte, n)
	for i, j := range idx {
		out[i] = p[j]
	}
	return out
}

// completeBatches counts the records of the batches whose last line ends inside tail[:k]:
// what recovery keeps of a tail cut at k (a batch's other lines end with a space, markBatch).
func completeBatches(tail []byte, hdr, k int) int {
	n, kept := 0, 0
	for i := hdr; i < k; i++ {
		if tail[i] == '\n' {
			n++
			if tail[i-1] != ' ' {
				kept = n
			}
		}
	}
	return kept
}

// completeLines counts the records whose line ends inside tail[:k].
func completeLines(tail []byte, hdr, k int) int {
	n := 0
	for i := hdr; i < k; i++ {
		if tail[i] == '\n' {
			n++
		}
	}
	return n
}

// checkSession installs zst/tail bytes as session "c" of s and checks what a reader and then a
// writer (which repairs) return: always an exact prefix of fx.want, at least wantAtLeast long
// (the acknowledged records that must survive). wantErr: the open must fail with it instead.
func checkSession(t *testing.T, s *Store, fx crashFixture, zst, tail []byte, wantAtLeast int, wantErr error) {
	t.Helper()
	dir := s.Dir()
	s.dropState("c")
	if err := os.WriteFile(filepath.Join(dir, "sessions", "c.zst"), zst, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessions", "c.tail.jsonl"), tail, 0o600); err != nil {
		t.Fatal(err)
	}
	checkPrefix := func(who string, got []string) {
		t.Helper()
		if len(got) > len(fx.want) {
			t.Fatalf("%s: %d records, more than the %d written", who, len(got), len(fx.want))
		}
		for i := range got {
			if got[i] != fx.want[i] {
				t.Fatalf("%s: record %d garbled: %.100s", who, i+1, got[i])
			}
		}
		if wantErr == nil && len(got) < wantAtLeast {
			t.Fatalf("%s: %d records, want at least %d (acknowledged)", who, len(got), wantAtLeast)
		}
	}
	got, err := readAll(t, s, "c", 1)
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("reader: err %v, want %v", err, wantErr)
		}
	} else if err != nil {
		t.Fatalf("reader: %v", err)
	}
	checkPrefix("reader", got)
	got, err = readAllWriter(s, "c")
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("writer: err %v, want %v", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	checkPrefix("writer", got)
	// After repair a reader from scratch sees the same, and is not cut further (checked on a
	// sample of offsets: it is the slowest step).
	if (len(zst)+len(tail))%7 != 0 {
		return
	}
	s.dropState("c")
	again, err := readAll(t, s, "c", 1)
	if err != nil || len(again) != len(got) {
		t.Fatalf("after repair: %d records (%v), writer saw %d", len(again), err, len(got))
	}
}

// offsets returns 0..n, or under the race detector every 7th of them plus the given ones (the
// boundaries where the expected outcome changes) and their neighbours.
func offsets(n int, special ...int) []int {
	if !raceEnabled {
		out := make([]int, n+1)
		for i := range out {
			out[i] = i
		}
		return out
	}
	set := map[int]bool{0: true, n: true}
	for k := 0; k <= n; k += 7 {
		set[k] = true
	}
	for _, k := range special {
		for _, d := range []int{-1, 0, 1} {
			if k+d >= 0 && k+d <= n {
				set[k+d] = true
			}
		}
	}
	out := make([]int, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func TestRecoveryTruncateEveryOffset(t *testing.T) {
	skipUnderWine(t, "recovery of a file cut at every offset is the same on every system; thousands of cuts")
	fx := buildCrashFixture(t)
	s := mustOpen(t, memTempDir(t), Options{})
	mustCreate(t, s, "c")
	t.Run("zst cut during seal, tail not yet truncated", func(t *testing.T) {
		for _, k := range offsets(len(fx.z1), fx.hdrEnd, len(fx.z0)) {
			var wantErr error
			want := 0
			switch {
			case k < len(fx.z0):
				// The header or the first seal, durable since before the tail's lines were
				// written: no crash cuts it, so it is damage, not something to cut.
				wantErr = storage.ErrCorrupt
			default:
				want = fx.nSealed1 // the sealed lines are still in the tail
			}
			checkSession(t, s, fx, fx.z1[:k], fx.t0, want, wantErr)
			if t.Failed() {
				t.Fatalf("at zst offset %d of %d", k, len(fx.z1))
			}
		}
	})
	t.Run("tail cut", func(t *testing.T) {
		for _, k := range offsets(len(fx.t1), fx.tailHdr) {
			want := fx.nSealed1
			if k >= fx.tailHdr {
				want += completeBatches(fx.t1, fx.tailHdr, k) // an Append is atomic
			}
			checkSession(t, s, fx, fx.z1, fx.t1[:k], want, nil)
			if t.Failed() {
				t.Fatalf("at tail offset %d of %d", k, len(fx.t1))
			}
		}
	})
	t.Run("append after repair continues the sequence", func(t *testing.T) {
		checkSession(t, s, fx, fx.z1[:len(fx.z1)-3], fx.t0[:len(fx.t0)-5], 0, nil)
		var last uint64
		err := s.updateW(t.Context(), "c", func(w *Writer) error {
			last = w.LastSeq()
			out, err := w.Append([]storage.Record{{Data: []byte(`{"n":1}`)}}, storage.Meta{})
			if err == nil && out[0].Seq != last+1 {
				t.Errorf("seq %d after %d", out[0].Seq, last)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAllWriter(s, "c")
		if err != nil || uint64(len(got)) != last+1 {
			t.Fatalf("%d records, %v", len(got), err)
		}
	})
}

func TestRecoveryBitFlips(t *testing.T) {
	fx := buildCrashFixture(t)
	s := mustOpen(t, memTempDir(t), Options{})
	mustCreate(t, s, "c")
	t.Run("every byte of the records", func(t *testing.T) {
		for _, i := range offsets(len(fx.z1)-1, fx.hdrEnd, len(fx.z0)) {
			if i < fx.hdrEnd {
				continue
			}
			z := append([]byte(nil), fx.z1...)
			z[i] ^= 1 << (i % 8)
			// No acknowledged-count promise for damaged data, only: never garbled.
			checkSessionLenient(t, s, fx, z, fx.t1, -1)
			if t.Failed() {
				t.Fatalf("flip at %d", i)
			}
		}
	})
	t.Run("tail bytes", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for range 300 {
			tl := append([]byte(nil), fx.t1...)
			i := fx.tailHdr + rng.IntN(len(tl)-fx.tailHdr)
			tl[i] ^= 1 << rng.IntN(8)
			// Plain JSONL has no checksum: a flip inside a string of the hit line can
			// go unnoticed, but it must not spread to other records.
			hit := fx.nSealed1 + completeLines(fx.t1, fx.tailHdr, i)
			checkSessionLenient(t, s, fx, fx.z1, tl, hit)
			if t.Failed() {
				t.Fatalf("flip at %d", i)
			}
		}
	})
}

// checkSessionLenient accepts ErrCorrupt or any exact prefix (record index mayDiffer may differ
// but must still be valid JSON carrying its seq).
func checkSessionLenient(t *testing.T, s *Store, fx crashFixture, zst, tail []byte, mayDiffer int) {
	t.Helper()
	s.dropState("c")
	os.WriteFile(filepath.Join(s.Dir(), "sessions", "c.zst"), zst, 0o600)
	os.WriteFile(filepath.Join(s.Dir(), "sessions", "c.tail.jsonl"), tail, 0o600)
	check := func(who string, got []string, err error) {
		if err != nil && !errors.Is(err, storage.ErrCorrupt) {
			t.Fatalf("%s: unexpected error %v", who, err)
		}
		for i := range got {
			if seq, ok := storage.RecordSeq([]byte(got[i])); !ok || seq != uint64(i+1) || !json.Valid([]byte(got[i])) {
				t.Fatalf("%s: record %d is not a record: %.100s", who, i+1, got[i])
			}
			if i == mayDiffer {
				continue
			}
			if i >= len(fx.want) || got[i] != fx.want[i] {
				t.Fatalf("%s: record %d garbled: %.100s", who, i+1, got[i])
			}
		}
	}
	got, err := readAll(t, s, "c", 1)
	check("reader", got, err)
	got, err = readAllWriter(s, "c")
	check("writer", got, err)
}

func TestRecoveryTrailingGarbage(t *testing.T) {
	fx := buildCrashFixture(t)
	rnd := make([]byte, 64)
	for i := range rnd {
		rnd[i] = byte(i*37 + 11)
	}
	partialHeader := fx.z1[len(fx.z0) : len(fx.z0)+20]
	all := fx.nSealed1 + completeLines(fx.t1, fx.tailHdr, len(fx.t1))
	// A power loss can leave a later page of an unacknowledged in-place append on disk
	// without the page before it: zeros, then a stray piece of a record.
	stray := append(make([]byte, 4096), []byte(`{"seq":30,"type":"message","a":1}`+"\n")...)
	padding := fx.t1Pad[len(fx.t1):]
	strayInPadding := append([]byte(nil), padding...)
	copy(strayInPadding[len(strayInPadding)-100:], `{"seq":31,"a":1}`+"\n")
	// An unpadded (version 1) tail: zeros after its data are torn, as they always were.
	v1 := func(tail []byte) []byte {
		b := append(append([]byte(nil), fx.t1...), tail...)
		copy(b, `{"v":1,`)
		return b
	}
	tests := []struct {
		name      string
		zst, tail []byte
		whole     []byte // the tail file instead of fx.t1 + tail
		keep      int64  // the tail's size after a writer's open, if not len(fx.t1): padding kept
	}{
		{"zst 1 zero", []byte{0}, nil, nil, 0},
		{"zst 4 zeros", make([]byte, 4), nil, nil, 0},
		{"zst 4096 zeros", make([]byte, 4096), nil, nil, 0},
		{"zst 64 random", rnd, nil, nil, 0},
		{"zst partial record header", partialHeader, nil, nil, 0},
		{"zst whole record header, no frame", fx.z1[len(fx.z0) : len(fx.z0)+32], nil, nil, 0},
		{"tail zeros: padding, kept", nil, make([]byte, 100), nil, int64(len(fx.t1) + 100)},
		{"tail padded as written, kept", nil, padding, nil, int64(len(fx.t1Pad))},
		{"tail zeros then a stray record", nil, stray, nil, 0},
		{"tail padding with a stray record in it", nil, strayInPadding, nil, 0},
		{"tail garbage line", nil, []byte("garbage\n"), nil, 0},
		{"tail random", nil, rnd, nil, 0},
		{"tail duplicate seq", nil, []byte(`{"seq":3,"a":1}` + "\n"), nil, 0},
		{"tail skipped seq", nil, []byte(`{"seq":99,"a":1}` + "\n"), nil, 0},
		{"version 1 tail, zeros", nil, nil, v1(make([]byte, 100)), 0},
		{"version 1 tail, intact", nil, nil, v1(nil), 0},
	}
	s := mustOpen(t, memTempDir(t), Options{})
	mustCreate(t, s, "c")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z := append(append([]byte(nil), fx.z1...), tt.zst...)
			tl := append(append([]byte(nil), fx.t1...), tt.tail...)
			if tt.whole != nil {
				tl = tt.whole
			}
			checkSession(t, s, fx, z, tl, all, nil)
			fi, _ := os.Stat(filepath.Join(s.Dir(), "sessions", "c.zst"))
			if fi.Size() != int64(len(fx.z1)) {
				t.Fatalf("zst not cut back: %d, want %d", fi.Size(), len(fx.z1))
			}
			want := cmp.Or(tt.keep, int64(len(fx.t1)))
			fi, _ = os.Stat(filepath.Join(s.Dir(), "sessions", "c.tail.jsonl"))
			if fi.Size() != want {
				t.Fatalf("tail size after a writer's open: %d, want %d", fi.Size(), want)
			}
		})
	}
	t.Run("damaged record before intact ones is refused, not cut", func(t *testing.T) {
		z := append([]byte(nil), fx.z1...)
		z[fx.hdrEnd+1] ^= 0xff // the first record's magic; the second record is intact
		s.dropState("c")
		os.WriteFile(filepath.Join(s.Dir(), "sessions", "c.zst"), z, 0o600)
		os.WriteFile(filepath.Join(s.Dir(), "sessions", "c.tail.jsonl"), fx.t1, 0o600)
		if _, err := readAll(t, s, "c", 1); !errors.Is(err, storage.ErrCorrupt) {
			t.Fatalf("reader = %v, want storage.ErrCorrupt", err)
		}
		if _, err := readAllWriter(s, "c"); !errors.Is(err, storage.ErrCorrupt) {
			t.Fatalf("writer open = %v, want storage.ErrCorrupt", err)
		}
		if fi, _ := os.Stat(filepath.Join(s.Dir(), "sessions", "c.zst")); fi.Size() != int64(len(z)) {
			t.Fatal("damaged file was cut")
		}
	})
}

// FuzzRecordReader feeds arbitrary record and tail bytes after valid headers: reading must
// never panic, and whatever comes back must be valid records in sequence.
func FuzzRecordReader(f *testing.F) {
	fx := buildCrashFixture(f)
	f.Add(fx.z1[fx.hdrEnd:], fx.t1[fx.tailHdr:])
	f.Add(fx.z0[fx.hdrEnd:], fx.t0[fx.tailHdr:])
	f.Add(fx.z1[fx.hdrEnd:len(fx.z1)-7], fx.t1[fx.tailHdr:len(fx.t1)-9])
	f.Add([]byte{}, []byte(`{"seq":1,"a":1}`+"\n"+`{"seq":2}`+"\n"))
	f.Add(make([]byte, 40), []byte("\n\n"))
	s, err := Open(memTempDir(f), Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(context.Background(), storage.Header{ID: "c", WorkingDir: "/w"}, storage.Meta{}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, recs, tail []byte) {
		z := append(append([]byte(nil), fx.z1[:fx.hdrEnd]...), recs...)
		tl := append(append([]byte(nil), fx.t1[:fx.tailHdr]...), tail...)
		s.dropState("c")
		os.WriteFile(filepath.Join(s.Dir(), "sessions", "c.zst"), z, 0o600)
		os.WriteFile(filepath.Join(s.Dir(), "sessions", "c.tail.jsonl"), tl, 0o600)
		check := func(open func(context.Context, string, func(*Reader) error) error) int {
			n := 0
			err := open(context.Background(), "c", func(r *Reader) error {
				for rec, err := range r.Records(1) {
					if err != nil {
						if !errors.Is(err, storage.ErrCorrupt) {
							t.Fatalf("unexpected error %v", err)
						}
						return nil
					}
					n++
					if rec.Seq != uint64(n) {
						t.Fatalf("seq %d at position %d", rec.Seq, n)
					}
					if got, ok := storage.RecordSeq(rec.Data); !ok || got != rec.Seq {
						t.Fatalf("record %d does not carry its seq: %.80s", n, rec.Data)
					}
				}
				if r.LastSeq() < uint64(n) {
					t.Fatalf("LastSeq %d < %d records", r.LastSeq(), n)
				}
				return nil
			})
			if err != nil && !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("open: %v", err)
			}
			return n
		}
		check(s.viewR)
		check(func(ctx context.Context, id string, fn func(*Reader) error) error {
			return s.updateW(ctx, id, func(w *Writer) error { return fn(&w.Reader) })
		})
	})
}

// A last record that is whole and continues the sequence but fails its checksum was durable
// and damaged later: a writer must not cut it (that would lose acknowledged records and the
// tail lines after them); a torn one is cut.
func TestWriterKeepsDamagedLastRecord(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	mustCreate(t, s, "d")
	var recs []storage.Record
	for i := range 20 {
		recs = append(recs, storage.Record{Kind: "message", Data: []byte(fmt.Sprintf(`{"n":%d,"text":"some words here"}`, i))})
	}
	appendBatches(t, s, "d", [][]storage.Record{recs[:10]})
	if err := s.updateW(t.Context(), "d", func(w *Writer) error { return w.Seal() }); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, s, "d", [][]storage.Record{recs[10:]}) // stays in the tail
	s.Close()
	zp := filepath.Join(dir, "sessions", "d.zst")
	z, _ := os.ReadFile(zp)
	damaged := append([]byte(nil), z...)
	damaged[len(damaged)-5] ^= 0x10 // inside the last (only) frame's body
	os.WriteFile(zp, damaged, 0o600)
	s2 := mustOpen(t, dir, Options{})
	err := s2.updateW(t.Context(), "d", func(w *Writer) error { return nil })
	if !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("Update on a damaged last record: %v, want storage.ErrCorrupt", err)
	}
	if got, _ := os.ReadFile(zp); len(got) != len(damaged) {
		t.Fatalf("damaged record was cut: %d -> %d bytes", len(damaged), len(got))
	}
	s2.Close()
	// Cut short instead: the tail does not hold the record's records (they were sealed
	// before the tail's lines were written), so no crash left it either. It stays, and
	// readers report it instead of reading a shorter session.
	cut := z[:len(z)-7]
	os.WriteFile(zp, cut, 0o600)
	s3 := mustOpen(t, dir, Options{})
	if _, err := readAll(t, s3, "d", 1); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("reading a last record cut short: %v, want storage.ErrCorrupt", err)
	}
	err = s3.updateW(t.Context(), "d", func(w *Writer) error { return nil })
	if !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("Update on a last record cut short: %v, want storage.ErrCorrupt", err)
	}
	if got, _ := os.ReadFile(zp); len(got) != len(cut) {
		t.Fatalf("damaged record was cut: %d -> %d bytes", len(cut), len(got))
	}
}
