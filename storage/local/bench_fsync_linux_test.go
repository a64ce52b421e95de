//go:build linux

package local

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkFsyncFloor measures what the disk alone costs a save's ~2.5 KB write, without
// the store: appended and fsynced (what a tail append does), and written over a region
// already filled with zeros and fdatasynced (what a preallocated tail would do: no size
// change, so no journal commit). docs/BENCHMARKS.md compares the save's p50 with these.
//
//	go test -run '^$' -bench FsyncFloor -benchtime 1500x ./storage/local/
func BenchmarkFsyncFloor(b *testing.B) {
	buf := make([]byte, 2500)
	for i := range buf {
		buf[i] = 'a' + byte(i%26)
	}
	run := func(b *testing.B, prezeroed bool) {
		path := filepath.Join(b.TempDir(), "f")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if prezeroed {
			if _, err := f.Write(make([]byte, (b.N+1)*len(buf))); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		ds := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			if _, err := f.WriteAt(buf, int64(i*len(buf))); err != nil {
				b.Fatal(err)
			}
			if prezeroed {
				err = syscall.Fdatasync(int(f.Fd()))
			} else {
				err = f.Sync()
			}
			if err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, "p50-us")
	}
	b.Run("append+fsync", func(b *testing.B) { run(b, false) })
	b.Run("prezeroed+fdatasync", func(b *testing.B) { run(b, true) })
}
