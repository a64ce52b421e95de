package transcript

import (
	"os"
	"path/filepath"
	"testing"
)

// corpusDir holds the shared real transcripts; tests using it skip when it is absent.
const corpusDir = "../../shared/corpus"

// BenchmarkParse measures a full parse of each corpus transcript (fixtures when the corpus is
// absent).
func BenchmarkParse(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(f), func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				if _, _, err := ParseFile(f, FormatAuto); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
