package ftsindex

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestDocsRoundTrip: a segment's attributes decode to what was encoded, entry ids included
// (empty, ASCII, long), and stay in memory at about the bytes they take.
func TestDocsRoundTrip(t *testing.T) {
	var d segDocs
	entries := []string{"", "0123abcd", "a-client-chosen-entry-id-of-some-length", "x"}
	for i := range 1000 {
		d.add(int64(10+i), int64(i%7), uint64(i+1), int64(1_700_000_000+i), "message", []string{"user", "assistant"}[i%2], entries[i%len(entries)], uint32(i))
	}
	got, err := decodeDocs(d.encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.len() != d.len() {
		t.Fatalf("%d docs decoded, want %d", got.len(), d.len())
	}
	for i := range d.len() {
		if got.entry(i) != entries[i%len(entries)] || got.ids[i] != d.ids[i] || got.seqs[i] != d.seqs[i] || got.lens[i] != d.lens[i] {
			t.Fatalf("doc %d: entry %q id %d seq %d len %d", i, got.entry(i), got.ids[i], got.seqs[i], got.lens[i])
		}
	}
	if cap(got.entryIDs) > len(got.entryIDs)+len(got.entryIDs)/8 {
		t.Fatalf("entry ids take %d bytes of capacity for %d", cap(got.entryIDs), len(got.entryIDs))
	}
}

// TestDocsPack: a segment's attributes as memory writes them (random 8-hex-digit entry ids,
// saves' nanosecond times) are stored compressed. They repeat few runs of four bytes, and
// the encoder used to store such a blob as it was, about 17 bytes a doc instead of 12.
func TestDocsPack(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{300, 1320, 5000} {
		var d segDocs
		tm := int64(1_795_848_918_575_456_218)
		for i := range n {
			tm += rng.Int64N(30_000_000)
			d.add(int64(i+1), int64(i/5+1), uint64(i%5+2), tm, "message", []string{"user", "assistant", "tool_result"}[rng.IntN(3)], fmt.Sprintf("%08x", rng.Uint32()), uint32(50+rng.IntN(400)))
		}
		raw := d.encode()
		packed := pack(raw)
		t.Logf("%d docs: %d bytes, %d packed", n, len(raw), len(packed))
		if packed[0] != blobZstd || 20*len(packed) > 17*len(raw) {
			t.Fatalf("%d docs: %d bytes packed to %d (kind %d); want zstd, at most 85%%", n, len(raw), len(packed), packed[0])
		}
		back, err := unpack(packed)
		if err != nil || string(back) != string(raw) {
			t.Fatalf("%d docs: unpack: %v", n, err)
		}
	}
}

// BenchmarkDocsHeap reports the heap a decoded segment's attributes take per doc (65,536
// docs with 8-character entry ids, as memory writes them).
func BenchmarkDocsHeap(b *testing.B) {
	var d segDocs
	const n = 1 << 16
	for i := range n {
		d.add(int64(i+1), int64(i/2000), uint64(i%2000+1), int64(1_700_000_000_000_000_000+i*1000), "message", "assistant", fmt.Sprintf("%08x", i*2654435761), 150)
	}
	blob := d.encode()
	var keep []*segDocs
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := decodeDocs(blob)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		keep = append(keep[:0], got)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/doc")
	}
	_ = keep
}
