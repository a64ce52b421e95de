package memory_test

import (
	"encoding/json"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/transcript/transcripttest"
)

// TestMessageTextScanCorpus: on the transcripts' messages the one-pass reader of a message's
// text gives messageText's text, and reads them all itself.
func TestMessageTextScanCorpus(t *testing.T) {
	n, read := 0, 0
	for _, tr := range append(transcripttest.Corpus(t), transcripttest.Excerpts(t)...) {
		for _, m := range tr.Messages {
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			n++
			scan, ok, want := memory.MessageTextBoth(string(b))
			if !ok {
				continue
			}
			read++
			if scan != want {
				t.Fatalf("message %s:\nscan  %q\ngjson %q", b, scan, want)
			}
		}
	}
	if n == 0 || read != n {
		t.Fatalf("the scan read %d of %d messages", read, n)
	}
	t.Logf("%d messages", n)
}

// BenchmarkMessageText: a corpus message's text as Docs reads it, by the one-pass reader
// and by gjson (messageText).
func BenchmarkMessageText(b *testing.B) {
	var raws []string
	var total int64
	for _, m := range transcripttest.Sized(b, 2000, 512, 16384) {
		raw, _ := json.Marshal(m)
		raws = append(raws, string(raw))
		total += int64(len(raw))
	}
	for _, scan := range []bool{true, false} {
		b.Run(map[bool]string{true: "scan", false: "gjson"}[scan], func(b *testing.B) {
			b.SetBytes(total)
			for b.Loop() {
				for _, raw := range raws {
					if scan {
						memory.MessageTextScan(raw)
					} else {
						memory.MessageTextGJSON(raw)
					}
				}
			}
		})
	}
}
