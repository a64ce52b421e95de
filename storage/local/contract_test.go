package local

import (
	"testing"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/storetest"
)

// TestContract runs the backend contract suite against the local store.
func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		New: func(t *testing.T) string { return t.TempDir() },
		Open: func(t *testing.T, dir string) storage.Store {
			s, err := Open(dir, Options{Docs: storetest.Docs})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}
