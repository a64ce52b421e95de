package transcript

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionmem/sessionmem/storage/local"

	"github.com/sessionmem/sessionmem/memory"

	"github.com/sessionmem/sessionmem/internal/testpaths"
)

// corpusDir holds the shared corpus of full transcripts ("" when absent: tests using it skip).
var corpusDir = testpaths.CorpusDir()

// BenchmarkParse measures a full parse of each corpus transcript (fixtures when the corpus is
// absent).
func BenchmarkParse(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join("..", "testdata", "transcripts", "*.jsonl"))
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

// BenchmarkImportFile measures a first import (parse and memory.Import into a fresh store) of
// each corpus transcript, or of the fixtures when the corpus is absent.
func BenchmarkImportFile(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join("..", "testdata", "transcripts", "*.jsonl"))
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(f), func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				b.StopTimer()
				store, err := local.Open(b.TempDir(), local.Options{Summarize: memory.Summarize})
				if err != nil {
					b.Fatal(err)
				}
				im := &Importer{Svc: memory.New(store, memory.Options{})}
				b.StartTimer()
				if _, err := im.ImportFile(b.Context(), f, FormatAuto); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				store.Close()
				b.StartTimer()
			}
		})
	}
}
