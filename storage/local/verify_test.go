package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// verifyWant is what a Verify report must say; damaged and newer only say which sentinel.
type verifyWant struct {
	frames, records        int
	tornSealed, tornTail   int64
	stale, dropped         int
	noTail, damaged, newer bool
}

func checkReport(t *testing.T, who string, got fileReport, w verifyWant) {
	t.Helper()
	if (got.Damaged != nil) != w.damaged || w.damaged && !errors.Is(got.Damaged, storage.ErrCorrupt) {
		t.Fatalf("%s: Damaged = %v, want damaged %v", who, got.Damaged, w.damaged)
	}
	if (got.NewerFormat != nil) != w.newer || w.newer && !errors.Is(got.NewerFormat, storage.ErrNewerFormat) {
		t.Fatalf("%s: NewerFormat = %v, want newer %v", who, got.NewerFormat, w.newer)
	}
	if w.damaged || w.newer {
		return
	}
	type counts struct {
		Frames, Records       int
		TornSealed, TornTail  int64
		StaleLines, Dropped   int
		NoTail                bool
		LastSeqMatchesRecords bool
	}
	g := counts{got.Frames, got.Records, got.TornSealed, got.TornTail, got.StaleLines, got.DroppedLines, got.NoTail,
		got.LastSeq == uint64(got.Records)}
	want := counts{w.frames, w.records, w.tornSealed, w.tornTail, w.stale, w.dropped, w.noTail, true}
	if g != want {
		t.Fatalf("%s:\n got %+v\nwant %+v", who, g, want)
	}
}

// TestVerify installs crash and damage shapes as session "c" next to an intact session "good"
// and checks what Verify reports without repair (nothing written), what it cuts with repair
// (exactly the torn bytes, measured on disk), and that the records before survive.
func TestVerify(t *testing.T) {
	fx := buildCrashFixture(t)
	dir := t.TempDir()
	v := &verifyRig{fx: fx, dir: dir, s: mustOpen(t, dir, Options{}),
		zp: filepath.Join(dir, "sessions", "c.zst"), tp: filepath.Join(dir, "sessions", "c.tail.jsonl")}
	mustCreate(t, v.s, "c")
	mustCreate(t, v.s, "good")
	v.goodLines = appendBatches(t, v.s, "good", [][]storage.Record{recordsOf(testLines(t)[:5])})
	for _, tt := range verifyCases(t, fx) {
		t.Run(tt.name, func(t *testing.T) {
			zst := v.installCase(t, tt)
			got := v.checkWithoutRepair(t, tt, zst)
			v.checkRepair(t, tt, zst, got)
			v.checkGoodIntact(t)
		})
	}
}

// verifyCase is a session's files as a crash or damage left them, and what Verify must say.
type verifyCase struct {
	name      string
	zst, tail []byte // nil zst: the fixture's with a newer header; nil tail: no tail file
	want      verifyWant
}

// verifyCases are the crash and damage shapes TestVerify installs, built from fx.
func verifyCases(t *testing.T, fx crashFixture) []verifyCase {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	z0, z1, t0, t1 := fx.z0, fx.z1, fx.t0, fx.t1
	tailHdr := t1[:fx.tailHdr]
	nTail1 := completeLines(t1, fx.tailHdr, len(t1)) // 7 records after the second seal
	nTail0 := completeLines(t0, fx.tailHdr, len(t0)) // 10 records sealed by the second seal
	flip := func(b []byte, at int) []byte {
		c := append([]byte(nil), b...)
		c[at] ^= 0x40
		return c
	}
	// A record whose xxh64 matches its frame but whose zstd content checksum does not: only
	// decoding finds it. The content checksum is the frame's last four bytes.
	badContent := append([]byte(nil), z1...)
	badContent[len(z0)-2] ^= 0x40
	putRecordHeader(badContent[fx.hdrEnd:], badContent[fx.hdrEnd+recordHeaderSize:len(z0)], 12, 1)
	// A record whose lines have the right seqs but are not JSON.
	s0 := mustOpen(t, t.TempDir(), Options{})
	notJSON := s0.encSmall.EncodeAll([]byte("{\"seq\":1,broken\n"), make([]byte, recordHeaderSize))
	putRecordHeader(notJSON, notJSON[recordHeaderSize:], 1, 1)
	halfSeal := z1[len(z0) : len(z0)+(len(z1)-len(z0))/2]
	zeroedSeal := cat(z0, make([]byte, len(z1)-len(z0)))
	garbage := []byte("\x00\x00\x00\x00 not a record \xff\xfe")
	torn := []byte(`{"seq":30,"type":"message","content":"half a li`)
	strayPad := append([]byte(nil), fx.t1Pad...)
	copy(strayPad[len(strayPad)-50:], `{"seq":31,"a":1}`+"\n") // a power loss's later page
	after := []byte("garbage\n" + `{"seq":30,"a":1}` + "\n" + `{"seq":31,"a":2}` + "\n")
	return []verifyCase{
		{"intact, sealed twice, with a tail", z1, t1, verifyWant{frames: 2, records: 29}},
		{"intact, nothing sealed", z0[:fx.hdrEnd], tailHdr, verifyWant{}},
		{"intact, padded tail", z1, fx.t1Pad, verifyWant{frames: 2, records: 29}},
		{"intact, padding only", z1, cat(tailHdr, make([]byte, 4096)), verifyWant{frames: 2, records: 22}},
		{"stray record in the padding", z1, strayPad, verifyWant{frames: 2, records: 29,
			tornTail: int64(len(strayPad) - len(t1)), dropped: 1}},
		{"torn last tail line", z1, cat(t1, torn), verifyWant{frames: 2, records: 29, tornTail: int64(len(torn))}},
		// Complete saves after a bad line: a crash tears only the last save, so this is damage
		// (cutting would lose the saves).
		{"invalid tail line and saves after it", z1, cat(t1, after), verifyWant{damaged: true}},
		{"tail lines already sealed", z1, t0, verifyWant{frames: 2, records: 22,
			tornTail: int64(len(t0) - fx.tailHdr), stale: nTail0}},
		{"sealed lines then new ones", z1, cat(t0, t1[fx.tailHdr:]), verifyWant{frames: 2, records: 22 + nTail1,
			stale: nTail0}},
		{"garbage after the last record", cat(z1, garbage), t1, verifyWant{frames: 2, records: 29,
			tornSealed: int64(len(garbage))}},
		{"half-written seal", cat(z0, halfSeal), t0, verifyWant{frames: 1, records: 22,
			tornSealed: int64(len(halfSeal))}},
		{"seal written as zeros", zeroedSeal, t0, verifyWant{frames: 1, records: 22,
			tornSealed: int64(len(z1) - len(z0))}},
		{"torn at both ends", cat(z0, halfSeal), cat(t0, torn[:9]), verifyWant{frames: 1, records: 22,
			tornSealed: int64(len(halfSeal)), tornTail: 9}},
		// A session at rest has no tail file (notail.go): nothing is torn.
		{"no tail file", z1, nil, verifyWant{frames: 2, records: 22}},
		{"tail without a complete header line", z1, tailHdr[:5], verifyWant{frames: 2, records: 22,
			noTail: true, tornTail: 5}},
		{"bit flip in the first frame", flip(z1, fx.hdrEnd+recordHeaderSize+40), t1, verifyWant{damaged: true}},
		{"bit flip in the first record header", flip(z1, fx.hdrEnd+17), t1, verifyWant{damaged: true}},
		{"frame checksum right, content checksum wrong", badContent, t1, verifyWant{damaged: true}},
		{"sealed line is not JSON", cat(z0[:fx.hdrEnd], notJSON), tailHdr, verifyWant{damaged: true}},
		{"bit flip in the last frame, tail moved on", flip(z1, len(z0)+recordHeaderSize+40), t1, verifyWant{damaged: true}},
		{"bit flip in the last frame, tail empty", flip(z1, len(z0)+recordHeaderSize+40), tailHdr, verifyWant{damaged: true}},
		{"half-written seal, its records not in the tail", cat(z0, halfSeal), tailHdr, verifyWant{damaged: true}},
		{"damaged header frame", flip(z1, 12), t1, verifyWant{damaged: true}},
		{"damaged tail header", z1, flip(t1, 3), verifyWant{damaged: true}},
		{"newer session header", nil, t1, verifyWant{newer: true}},
		{"newer tail", z1, cat([]byte("{\"v\":9,\"tail\":\"c\"}\n"), t1[fx.tailHdr:]), verifyWant{newer: true}},
	}
}

// verifyRig is TestVerify's store: session "c" takes each case's files, "good" stays intact.
type verifyRig struct {
	fx        crashFixture
	dir       string
	s         *Store
	zp, tp    string // c's files
	goodLines []string
}

// install writes c's files (nil tail: none), dropping what the store cached of c.
func (v *verifyRig) install(t *testing.T, zst, tail []byte) {
	t.Helper()
	v.s.dropState("c")
	if err := os.WriteFile(v.zp, zst, 0o600); err != nil {
		t.Fatal(err)
	}
	if tail == nil {
		if err := os.Remove(v.tp); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	} else if err := os.WriteFile(v.tp, tail, 0o600); err != nil {
		t.Fatal(err)
	}
}

// read returns the file's bytes, nil if it does not exist.
func (v *verifyRig) read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// installCase installs tt's files and returns the .zst installed.
func (v *verifyRig) installCase(t *testing.T, tt verifyCase) []byte {
	t.Helper()
	zst := tt.zst
	if zst == nil {
		zst = append([]byte(nil), v.fx.z1...)
		v.install(t, zst, tt.tail)
		writeHeader(t, v.dir, "c", `{"v":2,"id":"c"}`)
		zst = v.read(t, v.zp)
	}
	v.install(t, zst, tt.tail)
	return zst
}

// checkWithoutRepair checks Verify's report without repair, and that it wrote nothing.
func (v *verifyRig) checkWithoutRepair(t *testing.T, tt verifyCase, zst []byte) fileReport {
	t.Helper()
	got, err := v.s.verifyFiles(t.Context(), "c", false)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	t.Logf("check: damaged=%v newer=%v", got.Damaged, got.NewerFormat)
	checkReport(t, "check", got, tt.want)
	if got.Repaired {
		t.Fatal("check reports Repaired")
	}
	if !bytes.Equal(v.read(t, v.zp), zst) || !bytes.Equal(v.read(t, v.tp), tt.tail) {
		t.Fatal("Verify without repair changed the files")
	}
	if !tt.want.damaged && !tt.want.newer {
		if got.SealedBytes+got.TornSealed != int64(len(zst)) {
			t.Fatalf("SealedBytes %d + TornSealed %d != file size %d", got.SealedBytes, got.TornSealed, len(zst))
		}
		if !got.NoTail && tt.tail != nil && got.TailBytes+got.TailPadding+got.TornTail != int64(len(tt.tail)) {
			t.Fatalf("TailBytes %d + TailPadding %d + TornTail %d != tail size %d", got.TailBytes, got.TailPadding, got.TornTail, len(tt.tail))
		}
	}
	return got
}

// checkRepair checks what Verify with repair cuts (exactly the torn bytes, measured on disk,
// nothing of a damaged or newer session) and that the records before survive.
func (v *verifyRig) checkRepair(t *testing.T, tt verifyCase, zst []byte, got fileReport) {
	t.Helper()
	rep, err := v.s.verifyFiles(t.Context(), "c", true)
	if err != nil {
		t.Fatalf("Verify(repair): %v", err)
	}
	checkReport(t, "repair", rep, tt.want)
	if tt.want.damaged || tt.want.newer {
		if rep.Repaired {
			t.Fatal("repair reports Repaired on a damaged or newer session")
		}
		if !bytes.Equal(v.read(t, v.zp), zst) || !bytes.Equal(v.read(t, v.tp), tt.tail) {
			t.Fatal("repair changed a damaged or newer session")
		}
	} else {
		if rep.Repaired != got.Torn() {
			t.Fatalf("Repaired = %v, want %v", rep.Repaired, got.Torn())
		}
		if z := v.read(t, v.zp); !bytes.Equal(z, zst[:len(zst)-int(tt.want.tornSealed)]) {
			t.Fatalf("zst after repair: %d bytes, want the first %d of %d", len(z), len(zst)-int(tt.want.tornSealed), len(zst))
		}
		switch tl := v.read(t, v.tp); {
		case tt.want.noTail:
			if !bytes.Equal(tl, encodeTailHeader("c")) {
				t.Fatalf("tail after repair = %q, want a fresh header", tl)
			}
		case !bytes.Equal(tl, tt.tail[:len(tt.tail)-int(tt.want.tornTail)]):
			t.Fatalf("tail after repair: %d bytes, want the first %d of %d", len(tl), len(tt.tail)-int(tt.want.tornTail), len(tt.tail))
		}
		recs, err := readAll(t, v.s, "c", 1)
		if err != nil {
			t.Fatalf("read after repair: %v", err)
		}
		equalLines(t, recs, v.fx.want[:tt.want.records])
		again, err := v.s.verifyFiles(t.Context(), "c", false)
		if err != nil || again.Torn() || again.Damaged != nil || again.Records != tt.want.records {
			t.Fatalf("check after repair: %+v, %v", again, err)
		}
	}
}

// checkGoodIntact checks that a damaged session takes nothing else down.
func (v *verifyRig) checkGoodIntact(t *testing.T) {
	t.Helper()
	g, err := v.s.verifyFiles(t.Context(), "good", true)
	if err != nil || g.Damaged != nil || g.Torn() || g.Records != len(v.goodLines) {
		t.Fatalf("other session: %+v, %v", g, err)
	}
	recs, err := readAll(t, v.s, "good", 1)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, recs, v.goodLines)
}

func TestVerifyErrors(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	mustCreate(t, s, "a")
	tests := []struct {
		name string
		id   string
		ctx  func() context.Context
		want error
	}{
		{"invalid id", "../x", t.Context, storage.ErrInvalidID},
		{"unknown id", "nope", t.Context, storage.ErrNotFound},
		{"cancelled", "a", func() context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx
		}, context.Canceled},
	}
	for _, tt := range tests {
		for _, repair := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s repair=%v", tt.name, repair), func(t *testing.T) {
				if _, err := s.Verify(tt.ctx(), tt.id, repair); !errors.Is(err, tt.want) {
					t.Fatalf("Verify(%q, %v) = %v, want %v", tt.id, repair, err, tt.want)
				}
			})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions", "nope.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Verify of an unknown id left a lock file (%v)", err)
	}
	s.Close()
	if _, err := s.Verify(t.Context(), "a", false); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Verify after Close = %v, want storage.ErrClosed", err)
	}
	if _, err := s.IDs(context.Background()); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("IDs after Close = %v, want storage.ErrClosed", err)
	}
}

// TestIDs lists every session file, including those List skips.
func TestIDs(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	for _, id := range []string{"b", "a", "newer"} {
		mustCreate(t, s, id)
	}
	s.Close()
	writeHeader(t, dir, "newer", `{"v":2,"id":"newer"}`)
	for _, name := range []string{"stray.tail.jsonl", "x.lock", ".tmp.zst.tmp-1", "bad id.zst"} {
		if err := os.WriteFile(filepath.Join(dir, "sessions", name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(dir, "index.jsonl"))
	s = mustOpen(t, dir, Options{})
	l, err := s.List(context.Background(), storage.ListQuery{})
	if err != nil || len(l) != 2 {
		t.Fatalf("List = %+v, %v (want the newer session skipped)", l, err)
	}
	ids, err := s.IDs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids, []string{"a", "b", "newer"}; !equalStrings(got, want) {
		t.Fatalf("IDs = %q, want %q", got, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestVerifyConcurrent runs checks and repairs while another goroutine appends and seals:
// every report must be intact and agree with LastSeq, and no record may be lost.
func TestVerifyConcurrent(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{SealRecords: 5})
	mustCreate(t, s, "c")
	payloads := shortest(testLines(t), 20)
	var wg sync.WaitGroup
	done := make(chan struct{})
	var want []string
	wg.Go(func() {
		defer close(done)
		for i := range 30 {
			err := s.updateW(context.Background(), "c", func(w *Writer) error {
				out, err := w.Append(recordsOf(payloads[i%20:i%20+1]), storage.Meta{})
				for _, r := range out {
					want = append(want, string(r.Data))
				}
				return err
			})
			if err != nil {
				t.Errorf("append: %v", err)
				return
			}
		}
	})
	for _, repair := range []bool{false, true, false} {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				rep, err := s.Verify(context.Background(), "c", repair)
				if err != nil || rep.Damaged() != nil || rep.Torn() || rep.Repaired || rep.LastSeq != uint64(rep.Records) {
					t.Errorf("Verify(repair=%v) = %+v, %v", repair, rep, err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := readAll(t, s, "c", 1)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, got, want)
}
